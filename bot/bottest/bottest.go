// Package bottest has in-memory fakes of the engine's ports for tests: a
// recording Chat, a fake world with read/write/destructive operations, and a
// settable clock.
package bottest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
)

// Posted is a message as the fake chat holds it.
type Posted struct {
	Ref     chatmodel.MessageRef
	To      chatmodel.Conversation
	Msg     chatmodel.Message
	Edits   int
	History []chatmodel.Message
}

// Ephemeral is a message shown to one user.
type Ephemeral struct {
	User    chatmodel.User
	Text    string
	Buttons []chatmodel.Button
}

// Chat is a recording bot.Chat. FailPosts makes the next N posts fail.
type Chat struct {
	mu         sync.Mutex
	posts      []*Posted
	ephemerals []Ephemeral
	FailPosts  int
	Groups     map[string][]string
	// GroupsErr, when set, is what GroupMembers answers (the platform is down).
	GroupsErr error
	// Users is the platform's user directory by name, for resolving names
	// in policies; nil means names are ids.
	Users map[string]chatmodel.User
	// NamesOnly makes ResolveUser look up names only, never ids: a
	// platform whose ids and names are different namespaces (Slack takes
	// a string for an id only when it is shaped like one).
	NamesOnly bool
	// OnPost, when set, is called with each posted message before Post
	// returns (a test's way to act "the moment it appears").
	OnPost func(ref chatmodel.MessageRef, m chatmodel.Message)
	// CannotPost names channels the bot is not in: CanPost refuses them
	// with the message given.
	CannotPost map[string]string
	// Channels are the platform's channels by name ("#payments-ci" → id)
	// for ChannelID; ChannelsErr is what it answers when set (the
	// platform is down).
	Channels    map[string]string
	ChannelsErr error
}

// ChannelID implements chatmodel.ChannelResolver.
func (c *Chat) ChannelID(_ context.Context, nameOrID string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ChannelsErr != nil {
		return "", c.ChannelsErr
	}
	if !strings.HasPrefix(nameOrID, "#") {
		return nameOrID, nil
	}
	if id, ok := c.Channels[nameOrID]; ok {
		return id, nil
	}
	return "", fmt.Errorf("channel %s: %w", nameOrID, chatmodel.ErrNotFound)
}

var (
	_ chatmodel.Chat             = (*Chat)(nil)
	_ chatmodel.GroupResolver    = (*Chat)(nil)
	_ chatmodel.IdentityResolver = (*Chat)(nil)
	_ chatmodel.ChannelResolver  = (*Chat)(nil)
)

// ResolveUser implements bot.IdentityResolver over Users.
func (c *Chat) ResolveUser(_ context.Context, name string) (chatmodel.User, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Users == nil {
		return chatmodel.User{ID: name, Name: name}, nil
	}
	if u, ok := c.Users[name]; ok {
		return u, nil
	}
	for _, u := range c.Users {
		if c.NamesOnly {
			break
		}
		if u.ID == name {
			return u, nil
		}
	}
	return chatmodel.User{}, fmt.Errorf("user %q: %w", name, chatmodel.ErrNotFound)
}

// UserByID implements chatmodel.IdentityResolver over Users: the account
// with this id (Kind UserUnknown when Users has none); without Users, ids
// are names.
func (c *Chat) UserByID(_ context.Context, id string) (chatmodel.User, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Users == nil {
		return chatmodel.User{ID: id, Name: id}, nil
	}
	for _, u := range c.Users {
		if u.ID == id {
			return u, nil
		}
	}
	return chatmodel.User{ID: id, Kind: chatmodel.UserUnknown}, nil
}

