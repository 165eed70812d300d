package concourse

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// WatchSource is the digest.Source of watch rules: the figures a watch
// evaluates (workers, the pending builds, the database), collected
// incrementally. The first poll of a target lists the builds of the window
// once; later polls list only the builds newer than the newest seen (one
// request per page of new builds, newest first) and re-read the pending
// builds known from earlier polls from their pipelines' lists (the range
// between the lowest and highest pending id, one request per page), so a
// poll's cost follows what changed, not the target's history. Finished
// builds are not counted and errored builds are not scanned: the digest
// does that.
type WatchSource struct {
	ds *DigestSource

	mu      sync.Mutex
	targets map[string]*watchCache
}

// watchCache is what one target's polls remember. Polls of one target are
// serialized by its mutex.
type watchCache struct {
	mu      sync.Mutex
	primed  bool
	maxID   int
	pending map[int]pendingBuild
}

type pendingBuild struct {
	key pipeKey
	// queuedBy: the build was queued at or before this time (unix).
	queuedBy int64
}

var _ digest.Source = (*WatchSource)(nil)

// NewWatchSource returns the watch's source over the digest source's
// clients, database figures and options.
func NewWatchSource(ds *DigestSource) *WatchSource {
	return &WatchSource{ds: ds, targets: map[string]*watchCache{}}
}

func (s *WatchSource) cache(target string) *watchCache {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.targets[target]
	if c == nil {
		c = &watchCache{pending: map[int]pendingBuild{}}
		s.targets[target] = c
	}
	return c
}

// Collect implements digest.Source. Like the digest's, it fails only when
// the workers cannot be listed; a build listing that fails is a note, and
// the next poll reads what this one missed. The cache of a target is
// shared by the rules of every scope: teams only filter what a poll
// returns.
func (s *WatchSource) Collect(ctx context.Context, target string, teams []string, window time.Duration, _ *digest.Data) (digest.Data, error) {
	c, ok := s.ds.clients[target]
	if !ok {
		return digest.Data{}, fmt.Errorf("watch of %q: %w", target, chatmodel.ErrNotConfigured)
	}
	if window <= 0 {
		window = 24 * time.Hour
	}
	now := s.ds.o.Now()
	sc := scope(teams)
	d := digest.Data{Target: target, Teams: teams, At: now, Window: window}
	ws, err := c.Workers(ctx)
	if err != nil {
		return d, err
	}
	d.Workers = workerFigures(ws, c, sc)
	dbc := make(chan *digest.DBFigures, 1)
	go func() { dbc <- s.ds.tables(ctx, target, sc) }()

	wc := s.cache(target)
	wc.mu.Lock()
	if err := s.update(ctx, c, wc, now, window); err != nil {
		if ctx.Err() != nil {
			wc.mu.Unlock()
			<-dbc
			return d, err
		}
		d.Notes = append(d.Notes, "builds only partly read: "+err.Error())
	}
	d.Builds = wc.figures(s.ds.o.Top, sc)
	wc.mu.Unlock()
	d.DB = <-dbc
	return d, ctx.Err()
}

// update brings the cache up to date: the whole window on the first poll,
// then the new builds and the known pending ones.
func (s *WatchSource) update(ctx context.Context, c *Client, wc *watchCache, now time.Time, window time.Duration) error {
	if !wc.primed {
		var minStart int64
		maxID := 0
		pending := map[int]pendingBuild{}
		err := c.EachBuild(ctx, BuildFilter{Since: now.Add(-window), PageSize: s.ds.o.PageSize}, func(b Build) error {
			maxID = max(maxID, b.ID)
			if b.Status == StatusPending {
				by := now.Unix()
				if minStart > 0 {
					by = minStart // newer builds started then: this one was queued before
				}
				pending[b.ID] = pendingBuild{key: buildKey(b), queuedBy: by}
			}
			if b.StartTime > 0 && (minStart == 0 || b.StartTime < minStart) {
				minStart = b.StartTime
			}
			return nil
		})
		if err != nil {
			return err
		}
		wc.primed, wc.maxID, wc.pending = true, maxID, pending
		return nil
	}
	// The pending builds known so far, from their pipelines' lists.
	groups := map[BuildScope][]int{}
	for id, pb := range wc.pending {
		sc := BuildScope{Team: pb.key.team, Pipeline: pb.key.pipeline}
		if pb.key.pipeline == oneOff {
			sc = BuildScope{}
		}
		groups[sc] = append(groups[sc], id)
	}
	var firstErr error
	for sc, ids := range groups {
		lo, hi := ids[0], ids[0]
		for _, id := range ids {
			lo, hi = min(lo, id), max(hi, id)
		}
		seen := map[int]bool{}
		err := c.listRange(ctx, sc, lo, hi, func(b Build) {
			pb, ok := wc.pending[b.ID]
			if !ok {
				return
			}
			seen[b.ID] = true
			if b.Status != StatusPending {
				delete(wc.pending, b.ID)
				return
			}
			wc.pending[b.ID] = pb
		})
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		for _, id := range ids {
			if !seen[id] {
				delete(wc.pending, id) // gone from its pipeline's list
			}
		}
	}
	// The builds created since the last poll, newest first: a small first
	// page (a poll every 10 s sees few new builds), then pages of 500.
	q := url.Values{"limit": {"50"}}
	newMax := wc.maxID
	for {
		pg, err := c.buildPage(ctx, "/api/v1/builds", q, "list builds", func(b Build) error {
			if b.ID <= wc.maxID {
				return nil
			}
			newMax = max(newMax, b.ID)
			if b.Status == StatusPending {
				wc.pending[b.ID] = pendingBuild{key: buildKey(b), queuedBy: now.Unix()}
			}
			return nil
		})
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return firstErr // the next poll reads from the same point again
		}
		if pg.count == 0 || pg.minID <= wc.maxID || pg.next == nil {
			break
		}
		q = pg.next
		q.Set("limit", strconv.Itoa(min(s.ds.o.PageSize, 500)))
	}
	wc.maxID = newMax
	return firstErr
}

const oneOff = "(one-off)"

func buildKey(b Build) pipeKey {
	key := pipeKey{b.TeamName, b.PipelineName}
	if key.pipeline == "" {
		key.pipeline = oneOff
	}
	return key
}

// figures are the build figures the watch evaluates.
func (wc *watchCache) figures(top int, sc scope) digest.BuildFigures {
	f := digest.BuildFigures{ByStatus: map[string]int{}, MaxID: wc.maxID}
	byPipe := map[pipeKey]int{}
	var oldestBy int64
	for id, pb := range wc.pending {
		if !sc.allows(pb.key.team) {
			continue
		}
		f.ByStatus[StatusPending]++
		byPipe[pb.key]++
		if f.OldestPendingID == 0 || id < f.OldestPendingID {
			f.OldestPendingID = id
		}
		if oldestBy == 0 || pb.queuedBy < oldestBy {
			oldestBy = pb.queuedBy
		}
	}
	if oldestBy > 0 {
		f.PendingSince = time.Unix(oldestBy, 0)
	}
	f.PendingByPipeline = topCounts(byPipe, top)
	return f
}
