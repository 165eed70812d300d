package bot

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// summaries has one concern: `/runbook summary`. It builds the summary of
// one run, or of a whole incident thread — its runs, the people's messages
// (when the platform can read threads), what another subsystem notes of the
// thread (an incident) — with the plain functions of summary.go, and posts it.
type summaries struct {
	store  runmodel.Store
	reader chatmodel.ThreadReader // nil: the platform cannot read threads
	notes  chatmodel.ThreadNoter  // nil: no subsystem notes threads
	out    *poster
	log    *slog.Logger
	now    func() time.Time
}

// command posts a run summary, or the incident summary of the thread, of
// a run the channel sees (a channel bound to teams: its own).
func (s *summaries) command(ctx context.Context, ev chatmodel.Event, runID string, wholeThread bool, sees func(*runmodel.Run) bool) {
	if wholeThread {
		// Slack cannot run slash commands inside threads: name a run of
		// the incident thread instead.
		r, ok := s.out.runFor(ctx, runID, ev.Conversation, ev.User)
		if !ok {
			return
		}
		if !sees(r) {
			s.out.reply(ctx, ev.Conversation, ev.User, notThisChannels(r.ID))
			return
		}
		ev.Conversation = threadOf(r)
		runID = ""
	}
	if runID != "" {
		r, ok := s.out.runFor(ctx, runID, ev.Conversation, ev.User)
		if !ok {
			return
		}
		if !sees(r) {
			s.out.reply(ctx, ev.Conversation, ev.User, notThisChannels(r.ID))
			return
		}
		j, err := s.store.Journal(ctx, r.ID)
		if err != nil {
			s.out.reply(ctx, ev.Conversation, ev.User, "⚠️ Could not read the journal: "+chatmodel.UserMessage(err))
			return
		}
		s.out.plain(ctx, ev.Conversation, s.out.withLink(r, summarize(r, j, s.now())))
		return
	}
	thread := ev.Conversation.Thread
	if thread == "" {
		s.out.reply(ctx, ev.Conversation, ev.User, "Type `/runbook summary` inside the incident thread, or name a run: `/runbook summary <run>` (that run) or `/runbook summary thread <run>` (its whole thread).")
		return
	}
	runs, err := s.store.ListRuns(ctx, runmodel.RunQuery{Thread: thread})
	if err != nil {
		s.out.reply(ctx, ev.Conversation, ev.User, "⚠️ Could not list the runs: "+chatmodel.UserMessage(err))
		return
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].CreatedAt.Before(runs[j].CreatedAt) })
	journals := map[string][]runmodel.JournalEntry{}
	for _, r := range runs {
		journals[r.ID], _ = s.store.Journal(ctx, r.ID)
	}
	var msgs []chatmodel.ThreadMessage
	if s.reader != nil {
		msgs, err = s.reader.ReadThread(ctx, ev.Conversation)
		if err != nil {
			s.log.Warn("reading the thread for a summary", "err", err)
		}
	}
	var notes *chatmodel.ThreadNotes
	if s.notes != nil {
		if n, ok := s.notes.ThreadNotes(ctx, ev.Conversation); ok {
			notes = &n
		}
	}
	if len(runs) == 0 && len(msgs) == 0 && notes == nil {
		s.out.reply(ctx, ev.Conversation, ev.User, "Nothing to summarise in this thread yet.")
		return
	}
	s.out.plain(ctx, ev.Conversation, incidentSummary(runs, journals, msgs, notes))
}
