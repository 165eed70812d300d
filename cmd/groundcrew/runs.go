package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// runsPage is how many runs one read of a listing takes from the store:
// `runs list --all` holds one page at a time, in the CLI and in serve.
const runsPage = 200

// defaultRunsLimit is how many runs `runs list` shows without --limit or --all.
const defaultRunsLimit = 50

// eachRun calls fn with every run q selects, most recent first, reading
// them a page at a time (through serve's admin socket: as one stream),
// so memory stays flat whatever the store holds. q.Limit bounds the total
// (0: all).
func eachRun(ctx context.Context, db storeReader, q runmodel.RunQuery, fn func(*runmodel.Run) error) error {
	if c, ok := db.(*adminClient); ok {
		return c.EachRun(ctx, q, fn)
	}
	return pageRuns(ctx, db, q, fn)
}

// pageRuns reads the runs q selects from a store a page at a time, each
// page its own short read.
func pageRuns(ctx context.Context, db interface {
	ListRuns(ctx context.Context, q runmodel.RunQuery) ([]*runmodel.Run, error)
}, q runmodel.RunQuery, fn func(*runmodel.Run) error) error {
	left := q.Limit
	for {
		page := q
		page.Limit = runsPage
		if left > 0 {
			page.Limit = min(left, runsPage)
		}
		rs, err := db.ListRuns(ctx, page)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if err := fn(r); err != nil {
				return err
			}
		}
		if q.Limit > 0 {
			left -= len(rs)
		}
		if len(rs) < page.Limit || (q.Limit > 0 && left <= 0) {
			return nil
		}
		last := rs[len(rs)-1]
		q.After = runmodel.RunCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// parseSince reads --since: a duration back from now ("24h", "7d") or a
// date or time ("2026-11-30", "2026-11-30T08:00:00Z").
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if v, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(v); err == nil && days > 0 {
			return now.Add(-time.Duration(days) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: write a duration back from now (24h, 7d) or a date (2026-11-30, 2026-11-30T08:00:00Z)", s)
}

var runStates = []runmodel.RunState{runmodel.RunRunning, runmodel.RunAwaitingApproval, runmodel.RunAwaitingManual, runmodel.RunWaiting,
	runmodel.RunSucceeded, runmodel.RunFailed, runmodel.RunCancelled}

// parseStates reads --state: a comma-separated list of states, or active.
func parseStates(s string, q *runmodel.RunQuery) error {
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
		case f == "active":
			q.Active = true
		default:
			found := false
			for _, st := range runStates {
				if string(st) == f {
					q.States, found = append(q.States, st), true
				}
			}
			if !found {
				names := []string{"active"}
				for _, st := range runStates {
					names = append(names, string(st))
				}
				return fmt.Errorf("--state %q: use one or more of %s (comma-separated)", f, strings.Join(names, ", "))
			}
		}
	}
	return nil
}

func newRunsList() *cobra.Command {
	list := &cobra.Command{
		Use:   "list",
		Short: "List runs, most recent first (the last 50; --limit, --all, --since, --state, --runbook, --target)",
		Long: `List runs, most recent first: the last 50, or --limit N, or --all. Narrow with
--since (24h, 7d, 2026-11-30), --state (active, succeeded, failed, cancelled,
running, awaiting_approval, awaiting_manual, waiting; comma-separated),
--runbook and --target. --format json writes a JSON array; with --all it
writes JSON lines (one run per line), streamed: memory stays flat, in this
command and in a running serve, whatever the store holds.`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			_, err := runsListQuery(cmd, time.Now())
			return err
		},
		RunE: withStore(func(cmd *cobra.Command, _ []string, db storeReader) error {
			q, err := runsListQuery(cmd, time.Now())
			if err != nil {
				return err
			}
			format, _ := cmd.Flags().GetString("format")
			all, _ := cmd.Flags().GetBool("all")
			limit := q.Limit
			if !all {
				q.Limit++ // one more, to tell whether there are others
			}
			out := cmd.OutOrStdout()
			n, more := 0, false
			var emit func(*runmodel.Run) error
			var done func() error
			switch {
			case format == "json" && all:
				enc := json.NewEncoder(out)
				emit = func(r *runmodel.Run) error { return enc.Encode(r) }
				done = func() error { return nil }
			case format == "json":
				var rs []*runmodel.Run
				emit = func(r *runmodel.Run) error { rs = append(rs, r); return nil }
				done = func() error {
					if rs == nil {
						rs = []*runmodel.Run{}
					}
					enc := json.NewEncoder(out)
					enc.SetIndent("", "  ")
					return enc.Encode(rs)
				}
			default:
				w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
				fmt.Fprintln(w, "RUN\tRUNBOOK\tTARGET\tBY\tSTATE\tSTARTED")
				rows := 0
				emit = func(r *runmodel.Run) error {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Runbook, r.Target, r.Requester.Display(), r.State.Human(), r.CreatedAt.UTC().Format("2006-01-02 15:04"))
					if rows++; rows%runsPage == 0 {
						return w.Flush() // streamed: columns line up per page
					}
					return nil
				}
				done = w.Flush
			}
			if err := eachRun(cmd.Context(), db, q, func(r *runmodel.Run) error {
				if !all && n == limit {
					more = true
					return nil
				}
				n++
				return emit(r)
			}); err != nil {
				return err
			}
			if err := done(); err != nil {
				return err
			}
			if more {
				fmt.Fprintf(cmd.ErrOrStderr(), "(the %d most recent shown: --limit N or --all for more)\n", limit)
			}
			if n == 0 && format != "json" {
				// An empty table is not an answer: say whether the filters
				// or the store are empty.
				var filters []string
				for _, f := range []string{"since", "state", "runbook", "target"} {
					if fl := cmd.Flags().Lookup(f); fl != nil && fl.Changed {
						filters = append(filters, "--"+f+" "+fl.Value.String())
					}
				}
				if len(filters) > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "(no runs match %s)\n", strings.Join(filters, " "))
				} else {
					fmt.Fprintln(cmd.ErrOrStderr(), "(no runs in the store)")
				}
			}
			return nil
		}),
	}
	list.Flags().String("format", "table", "table or json")
	list.Flags().Int("limit", defaultRunsLimit, "how many runs, most recent first")
	list.Flags().Bool("all", false, "every run (streamed; with --format json: JSON lines)")
	list.Flags().String("since", "", "only runs started since: a duration (24h, 7d) or a date (2026-11-30)")
	list.Flags().String("state", "", "only runs in these states (active, succeeded, failed, …; comma-separated)")
	list.Flags().String("runbook", "", "only runs of this runbook")
	list.Flags().String("target", "", "only runs on this target")
	return list
}

