package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/opmodel"
)

// purgePlan resolves the team and pipeline to the table a purge would touch
// and describes it. It changes nothing (read-only transaction).
func (p *Provider) purgePlan(ctx context.Context, c opmodel.Call) (opmodel.Plan, error) {
	req, err := parsePurgeArgs(c.Args)
	if err != nil {
		return opmodel.Plan{}, err
	}
	d, err := p.db(c.Target)
	if err != nil {
		return opmodel.Plan{}, err
	}
	action := "planning the purge of " + req.describe()
	plan, err := d.purgePlan(ctx, req)
	if err != nil {
		err = classify(ctx, err, action, d.where)
		if errors.Is(err, ErrNotFound) && c.Approved != nil {
			// deleted while the approval was asked: nothing left to purge
			return PurgeFound(opmodel.Plan{Op: OpPurge, Target: c.Target, Summary: "nothing to purge"}, c, err.Error()), nil
		}
		return opmodel.Plan{}, err
	}
	return PurgeFound(plan, c, ""), nil
}

// PurgeFound says, in plan.Found, what a purge's re-check (c.Approved)
// found of the approved table it no longer includes: gone (why, when not
// ""), or no log old enough left (Concourse's build reaper, or someone
// else, deleted them first).
func PurgeFound(plan opmodel.Plan, c opmodel.Call, why string) opmodel.Plan {
	for _, it := range c.Gone(plan) {
		a := it.Attrs
		label := a["team"] + "/" + a["pipeline"]
		if a["scope"] == "team" {
			label = a["team"] + " one-off builds"
		}
		text := fmt.Sprintf("%s (%s): its logs older than %s days were deleted while the approval was asked (Concourse's build reaper or someone else)", it.ID, label, a["days"])
		switch {
		case why != "":
			text = fmt.Sprintf("%s (%s) can no longer be purged: %s", it.ID, label, why)
		case a["mode"] != ModeOlderThan:
			text = fmt.Sprintf("%s (%s) is no longer in the plan", it.ID, label)
		}
		plan.Found = append(plan.Found, opmodel.Found{Kind: it.Kind, ID: it.ID, Text: text, Gone: why != ""})
	}
	return plan
}

func (d *targetDB) purgePlan(ctx context.Context, req purgeRequest) (opmodel.Plan, error) {
	target := d.where.target
	tx, err := d.begin(ctx, pgx.ReadOnly)
	if err != nil {
		return opmodel.Plan{}, err
	}
	defer rollback(tx)

	var inRecovery bool
	if err := tx.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&inRecovery); err != nil {
		return opmodel.Plan{}, err
	}
	if inRecovery {
		return opmodel.Plan{}, newError(ErrReadOnly, nil,
			"cannot purge on %s: %s is a read-only replica; point the DSN at the leader (the pod labelled spilo-role=master)",
			target, d.where.hostPort)
	}
	s, err := resolveScope(ctx, tx, req, target)
	if err != nil {
		return opmodel.Plan{}, err
	}
	table := s.table()
	ident, err := purgeIdent(table)
	if err != nil {
		return opmodel.Plan{}, err
	}
	st, found, err := readStats(ctx, tx, s, ident, d.cfg.StatementTimeout)
	if err != nil {
		return opmodel.Plan{}, err
	}
	if !found {
		return opmodel.Plan{}, newError(ErrNotFound, nil,
			"%s of %s does not exist on %s; Concourse creates it with the pipeline or team, so this database may not be Concourse's",
			table, s.label(), target)
	}
	if err := checkPrivileges(s, st, table, d.where.user); err != nil {
		return opmodel.Plan{}, err
	}

	plan := opmodel.Plan{Op: OpPurge, Target: target}
	notes := []string{}
	if s.mode == ModeOlderThan && st.matched == 0 {
		plan.Summary = fmt.Sprintf("nothing to purge: no build of %s ended more than %s ago without being reaped",
			s.label(), plural(int64(s.days), "day", "days"))
		return plan, nil
	}
	item := opmodel.PlanItem{Kind: PlanItemKind, ID: table, Attrs: s.attrs()}
	switch s.mode {
	case ModeTruncate:
		item.Detail = fmt.Sprintf("~%s rows, %s", human.Count(st.estRows), humanBytes(st.bytes))
		plan.Summary = fmt.Sprintf("truncate %s (%s): ~%s rows, %s",
			table, s.label(), human.Count(st.estRows), humanBytes(st.bytes))
		notes = append(notes,
			fmt.Sprintf("TRUNCATE removes the logs of every build of %s and frees %s on disk at once; %s will be marked reaped so the UI says so.",
				s.label(), humanBytes(st.bytes), plural(st.unreaped, "completed build", "completed builds")),
			fmt.Sprintf("TRUNCATE needs an ACCESS EXCLUSIVE lock: while it waits (at most lock_timeout %s) Concourse's writes to this table wait too.",
				d.cfg.LockTimeout))
	case ModeOlderThan:
		approx := ""
		if st.rowsAreEstimated {
			approx = "~"
		}
		item.Detail = fmt.Sprintf("logs of %s that ended before %s: %s%s rows (table ~%s rows, %s)",
			plural(st.matched, "build", "builds"), st.cutoff.UTC().Format(time.RFC3339), approx,
			human.Count(st.rowsToDelete), human.Count(st.estRows), humanBytes(st.bytes))
		plan.Summary = fmt.Sprintf("delete the logs of %s older than %s from %s (%s): %s%s rows",
			plural(st.matched, "build", "builds"), plural(int64(s.days), "day", "days"), table, s.label(),
			approx, human.Count(st.rowsToDelete))
		notes = append(notes,
			fmt.Sprintf("Deletes in batches of %d builds, one transaction each, and marks them reaped, as Concourse's build reaper does; running builds are never touched.", reapBatch),
			"DELETE does not shrink the table file: the space is reused by new logs after (auto)vacuum. If the disk is full now, mode truncate is what frees space at once.")
		if st.undrained > 0 {
			notes = append(notes, fmt.Sprintf("%s not drained: if concourse-web ships build logs to syslog, those logs were never shipped.",
				plural(st.undrained, "of these builds is", "of these builds are")))
		}
	}
	if st.running > 0 && s.mode == ModeTruncate {
		notes = append(notes, fmt.Sprintf("%s of %s still running: the output logged so far is lost, and anyone watching may see lines repeated (API.md §11.3). Consider waiting, or pausing the pipeline first.",
			plural(st.running, "build", "builds"), s.label()))
	}
	if s.paused {
		notes = append(notes, "The pipeline is paused: Concourse's own log retention does nothing for paused pipelines.")
	}
	plan.Items = []opmodel.PlanItem{item}
	plan.Notes = notes
	return plan, nil
}

// checkPrivileges refuses a plan the database user could not apply.
func checkPrivileges(s purgeScope, st tableStats, table, user string) error {
	switch {
	case s.mode == ModeTruncate && !st.canTruncate:
		return newError(ErrPermission, nil, "user %q may not TRUNCATE %s; use the database user Concourse itself connects as", user, table)
	case s.mode == ModeOlderThan && !st.canDelete:
		return newError(ErrPermission, nil, "user %q may not DELETE from %s; use the database user Concourse itself connects as", user, table)
	case !st.canUpdateBuilds:
		return newError(ErrPermission, nil, "user %q may not UPDATE builds (to mark them reaped); use the database user Concourse itself connects as", user)
	}
	return nil
}
