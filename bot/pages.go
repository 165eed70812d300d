package bot

import (
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// JournalLine says a journal entry in words, as the timeline of `groundcrew
// runs show` says it below the run's steps (the run's web page shows its
// timeline with it): the error of the step that stopped the run is said on
// that step, not again.
func JournalLine(e runmodel.JournalEntry, r *runmodel.Run) string {
	return timelineLine(e, r, failedWith(r))
}

// withLink adds the run's page to m, when there is one (Options.RunLink).
func (p *poster) withLink(r *runmodel.Run, m chatmodel.Message) chatmodel.Message {
	if p.runLink == nil {
		return m
	}
	if u := p.runLink(r.ID, r.CreatedAt); u != "" {
		m.Link = &chatmodel.Link{URL: u, Label: "Run page"}
	}
	return m
}

// rootMessage is the run's root message, with the run's page.
func (p *poster) rootMessage(r *runmodel.Run) chatmodel.Message {
	return p.withLink(r, renderRoot(r, p.now()))
}
