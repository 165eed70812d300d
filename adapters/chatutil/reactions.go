package chatutil

import (
	"strings"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// Reaction is one answer people give by reacting: the intent, the symbol
// shown in hints, and the short names platforms send for it. Names[0] is
// the name the bot advertises and uses itself; every advertised name
// exists on Slack and on Mattermost 11.1 (the Mattermost e2e test reacts
// with each through a real server).
type Reaction struct {
	Intent chatmodel.Intent
	Symbol string
	Names  []string
}

// Reactions is the table of reactions groundcrew understands. On a manual
// step, the approve reaction means done and the reject one failed.
var Reactions = []Reaction{
	{chatmodel.IntentApprove, "✅", []string{"white_check_mark", "heavy_check_mark", "+1", "thumbsup", "ballot_box_with_check"}},
	{chatmodel.IntentReject, "❌", []string{"x", "no_entry", "-1", "thumbsdown", "negative_squared_cross_mark", "no_entry_sign"}},
	// Mattermost 11.1 knows ⏭ only as next_track_button (track_next is a
	// 404 there); Slack sends black_right_pointing_double_triangle_with_vertical_bar.
	{chatmodel.IntentSkip, "⏭", []string{"next_track_button", "black_right_pointing_double_triangle_with_vertical_bar", "track_next", "fast_forward"}},
	{chatmodel.IntentAcknowledge, "👀", []string{"eyes"}},
}

var byName = func() map[string]chatmodel.Intent {
	m := map[string]chatmodel.Intent{}
	for _, r := range Reactions {
		m[r.Symbol] = r.Intent
		m[r.Symbol+"\ufe0f"] = r.Intent // with the emoji presentation selector
		for _, n := range r.Names {
			m[n] = r.Intent
		}
	}
	m["✔️"], m["👍"], m["👎"] = chatmodel.IntentApprove, chatmodel.IntentApprove, chatmodel.IntentReject
	return m
}()

// IntentOf returns the intent of a reaction given by short name (with or
// without colons, with or without a skin tone: "+1::skin-tone-3") or by
// its symbol ("✅"); "" when it means nothing to groundcrew.
func IntentOf(reaction string) chatmodel.Intent {
	name, _, _ := strings.Cut(strings.Trim(strings.TrimSpace(reaction), ":"), "::")
	return byName[name]
}

// Symbol returns the symbol people react with for an intent ("" for none):
// what the engine shows in hints. Done and fail are answered with the
// approve and reject reactions.
func Symbol(i chatmodel.Intent) string {
	if r, ok := find(reactionIntent(i)); ok {
		return r.Symbol
	}
	return ""
}

// Name returns the short name advertised for an intent ("" for none).
func Name(i chatmodel.Intent) string {
	if r, ok := find(reactionIntent(i)); ok {
		return r.Names[0]
	}
	return ""
}

// reactionIntent maps the intents of manual steps onto the reactions
// that answer them.
func reactionIntent(i chatmodel.Intent) chatmodel.Intent {
	switch i {
	case chatmodel.IntentDone:
		return chatmodel.IntentApprove
	case chatmodel.IntentFail:
		return chatmodel.IntentReject
	}
	return i
}

func find(i chatmodel.Intent) (Reaction, bool) {
	for _, r := range Reactions {
		if r.Intent == i {
			return r, true
		}
	}
	return Reaction{}, false
}

// Hints implements chatmodel.ReactionHints with this table; adapters embed it.
type Hints struct{}

// Symbol implements chatmodel.ReactionHints.
func (Hints) Symbol(i chatmodel.Intent) string { return Symbol(i) }
