package bot

import "github.com/groundcrew/groundcrew/model/runmodel"

// JournalLine says a journal entry in words, as summaries and `groundcrew
// runs show` say it (the run's web page shows its timeline with it).
func JournalLine(e runmodel.JournalEntry, r *runmodel.Run) string { return journalLine(e, r) }
