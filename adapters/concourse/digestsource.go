package concourse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// DigestTables reads a target's database figures for a digest. ok is false
// when the target has no database configured. It lets the digest use the
// PostgreSQL provider without this package importing it.
type DigestTables func(ctx context.Context, target string) (db digest.DBFigures, ok bool, err error)

// ImageFetchFailed is the text an errored build's output shows when its
// task image could not be pulled (the manual's "Image fetching failed").
const ImageFetchFailed = "image fetching failed"

// DigestOptions configure NewDigestSource. The zero value is usable.
type DigestOptions struct {
	// Now defaults to time.Now.
	Now func() time.Time
	// Tables, when set, adds the database figures.
	Tables DigestTables
	// ScanLimit caps how many errored builds (the newest of the window) have
	// their events read for "image fetching failed". Default 200.
	ScanLimit int
	// ScanConcurrency is how many event streams are read at once per
	// collection. Default 4 (the client's own limit is 8 per target).
	ScanConcurrency int
	// ScanTimeout bounds the reading of one build's events. Default 15s.
	ScanTimeout time.Duration
	// PageSize is the number of builds per request. Default 5000: ten
	// requests for 50,000 builds, so latency to the web node adds little.
	PageSize int
	// Top is how many pipelines are listed per ranking. Default 5.
	Top    int
	Logger *slog.Logger
}

// DigestSource implements digest.Source over Concourse clients (one per
// target). Builds are streamed page by page and aggregated as they arrive,
// so memory does not grow with the number of builds in the window: only
// counters per status and per pipeline, and at most ScanLimit build ids
// waiting to be scanned, are kept. Errored builds are scanned for
// ImageFetchFailed while the listing goes on, ScanConcurrency streams at a
// time; each scan stops at the first match.
type DigestSource struct {
	clients map[string]*Client
	o       DigestOptions
}

var _ digest.Source = (*DigestSource)(nil)