// maxRunsLimit bounds --limit (use --all for everything, streamed).
const maxRunsLimit = 10_000

// runsListQuery is the query the flags of runs list ask for.
func runsListQuery(cmd *cobra.Command, now time.Time) (runmodel.RunQuery, error) {
	var q runmodel.RunQuery
	f := cmd.Flags()
	if format, _ := f.GetString("format"); format != "table" && format != "json" {
		return q, fmt.Errorf("--format %q: use table or json", format)
	}
	all, _ := f.GetBool("all")
	q.Limit, _ = f.GetInt("limit")
	switch {
	case all && f.Changed("limit"):
		return q, fmt.Errorf("--all and --limit: use one of them")
	case all:
		q.Limit = 0
	case q.Limit <= 0 || q.Limit > maxRunsLimit:
		return q, fmt.Errorf("--limit %d: use 1 to %d, or --all (streamed)", q.Limit, maxRunsLimit)
	}
	if s, _ := f.GetString("since"); s != "" {
		t, err := parseSince(s, now)
		if err != nil {
			return q, err
		}
		q.Since = t
	}
	if s, _ := f.GetString("state"); s != "" {
		if err := parseStates(s, &q); err != nil {
			return q, err
		}
	}
	q.Runbook, _ = f.GetString("runbook")
	q.Target, _ = f.GetString("target")
	return q, nil
}

// writeRunLines writes runs as JSON lines as they come (the admin
// socket's stream), then a last line saying how the stream ended.
func writeRunLines(ctx context.Context, w io.Writer, flush func(), db storeReader, q runmodel.RunQuery) {
	enc := json.NewEncoder(w)
	n := 0
	err := pageRuns(ctx, db, q, func(r *runmodel.Run) error {
		if err := enc.Encode(runLine{Run: r}); err != nil {
			return err
		}
		if n++; n%runsPage == 0 {
			flush()
		}
		return nil
	})
	end := runLine{End: true}
	if err != nil {
		end = runLine{Error: err.Error()}
	}
	_ = enc.Encode(end)
	flush()
}

// runLine is one line of the admin socket's stream of runs: a run, or the
// end (End, or Error when the listing failed part way).
type runLine struct {
	Run   *runmodel.Run `json:"run,omitempty"`
	End   bool          `json:"end,omitempty"`
	Error string        `json:"error,omitempty"`
}

// EachRun reads the runs q selects from serve as a stream of JSON lines:
// serve reads the store a page at a time and holds no more.
func (c *adminClient) EachRun(ctx context.Context, q runmodel.RunQuery, fn func(*runmodel.Run) error) error {
	resp, err := c.post(ctx, "runs", adminRequest{Query: q})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var l runLine
		if err := dec.Decode(&l); err != nil {
			return fmt.Errorf("admin socket %s: the list of runs ended early: %w", c.socket, err)
		}
		switch {
		case l.Error != "":
			return fmt.Errorf("listing runs: %s", l.Error)
		case l.End:
			return nil
		case l.Run != nil:
			if err := fn(l.Run); err != nil {
				return err
			}
		}
	}
}