// Post implements bot.Chat.
func (c *Chat) Post(_ context.Context, to chatmodel.Conversation, m chatmodel.Message) (chatmodel.MessageRef, error) {
	c.mu.Lock()
	if c.FailPosts > 0 {
		c.FailPosts--
		c.mu.Unlock()
		return chatmodel.MessageRef{}, errors.New("chat is down")
	}
	ref := chatmodel.MessageRef{Platform: to.Platform, Channel: to.Channel, Thread: to.Thread, ID: fmt.Sprintf("m%d", len(c.posts)+1)}
	c.posts = append(c.posts, &Posted{Ref: ref, To: to, Msg: m, History: []chatmodel.Message{m}})
	on := c.OnPost
	c.mu.Unlock()
	if on != nil {
		on(ref, m)
	}
	return ref, nil
}

// CanPost implements bot.PostChecker over CannotPost.
func (c *Chat) CanPost(_ context.Context, to chatmodel.Conversation) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if msg, ok := c.CannotPost[to.Channel]; ok {
		return &chatmodel.UserError{Msg: msg}
	}
	return nil
}

// Update implements bot.Chat.
func (c *Chat) Update(_ context.Context, ref chatmodel.MessageRef, m chatmodel.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.posts {
		if p.Ref.ID == ref.ID {
			p.Msg = m
			p.Edits++
			p.History = append(p.History, m)
			return nil
		}
	}
	return fmt.Errorf("update: no message %s", ref.ID)
}

// Ephemeral implements bot.Chat.
func (c *Chat) Ephemeral(_ context.Context, _ chatmodel.Conversation, u chatmodel.User, m chatmodel.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ephemerals = append(c.ephemerals, Ephemeral{User: u, Text: m.Text, Buttons: m.Buttons})
	return nil
}

// GroupMembers implements bot.GroupResolver.
func (c *Chat) GroupMembers(_ context.Context, group string) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.GroupsErr != nil {
		return nil, c.GroupsErr
	}
	return c.Groups[group], nil
}

// Posts returns a snapshot of the posted messages.
func (c *Chat) Posts() []Posted {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Posted, len(c.posts))
	for i, p := range c.posts {
		out[i] = *p
	}
	return out
}

// Find returns the last message whose current text contains s.
func (c *Chat) Find(s string) (Posted, bool) {
	ps := c.Posts()
	for i := len(ps) - 1; i >= 0; i-- {
		if strings.Contains(ps[i].Msg.Text, s) {
			return ps[i], true
		}
	}
	return Posted{}, false
}

// LastEphemeral is the last ephemeral message shown (zero when none).
func (c *Chat) LastEphemeral() Ephemeral {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ephemerals) == 0 {
		return Ephemeral{}
	}
	return c.ephemerals[len(c.ephemerals)-1]
}

// Ephemerals returns the ephemeral messages shown to user id (all when "").
func (c *Chat) Ephemerals(user string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, e := range c.ephemerals {
		if user == "" || e.User.ID == user {
			out = append(out, e.Text)
		}
	}
	return out
}

// Transcript renders every message (current text) in order, for debugging.
func (c *Chat) Transcript() string {
	var b strings.Builder
	for _, p := range c.Posts() {
		fmt.Fprintf(&b, "[%s thread=%s] %s\n", p.Ref.ID, p.To.Thread, p.Msg.Text)
	}
	for _, e := range c.Ephemerals("") {
		fmt.Fprintf(&b, "(to %s) %s\n", "user", e)
	}
	return b.String()
}

// Clock is a settable clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the current fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// World is a tiny fake CI: workers with states, and call counters.
type World struct {
	mu      sync.Mutex
	Workers map[string]string // name → state
	// Teams are the Concourse teams of team-owned workers (name → team;
	// the others are global): fake.prune's plan items carry them.
	Teams map[string]string
	Calls map[string]int // op name → applies/calls
	// ApplyHook runs inside Apply before the change (tests crash here).
	ApplyHook func(op string)
	// FailApply makes Apply return this error.
	FailApply error
	// Progress, when set, runs inside fake.prune's Apply with the call's
	// progress reporter (tests of live progress).
	Progress func(report func(string))
	// Scoped records the Call.Teams of each operation's last call.
	Scoped map[string][]string
	// TeamRoles sets the Concourse role each operation asks (op name →
	// Op.TeamRole), for tests of authority: concourse.
	TeamRoles map[string]string
	// WorkersDown makes WorkersOp fail (a target that cannot be read).
	WorkersDown error
}

