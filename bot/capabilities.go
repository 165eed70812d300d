package bot

import (
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Capabilities are the optional parts of the store and of the chat adapter
// the engine uses beyond the Store and Chat ports. They are named in the
// wiring, from the store and the adapter before anything wraps them: the
// engine never discovers one by a type assertion, so a wrapper (the audit
// checkpointer around the store, a metrics layer around the chat) cannot
// hide one. A nil field is a capability the platform or store does not
// have.
type Capabilities struct {
	// Housekeeper forgets old dedupe entries and finished runs past the
	// retention (Options.HousekeepEvery). Nil: nothing is ever forgotten.
	Housekeeper runmodel.Housekeeper
	// Reactions names the reaction of each intent in the hints people
	// read. Nil: hints name typed commands only.
	Reactions chatmodel.ReactionHints
	// PostChecker refuses a run in a channel the bot cannot post in.
	PostChecker chatmodel.PostChecker
	// Groups expands approver groups of the policy into user ids.
	Groups chatmodel.GroupResolver
	// Identities resolves the user names written in policies and runbooks.
	Identities chatmodel.IdentityResolver
	// Rewatch re-reads the reactions on open gates and manual steps after
	// a restart (platforms whose reactions are not pushed again).
	Rewatch chatmodel.ReactionWatcher
	// Threads reads a thread back for /runbook summary.
	Threads chatmodel.ThreadReader
	// Forms asks for the missing parameters of `/runbook run` with a
	// form. Nil: the command is refused with what is missing.
	Forms chatmodel.FormOpener
	// Channels turns the channel names bound under `channels:` into ids.
	// Nil: names are ids (console).
	Channels chatmodel.ChannelResolver
}

// CapabilitiesOf returns what store and chat can do beyond the ports. Call
// it with the store and the adapter themselves, not with a wrapper: a
// wrapper implements only the ports.
func CapabilitiesOf(store runmodel.Store, chat chatmodel.Chat) Capabilities {
	var c Capabilities
	c.Housekeeper, _ = store.(runmodel.Housekeeper)
	c.Reactions, _ = chat.(chatmodel.ReactionHints)
	c.PostChecker, _ = chat.(chatmodel.PostChecker)
	c.Groups, _ = chat.(chatmodel.GroupResolver)
	c.Identities, _ = chat.(chatmodel.IdentityResolver)
	c.Rewatch, _ = chat.(chatmodel.ReactionWatcher)
	c.Threads, _ = chat.(chatmodel.ThreadReader)
	c.Forms, _ = chat.(chatmodel.FormOpener)
	c.Channels, _ = chat.(chatmodel.ChannelResolver)
	return c
}

// MissingCapabilities names the capabilities c lacks (the field names), for
// tests of a composition and for the start-up log.
func MissingCapabilities(c Capabilities) []string {
	var out []string
	for _, f := range []struct {
		name string
		nil  bool
	}{
		{"Housekeeper", c.Housekeeper == nil},
		{"Reactions", c.Reactions == nil},
		{"PostChecker", c.PostChecker == nil},
		{"Groups", c.Groups == nil},
		{"Identities", c.Identities == nil},
		{"Rewatch", c.Rewatch == nil},
		{"Threads", c.Threads == nil},
		{"Channels", c.Channels == nil},
	} {
		if f.nil {
			out = append(out, f.name)
		}
	}
	return out
}
