package concourse

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// ProviderOptions configure NewProvider. The zero value is usable.
type ProviderOptions struct {
	// Logger defaults to discard.
	Logger *slog.Logger
	// Now defaults to time.Now (ages, windows).
	Now func() time.Time
	// Dial and LookupHost replace the network for tsa_connectivity.
	Dial       func(ctx context.Context, network, addr string) (net.Conn, error)
	LookupHost func(ctx context.Context, host string) ([]string, error)
	// AbortTimeout bounds how long abort_builds waits for builds to stop
	// (default 60s; the `timeout` argument overrides it).
	AbortTimeout time.Duration
	// AbortPoll overrides the clients' poll interval for abort_builds.
	AbortPoll time.Duration
	// CheckTimeout bounds how long a check build is followed (default 2m).
	CheckTimeout time.Duration
	// MaxItems caps the rows of tables and the entries of long lists in
	// result data (default 200); counts always cover everything.
	MaxItems int
}

// Provider exposes Concourse operations to the engine, one client per
// target. Call.Target picks the client.
type Provider struct {
	targets map[string]*Client
	opts    ProviderOptions
}

var _ opmodel.Provider = (*Provider)(nil)

// NewProvider returns the Concourse provider for the given targets (keyed
// by target name, as in Call.Target).
func NewProvider(targets map[string]*Client, opts ProviderOptions) (*Provider, error) {
	if len(targets) == 0 {
		return nil, fmt.Errorf("concourse provider: no target configured: add one under targets in the config")
	}
	for name, c := range targets {
		if c == nil {
			return nil, fmt.Errorf("concourse provider: target %q has no client", name)
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Dial == nil {
		d := &net.Dialer{}
		opts.Dial = d.DialContext
	}
	if opts.LookupHost == nil {
		opts.LookupHost = net.DefaultResolver.LookupHost
	}
	if opts.AbortTimeout <= 0 {
		opts.AbortTimeout = 60 * time.Second
	}
	if opts.CheckTimeout <= 0 {
		opts.CheckTimeout = 2 * time.Minute
	}
	if opts.MaxItems <= 0 {
		opts.MaxItems = 200
	}
	return &Provider{targets: targets, opts: opts}, nil
}

// Ops implements opmodel.Provider.
func (p *Provider) Ops() []opmodel.Op {
	ops := []opmodel.Op{
		p.opInfo(), p.opTeams(), p.opWorkers(), p.opWorker(), p.opFindWorker(), p.opBuilds(), p.opBuildEventsScan(),
		p.opPipelines(), p.opJobs(), p.opResources(), p.opResourceTypes(), p.opTSAConnectivity(),
		p.opCheckResource(), p.opCheckResourceType(), p.opUnpausePipeline(),
		p.opPruneWorker(), p.opLandWorker(), p.opRetireWorker(), p.opAbortBuilds(),
		p.opPausePipeline(), p.opClearResourceCache(), p.opClearTaskCache(),
	}
	for i := range ops {
		ops[i].TeamRole = teamRoles[ops[i].Name]
		ops[i].Owner = changeOwners[ops[i].Name]
	}
	return ops
}

// client returns the client of the call's target.
func (p *Provider) client(c opmodel.Call) (*Client, error) {
	if c.Target == "" && len(p.targets) == 1 {
		for _, cl := range p.targets {
			return cl, nil
		}
	}
	if cl, ok := p.targets[c.Target]; ok {
		return cl, nil
	}
	names := make([]string, 0, len(p.targets))
	for n := range p.targets {
		names = append(names, n)
	}
	sort.Strings(names)
	if c.Target == "" {
		return nil, fmt.Errorf("no Concourse target given; pass target=<name> (known targets: %s)", strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("unknown Concourse target %q; known targets: %s", c.Target, strings.Join(names, ", "))
}

// arg specs shared by several operations.
var (
	argTeam     = opmodel.ArgSpec{Name: "team", Doc: "team name (default: the target's team)"}
	argPipeline = opmodel.ArgSpec{Name: "pipeline", Doc: "pipeline name", Required: true}
)

// pattern compiles an anchored regular expression argument; empty matches
// everything. Anchoring keeps `pipeline: app` from matching `app-staging`.
func pattern(a opmodel.Args, key string) (*regexp.Regexp, error) {
	s := strings.TrimSpace(a.String(key))
	if s == "" {
		return nil, nil
	}
	re, err := regexp.Compile("^(?:" + s + ")$")
	if err != nil {
		return nil, fmt.Errorf("argument %q: %q is not a regular expression: %v", key, s, err)
	}
	return re, nil
}

func matchRe(re *regexp.Regexp, s string) bool { return re == nil || re.MatchString(s) }

// statuses reads a status list argument, checking each value.
func statuses(a opmodel.Args, key string, def []string) ([]string, error) {
	list := a.Strings(key)
	if len(list) == 0 {
		return def, nil
	}
	for i, s := range list {
		s = strings.ToLower(strings.TrimSpace(s))
		if !contains(BuildStatuses, s) {
			return nil, fmt.Errorf("argument %q: unknown build status %q (use %s)", key, s, strings.Join(BuildStatuses, ", "))
		}
		list[i] = s
	}
	return list, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// window reads since/until arguments given as durations before now.
func (p *Provider) window(a opmodel.Args, defSince time.Duration) (since, until time.Time, err error) {
	now := p.opts.Now()
	d, err := a.Duration("since", defSince)
	if err != nil {
		return since, until, err
	}
	if d > 0 {
		since = now.Add(-d)
	}
	u, err := a.Duration("until", 0)
	if err != nil {
		return since, until, err
	}
	if u > 0 {
		until = now.Add(-u)
	}
	return since, until, nil
}

// age formats a duration like fly: 38d, 3h12m, 41m5s, 12s.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "n/a"
	case d >= 24*time.Hour:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	case d >= time.Hour:
		return fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	case d >= time.Minute:
		return fmt.Sprintf("%dm%ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	return strconv.Itoa(int(d/time.Second)) + "s"
}

func since(now, t time.Time) time.Duration {
	if t.IsZero() {
		return -1
	}
	return now.Sub(t)
}

func seconds(d time.Duration) int64 {
	if d < 0 {
		return 0
	}
	return int64(d / time.Second)
}

// plural returns "1 worker" / "3 workers".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// countsLine renders "3 running, 1 stalled" in the given key order.
func countsLine(counts map[string]int, order []string) string {
	var parts []string
	for _, k := range order {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

// itemResult is one entry of opmodel.Result.Items.
func itemResult(id string, outcome opmodel.ItemOutcome, reason string) opmodel.ItemResult {
	return opmodel.ItemResult{ID: id, Outcome: outcome, Reason: reason}
}

// truncate returns at most n elements and whether it cut.
func truncate[T any](list []T, n int) ([]T, bool) {
	if len(list) <= n {
		return list, false
	}
	return list[:n], true
}

// listOrEmpty keeps nil slices out of result data, so expressions such as
// len(steps.x.result.stalled) see an empty list instead of null.
func listOrEmpty[T any](l []T) []T {
	if l == nil {
		return []T{}
	}
	return l
}