// WorkersOp is the world's workers as concourse.workers lists them for
// what a channel is offered: the workers a call may see (its teams' and
// global ones), and with team= only those teams' own.
func (w *World) WorkersOp() opmodel.Op {
	return opmodel.Op{Name: "concourse.workers", Class: opmodel.ClassRead, Args: []opmodel.ArgSpec{{Name: "team"}},
		Do: func(_ context.Context, c opmodel.Call) (opmodel.Result, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.Calls["concourse.workers"]++
			if w.WorkersDown != nil {
				return opmodel.Result{}, w.WorkersDown
			}
			teams := c.Args.Strings("team")
			rows := [][]string{}
			for n := range w.Workers {
				t := w.Teams[n]
				if (c.Teams != nil && t != "" && !slices.Contains(c.Teams, t)) || (len(teams) > 0 && !slices.Contains(teams, t)) {
					continue
				}
				rows = append(rows, []string{n})
			}
			return opmodel.Result{Table: &opmodel.Table{Columns: []string{"name"}, Rows: rows}}, nil
		}}
}

func (w *World) scoped(op string, c opmodel.Call) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.Scoped == nil {
		w.Scoped = map[string][]string{}
	}
	w.Scoped[op] = c.Teams
}

// ScopeOf returns the Call.Teams of op's last call.
func (w *World) ScopeOf(op string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.Scoped[op]
}

// NewWorld returns a world with the given workers.
func NewWorld(workers map[string]string) *World {
	return &World{Workers: workers, Calls: map[string]int{}}
}

// Set changes a worker's state (or adds it).
func (w *World) Set(name, state string) {
	w.mu.Lock()
	w.Workers[name] = state
	w.mu.Unlock()
}

// Remove unregisters a worker, as Concourse's stalled-worker-timeout (or
// someone else's prune) does.
func (w *World) Remove(name string) {
	w.mu.Lock()
	delete(w.Workers, name)
	w.mu.Unlock()
}

// State returns a worker's state ("" when gone).
func (w *World) State(name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.Workers[name]
}

// CallCount returns how many times op ran (Apply for destructive ops).
func (w *World) CallCount(op string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.Calls[op]
}

// Ops implements bot.Provider: fake.workers (read), fake.touch (write),
// fake.prune (destructive: prune non-running workers, optionally only `name`).
func (w *World) Ops() []opmodel.Op {
	ops := w.ops()
	for i := range ops {
		ops[i].TeamRole = w.TeamRoles[ops[i].Name]
	}
	return ops
}

