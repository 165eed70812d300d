package bot_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// incidentsSpec is a declared command shaped like the incidents'.
var incidentsSpec = chatmodel.CommandSpec{
	Name: "incidents", Aliases: []string{"incident"}, Usage: "incidents [unacked] [page <n>]", Help: "the open incidents", MaxArgs: 3,
	Subs: []chatmodel.SubVerb{
		{Name: "show", Args: 1, Usage: "incidents show <incident>", Help: "its timeline"},
		{Name: "ack", Args: 1, Usage: "incidents ack <incident>", Help: "acknowledge it"},
	},
}

// TestParse_DeclaredCommands: the one parser reads a subsystem's command —
// name and aliases in any case, its sub-verbs and their arity, quotes and
// limits as for every command — and says the declared names in its
// did-you-mean.
func TestParse_DeclaredCommands(t *testing.T) {
	specs := []chatmodel.CommandSpec{incidentsSpec}
	for text, want := range map[string]chatmodel.Invocation{
		"incidents":                {Command: "incidents", Args: []string{}},
		"Incident unacked page 2":  {Command: "incidents", Args: []string{"unacked", "page", "2"}},
		"INCIDENTS SHOW I-B6CAD1":  {Command: "incidents", Sub: "show", Args: []string{"I-B6CAD1"}},
		`incidents ack "i-b6cad1"`: {Command: "incidents", Sub: "ack", Args: []string{"i-b6cad1"}},
	} {
		c, err := bot.ParseWith(text, specs)
		require.NoError(t, err, text)
		require.NotNil(t, c.Invocation, text)
		assert.Equal(t, bot.Verb("incidents"), c.Verb, text)
		assert.Equal(t, want.Command, c.Invocation.Command, text)
		assert.Equal(t, want.Sub, c.Invocation.Sub, text)
		assert.Equal(t, len(want.Args), len(c.Invocation.Args), text)
		for i := range want.Args {
			assert.Equal(t, want.Args[i], c.Invocation.Args[i], text)
		}
	}
	for text, want := range map[string]string{
		"incidents show":           "Usage: `/runbook incidents show <incident>`",
		"incidents ack a b":        "Usage: `/runbook incidents ack <incident>`",
		"incidents a b c d":        "Usage: `/runbook incidents [unacked] [page <n>]` · `/runbook incidents show <incident>` · `/runbook incidents ack <incident>`",
		"incidnets":                "Did you mean `incidents`?",
		`incidents show "unclosed`: "unclosed quote",
		"incidents " + strings.Repeat("x", bot.MaxCommandBytes): "the limit is 16 KiB",
	} {
		_, err := bot.ParseWith(text, specs)
		var ue *chatmodel.UserError
		require.ErrorAs(t, err, &ue, text)
		assert.Contains(t, ue.Msg, want, text)
	}
	// Unknown without the spec; a built-in verb is never shadowed.
	_, err := bot.Parse("incidents")
	require.Error(t, err)
	c, err := bot.ParseWith("status", []chatmodel.CommandSpec{{Name: "status", Usage: "status", MaxArgs: 0}})
	require.NoError(t, err)
	assert.Nil(t, c.Invocation)
}

// commander records what the engine hands it.
type commander struct {
	mu  sync.Mutex
	got []chatmodel.Invocation
}

func (c *commander) Commands() []chatmodel.CommandSpec { return []chatmodel.CommandSpec{incidentsSpec} }

func (c *commander) RunCommand(_ context.Context, _ chatmodel.Event, in chatmodel.Invocation) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, in)
	return nil
}

// TestEngineHandsDeclaredCommandsToTheirCommander: the engine dispatches a
// declared command to its subsystem once (a redelivered event is dropped,
// as for every command), answers its usage errors itself, and lists it in
// /runbook help.
func TestEngineHandsDeclaredCommandsToTheirCommander(t *testing.T) {
	cm := &commander{}
	h := newHarness(t, bottest.NewWorld(nil), func(o *bot.Options) { o.Commands = cm })
	ev := chatmodel.Event{Kind: chatmodel.EventCommand, ID: "slack:cmd:1", User: alice, Conversation: chan1, Text: "incidents show I-1"}
	require.NoError(t, h.eng.Handle(h.ctx, ev))
	require.NoError(t, h.eng.Handle(h.ctx, ev))
	require.Len(t, cm.got, 1, "a redelivered command is handled once")
	assert.Equal(t, chatmodel.Invocation{Command: "incidents", Sub: "show", Args: []string{"I-1"}}, cm.got[0])

	h.cmd(alice, "incidents show")
	assert.Len(t, cm.got, 1, "a usage error is the parser's, not the subsystem's")
	eph := h.chat.Ephemerals(alice.ID)
	assert.Contains(t, eph[len(eph)-1], "Usage: `/runbook incidents show <incident>`")

	h.cmd(alice, "help")
	eph = h.chat.Ephemerals(alice.ID)
	help := eph[len(eph)-1]
	assert.Contains(t, help, "• `/runbook incidents [unacked] [page <n>]` — the open incidents\n• `/runbook incidents show <incident>` — its timeline\n")
	assert.True(t, strings.Index(help, "incidents ack") < strings.Index(help, "`/runbook help`"), "help stays the last line")
}
