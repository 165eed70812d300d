package bot

import (
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// JournalLine says a journal entry in words, as summaries and `groundcrew
// runs show` say it (the run's web page shows its timeline with it).
func JournalLine(e runmodel.JournalEntry, r *runmodel.Run) string { return journalLine(e, r) }

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