func (w *World) ops() []opmodel.Op {
	return []opmodel.Op{
		{Name: "fake.workers", Class: opmodel.ClassRead, Args: []opmodel.ArgSpec{{Name: "state"}},
			Do: func(_ context.Context, c opmodel.Call) (opmodel.Result, error) {
				w.mu.Lock()
				defer w.mu.Unlock()
				w.Calls["fake.workers"]++
				if w.Scoped == nil {
					w.Scoped = map[string][]string{}
				}
				w.Scoped["fake.workers"] = c.Teams
				var names, stalled []string
				rows := [][]string{}
				for n, s := range w.Workers {
					names = append(names, n)
					if s != "running" {
						stalled = append(stalled, n)
					}
				}
				sort.Strings(names)
				sort.Strings(stalled)
				all := []any{}
				for _, n := range names {
					rows = append(rows, []string{n, w.Workers[n]})
					all = append(all, map[string]any{"name": n, "state": w.Workers[n]})
				}
				st := []any{}
				for _, s := range stalled {
					st = append(st, s)
				}
				return opmodel.Result{Summary: fmt.Sprintf("%d workers, %d not running", len(names), len(stalled)),
					Table: &opmodel.Table{Columns: []string{"name", "state"}, Rows: rows},
					Data:  map[string]any{"workers": all, "stalled": st}}, nil
			}},
		{Name: "fake.touch", Class: opmodel.ClassWrite, Args: []opmodel.ArgSpec{{Name: "name"}, {Name: "team"}}, Owner: opmodel.OwnerTeam,
			Teams: func(_ context.Context, c opmodel.Call) ([]string, error) {
				if t := c.Args.String("team"); t != "" {
					return []string{t}, nil
				}
				return nil, nil
			},
			Do: func(_ context.Context, c opmodel.Call) (opmodel.Result, error) {
				w.scoped("fake.touch", c)
				if w.ApplyHook != nil {
					w.ApplyHook("fake.touch")
				}
				w.mu.Lock()
				defer w.mu.Unlock()
				w.Calls["fake.touch"]++
				return opmodel.Result{Summary: "touched " + c.Args.String("name")}, nil
			}},
		{Name: "fake.prune", Class: opmodel.ClassDestructive, Args: []opmodel.ArgSpec{{Name: "name"}}, Owner: opmodel.OwnerWorker,
			Plan: func(_ context.Context, c opmodel.Call) (opmodel.Plan, error) {
				w.scoped("fake.prune", c)
				w.mu.Lock()
				defer w.mu.Unlock()
				only := c.Args.String("name")
				var p opmodel.Plan
				var names []string
				for n, s := range w.Workers {
					if s != "running" && (only == "" || only == n) {
						names = append(names, n)
					}
				}
				sort.Strings(names)
				for _, n := range names {
					attrs := map[string]string{"state": w.Workers[n]}
					if t := w.Teams[n]; t != "" {
						attrs[opmodel.AttrTeam] = t
					}
					p.Items = append(p.Items, opmodel.PlanItem{Kind: "worker", ID: n, Attrs: attrs, Detail: w.Workers[n]})
				}
				p.Summary = fmt.Sprintf("prune %d worker%s", len(names), map[bool]string{true: "", false: "s"}[len(names) == 1])
				if len(names) == 0 {
					p.Summary = "nothing to prune"
				}
				for _, it := range c.Gone(p) {
					f := opmodel.Found{Kind: it.Kind, ID: it.ID, Text: it.ID + " is no longer registered: it was removed while the approval was asked", Gone: true}
					if s, ok := w.Workers[it.ID]; ok {
						f.Text, f.Gone = it.ID+" is "+s+" again", false
					}
					p.Found = append(p.Found, f)
				}
				return p, nil
			},
			Apply: func(_ context.Context, c opmodel.Call, p opmodel.Plan) (opmodel.Result, error) {
				if w.ApplyHook != nil {
					w.ApplyHook("fake.prune")
				}
				if w.Progress != nil {
					w.Progress(c.Report)
				}
				w.mu.Lock()
				defer w.mu.Unlock()
				if w.FailApply != nil {
					return opmodel.Result{}, w.FailApply
				}
				w.Calls["fake.prune"]++
				var res opmodel.Result
				for _, it := range p.Items {
					if w.Workers[it.ID] == "running" {
						res.Items = append(res.Items, opmodel.ItemResult{ID: it.ID, Outcome: opmodel.OutcomeFailed, Reason: "cannot prune running worker"})
						continue
					}
					delete(w.Workers, it.ID)
					res.Items = append(res.Items, opmodel.ItemResult{ID: it.ID, Outcome: opmodel.OutcomeSucceeded})
				}
				res.Summary = fmt.Sprintf("pruned %d worker(s)", len(p.Items))
				return res, nil
			}},
	}
}

// SetGroup sets the members of a group, as the platform would answer now.
func (c *Chat) SetGroup(group string, ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Groups == nil {
		c.Groups = map[string][]string{}
	}
	c.Groups[group] = ids
}

// SetUser sets what the platform says of the user a name denotes now
// (deactivated, another account given the handle).
func (c *Chat) SetUser(name string, u chatmodel.User) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Users == nil {
		c.Users = map[string]chatmodel.User{}
	}
	c.Users[name] = u
}