// NewDigestSource returns a digest source for the targets (keyed by target name).
func NewDigestSource(clients map[string]*Client, o DigestOptions) (*DigestSource, error) {
	for name, c := range clients {
		if c == nil {
			return nil, fmt.Errorf("digest source: target %q has no client", name)
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ScanLimit <= 0 {
		o.ScanLimit = 200
	}
	if o.ScanConcurrency <= 0 {
		o.ScanConcurrency = 4
	}
	if o.ScanTimeout <= 0 {
		o.ScanTimeout = 15 * time.Second
	}
	if o.PageSize <= 0 {
		o.PageSize = 5000
	}
	if o.Top <= 0 {
		o.Top = 5
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &DigestSource{clients: clients, o: o}, nil
}

// Collect implements digest.Source. It fails only when the workers
// cannot be listed (the target is unreachable or refuses the bot); other
// parts that fail become notes of a partial digest. With teams, only
// their builds, paused pipelines and build-log tables are counted, and
// their own workers and the global ones (what a call scoped to them sees).
func (s *DigestSource) Collect(ctx context.Context, target string, teams []string, window time.Duration, _ *digest.Data) (digest.Data, error) {
	c, ok := s.clients[target]
	if !ok {
		return digest.Data{}, fmt.Errorf("digest of %q: %w", target, chatmodel.ErrNotConfigured)
	}
	if window <= 0 {
		window = 24 * time.Hour
	}
	now := s.o.Now()
	sc := scope(teams)
	d := digest.Data{Target: target, Teams: teams, At: now, Window: window}
	ws, err := c.Workers(ctx)
	if err != nil {
		return d, err
	}
	d.Workers = workerFigures(ws, c, sc)

	dbc := make(chan *digest.DBFigures, 1)
	go func() { dbc <- s.tables(ctx, target, sc) }()

	if ps, err := c.Pipelines(ctx, AllTeams); err != nil {
		d.Notes = append(d.Notes, "paused pipelines not read: "+err.Error())
	} else {
		d.Paused = pausedPipelines(ps, sc)
	}

	agg := s.newBuildAgg(ctx, c)
	agg.scope = sc
	err = c.EachBuild(ctx, BuildFilter{Since: now.Add(-window), PageSize: s.o.PageSize}, agg.add)
	d.Builds = agg.finish()
	if err != nil {
		if ctx.Err() != nil {
			return d, err
		}
		d.Notes = append(d.Notes, "builds only partly read: "+err.Error())
	}
	if agg.scanErrs > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("events of %d errored build%s not read: %v", agg.scanErrs, plural1(agg.scanErrs), agg.firstScanErr))
	}
	d.DB = <-dbc
	return d, ctx.Err()
}

func plural1(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// tables reads the database figures: with a scope, only its teams'
// build-log tables are listed (the sizes of the whole database name no
// team and stay).
func (s *DigestSource) tables(ctx context.Context, target string, sc scope) *digest.DBFigures {
	if s.o.Tables == nil {
		return nil
	}
	db, ok, err := s.o.Tables(ctx, target)
	switch {
	case !ok:
		return nil
	case err != nil:
		return &digest.DBFigures{Err: err.Error()}
	}
	if sc != nil {
		db.Tables = slices.DeleteFunc(db.Tables, func(t digest.DBTable) bool { return t.Team == "" || !sc.allows(t.Team) })
	}
	return &db
}

// workerFigures are the figures of the workers a scope sees (nil: all).
func workerFigures(ws []Worker, c *Client, sc scope) digest.WorkerFigures {
	nm, now := c.naming, c.now()
	ws = slices.DeleteFunc(slices.Clone(ws), func(w Worker) bool { return !sc.worker(w) })
	f := digest.WorkerFigures{ByState: map[string]int{}, Names: make([]string, 0, len(ws))}
	total := 0
	for _, w := range ws {
		f.ByState[w.State]++
		f.Names = append(f.Names, w.Name)
		total += w.ActiveContainers
		if w.ActiveContainers > f.ContainersMax || f.MaxWorker == "" {
			f.ContainersMax, f.MaxWorker = w.ActiveContainers, w.Name
		}
		if w.State == WorkerStalled {
			f.Stalled = append(f.Stalled, digest.StalledWorker{Name: w.Name, Containers: w.ActiveContainers, Ref: nm.Ref(w.Name), Team: w.Team,
				AutoRemove: c.AutoRemoval(w, now).Text})
		}
	}
	human.Sort(f.Names)
	if len(ws) > 0 {
		f.ContainersMean = float64(total) / float64(len(ws))
	}
	return f
}

func pausedPipelines(ps []Pipeline, sc scope) []digest.PausedPipeline {
	var out []digest.PausedPipeline
	for _, p := range ps {
		if !p.Paused || p.Archived || !sc.allows(p.TeamName) {
			continue
		}
		pp := digest.PausedPipeline{Team: p.TeamName, Name: p.Name, By: p.PausedBy}
		if p.PausedAt > 0 {
			pp.Since, pp.Exact = time.Unix(p.PausedAt, 0), true
		}
		out = append(out, pp)
	}
	return out
}

type pipeKey struct{ team, pipeline string }

// buildAgg aggregates a stream of builds, newest first, and scans the
// errored ones in the background.
type buildAgg struct {
	// scope: only its teams' builds are counted (nil: all).
	scope     scope
	top       int
	byStatus  map[string]int
	pending   map[pipeKey]int
	failing   map[pipeKey]int
	maxID     int
	minID     int   // lowest id seen so far
	minStart  int64 // earliest start time among the builds seen so far
	oldestPID int
	pendingBy int64 // the oldest pending build was queued at or before this time

	scanLimit, queued int
	ids               chan scanItem
	wg                sync.WaitGroup

	mu           sync.Mutex // guards the scan results
	imageFetch   int
	scanned      int
	scanErrs     int
	firstScanErr error
	imagePipes   map[pipeKey]bool
}

type scanItem struct {
	id  int
	key pipeKey
}

func (s *DigestSource) newBuildAgg(ctx context.Context, c *Client) *buildAgg {
	a := &buildAgg{
		top: s.o.Top, byStatus: map[string]int{}, pending: map[pipeKey]int{}, failing: map[pipeKey]int{},
		scanLimit: s.o.ScanLimit, ids: make(chan scanItem, s.o.ScanLimit), imagePipes: map[pipeKey]bool{},
	}
	for range s.o.ScanConcurrency {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			for it := range a.ids {
				found, err := s.scan(ctx, c, it.id)
				a.mu.Lock()
				switch {
				case err != nil:
					a.scanErrs++
					if a.firstScanErr == nil {
						a.firstScanErr = err
					}
				case found:
					a.scanned++
					a.imageFetch++
					a.imagePipes[it.key] = true
				default:
					a.scanned++
				}
				a.mu.Unlock()
			}
		}()
	}
	return a
}

// add is the EachBuild callback. It never blocks: the scan queue holds
// every id that will ever be queued.
func (a *buildAgg) add(b Build) error {
	a.maxID = max(a.maxID, b.ID)
	if !a.scope.allows(b.TeamName) {
		// Not counted; its id and start still bound when the scope's
		// oldest pending build was queued (ids grow with creation).
		a.bound(b)
		return nil
	}
	a.byStatus[b.Status]++
	key := pipeKey{b.TeamName, b.PipelineName}
	if key.pipeline == "" {
		key.pipeline = "(one-off)"
	}
	switch b.Status {
	case StatusPending:
		a.pending[key]++
		if a.oldestPID == 0 || b.ID < a.oldestPID {
			a.oldestPID, a.pendingBy = b.ID, 0
			// Ids grow with creation. When every build seen so far has a
			// higher id (reruns are listed next to their original, out of
			// order), they were all created after this one, which was
			// therefore queued before the earliest of their start times.
			if a.minID == 0 || b.ID < a.minID {
				a.pendingBy = a.minStart
			}
		}
	case StatusFailed:
		a.failing[key]++
	case StatusErrored:
		a.failing[key]++
		if a.queued < a.scanLimit {
			a.queued++
			a.ids <- scanItem{id: b.ID, key: key}
		}
	}
	a.bound(b)
	return nil
}

// bound notes b's id and start time: the lowest seen so far bound when an
// older pending build was queued.
func (a *buildAgg) bound(b Build) {
	if a.minID == 0 || b.ID < a.minID {
		a.minID = b.ID
	}
	if b.StartTime > 0 && (a.minStart == 0 || b.StartTime < a.minStart) {
		a.minStart = b.StartTime
	}
}

// finish waits for the scans and returns the figures.
func (a *buildAgg) finish() digest.BuildFigures {
	close(a.ids)
	a.wg.Wait()
	f := digest.BuildFigures{
		ByStatus: a.byStatus, MaxID: a.maxID, OldestPendingID: a.oldestPID,
		PendingByPipeline: topCounts(a.pending, a.top), TopFailing: topCounts(a.failing, a.top),
		ImageFetch: a.imageFetch, Scanned: a.scanned,
	}
	if a.pendingBy > 0 {
		f.PendingSince = time.Unix(a.pendingBy, 0)
	}
	for k := range a.imagePipes {
		f.ImageFetchPipelines = append(f.ImageFetchPipelines, k.team+"/"+k.pipeline)
	}
	human.Sort(f.ImageFetchPipelines)
	return f
}

func topCounts(m map[pipeKey]int, n int) []digest.PipelineCount {
	out := make([]digest.PipelineCount, 0, len(m))
	for k, c := range m {
		out = append(out, digest.PipelineCount{Team: k.team, Pipeline: k.pipeline, Count: c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return human.Compare(out[i].Ref(), out[j].Ref()) < 0
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// scan reads a build's events until one says ImageFetchFailed.
func (s *DigestSource) scan(ctx context.Context, c *Client, id int) (bool, error) {
	sctx, cancel := context.WithTimeout(ctx, s.o.ScanTimeout)
	defer cancel()
	st, err := c.BuildEvents(sctx, id)
	if err != nil {
		return false, err
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("%s: read events of build %d: %w", c.cfg.Name, id, err)
		}
		if (ev.Type == EventError && strings.Contains(ev.Message, ImageFetchFailed)) ||
			(ev.Type == EventLog && strings.Contains(ev.Payload, ImageFetchFailed)) {
			return true, nil
		}
	}
}
