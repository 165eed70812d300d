package bot

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// offers has one concern: which runbooks a channel is offered — listed,
// suggested, shown as runnable and started there. A channel bound to teams
// is not offered a runbook every change of which it would be refused: one
// that changes only workers when its teams own no worker on its targets
// (a global worker is no team's), or one that changes only things of no
// team. Whose things an operation can change is its opmodel.Op.Owner;
// whether the teams own workers is read live from the targets, within a
// second. A target that cannot be read offers what it might allow: the
// engine still refuses, step by step, what the channel may not change.
type offers struct {
	ops     *opmodel.Registry
	targets func() []string
	log     *slog.Logger
}

// ownedTimeout bounds reading whether a channel's teams own workers (the
// list is an answer to a command; Slack's trigger_id lasts 3 s).
const ownedTimeout = time.Second

// offering is what one channel is offered: every runbook but Hidden.
type offering struct {
	scope policy.Scope
	// hidden: runbook name → why it is not offered (owner kind).
	hidden map[string]opmodel.Owner
	// owners: runbook name → whose things its changes can change.
	owners map[string][]opmodel.Owner
	// workerless are the channel's targets where its teams own no worker.
	workerless []string
}

// Hidden reports whether runbook name is not offered, and why in words
// ("" when it is).
func (o offering) Hidden(name string) (bool, string) {
	k, ok := o.hidden[name]
	if !ok {
		return false, ""
	}
	return true, o.why(k, 1)
}

// why says why runbooks (n of them) changing only things of owner k are
// not offered in the channel.
func (o offering) why(k opmodel.Owner, n int) string {
	s := o.scope
	verb, verbs := "changes", "change"
	if n > 1 {
		verb = verbs
	}
	if k == opmodel.OwnerWorker {
		return fmt.Sprintf("%s only workers, and %s no worker on %s (a global worker is no team's): run %s from a channel bound to every team",
			verb, ownsText(s.Teams), codeOr(o.workerless), map[bool]string{true: "them", false: "it"}[n > 1])
	}
	return fmt.Sprintf("%s only things of no team, and this channel (`channels.%s`) acts on %s: run %s from a channel bound to every team",
		verb, s.Key, s.What(), map[bool]string{true: "them", false: "it"}[n > 1])
}

// Line says in one line what is not listed and why ("" when nothing is
// hidden): "Not offered here: `prune-stalled`, `worker-stalled` change
// only workers, and team `payments` owns no worker on `infra-prd` …".
func (o offering) Line() string {
	if len(o.hidden) == 0 {
		return ""
	}
	by := map[opmodel.Owner][]string{}
	for name, k := range o.hidden {
		by[k] = append(by[k], name)
	}
	var parts []string
	for _, k := range []opmodel.Owner{opmodel.OwnerWorker, opmodel.OwnerNone} {
		names := by[k]
		if len(names) == 0 {
			continue
		}
		sort.Strings(names)
		what := strings.Join(quoteAll(names), ", ")
		if len(names) > 6 {
			what = fmt.Sprintf("%d runbooks (%s, …)", len(names), strings.Join(quoteAll(names[:4]), ", "))
		}
		parts = append(parts, what+" "+o.why(k, len(names)))
	}
	return "🙈 Not offered here: " + strings.Join(parts, "; ") + "."
}

// Offered keeps the names offered in the channel.
func (o offering) Offered(names []string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { _, h := o.hidden[n]; return h })
}

func ownsText(teams []string) string {
	if len(teams) == 1 {
		return "team `" + teams[0] + "` owns"
	}
	return "teams " + strings.Join(quoteAll(teams), ", ") + " own"
}

// codeOr names the targets where the teams own no worker: a few by name.
func codeOr(xs []string) string {
	switch {
	case len(xs) == 0:
		return "its targets"
	case len(xs) > 3:
		return fmt.Sprintf("any of its %d targets", len(xs))
	}
	return strings.Join(quoteAll(xs), ", ")
}

// changeOwners returns whose things rb's changing steps can change; an
// operation that does not say (or is not registered) is "" — offered.
func changeOwners(rb *runbookmodel.Runbook, ops *opmodel.Registry) []opmodel.Owner {
	var out []opmodel.Owner
	for _, s := range rb.Steps {
		if s.Op == "" || s.Kind == runbookmodel.KindWait {
			continue
		}
		op, ok := ops.Get(s.Op)
		var k opmodel.Owner
		switch {
		case !ok:
		case op.Class == opmodel.ClassRead:
			continue
		default:
			k = op.Owner
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// hiddenBy returns why rb is not offered in a channel acting on teams
// whose teams own workers (ownWorkers), or "" when it is offered: when
// every change it makes is of workers the teams do not own or of things
// of no team.
func hiddenBy(owners []opmodel.Owner, ownWorkers bool) opmodel.Owner {
	if len(owners) == 0 {
		return ""
	}
	why := opmodel.OwnerNone
	for _, k := range owners {
		switch k {
		case opmodel.OwnerNone:
		case opmodel.OwnerWorker:
			if ownWorkers {
				return ""
			}
			why = opmodel.OwnerWorker
		default: // a team's, or not said
			return ""
		}
	}
	return why
}

// changesWorkers reports whether rb changes workers (its worker choices
// are then only those the channel may change).
func changesWorkers(rb *runbookmodel.Runbook, ops *opmodel.Registry) bool {
	return slices.Contains(changeOwners(rb, ops), opmodel.OwnerWorker)
}

// of returns what the channel of scope is offered among runbooks. Only a
// channel bound to teams is offered less than every runbook.
func (f *offers) of(ctx context.Context, scope policy.Scope, rbs []*runbookmodel.Runbook) offering {
	o := offering{scope: scope, hidden: map[string]opmodel.Owner{}, owners: map[string][]opmodel.Owner{}}
	if scope.Denied || len(scope.Teams) == 0 {
		return o
	}
	needWorkers := false
	for _, rb := range rbs {
		o.owners[rb.Name] = changeOwners(rb, f.ops)
		needWorkers = needWorkers || hiddenBy(o.owners[rb.Name], false) == opmodel.OwnerWorker
	}
	targets := scope.FilterTargets(f.targets())
	if needWorkers {
		o.workerless = f.workerless(ctx, scope, targets)
	}
	own := len(o.workerless) < len(targets)
	for _, rb := range rbs {
		if k := hiddenBy(o.owners[rb.Name], own); k != "" {
			o.hidden[rb.Name] = k
		}
	}
	return o
}

// workerless returns the targets where the scope's teams own no worker; a
// target that cannot be read in time is not one (they may own some).
func (f *offers) workerless(ctx context.Context, scope policy.Scope, targets []string) []string {
	op, ok := f.ops.Get("concourse.workers")
	if !ok || op.Do == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ownedTimeout)
	defer cancel()
	none := make([]bool, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := op.Do(ctx, opmodel.Call{Target: t, Args: opmodel.Args{"team": scope.CallTeams()}, Teams: scope.CallTeams()})
			if err != nil || res.Table == nil {
				f.log.Info("could not tell whether the channel's teams own workers; their worker runbooks are offered", "target", t, "err", err)
				return
			}
			none[i] = len(res.Table.Rows) == 0
		}()
	}
	wg.Wait()
	var out []string
	for i, t := range targets {
		if none[i] {
			out = append(out, t)
		}
	}
	return out
}
