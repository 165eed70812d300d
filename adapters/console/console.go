// Package console is a chat adapter for the terminal: it prints the bot's
// messages as a numbered transcript and reads one command per line from an
// input stream, with several simulated users. It powers the demo and
// `groundcrew serve` with `chat: {platform: console}` (useful when chat is
// down, and for scripting: `printf '/runbook list\n' | groundcrew serve`).
package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/adapters/chatutil"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/textmodel"
)

// Config configures the console adapter.
type Config struct {
	// User is who types first (default "alice").
	User string `yaml:"user"`
	// Users lists the simulated users (default alice, bob, carol).
	Users []string `yaml:"users"`
	// Groups maps approver groups to user names, e.g. ci-oncall: [bob, carol].
	Groups map[string][]string `yaml:"groups"`
	// Channel is the simulated channel name (default "#ops").
	Channel string `yaml:"channel"`
}

// Options are runtime options.
type Options struct {
	// Color enables ANSI bold/dim.
	Color bool
	// Echo prints each input line as "user> line" (for scripts and demos).
	Echo bool
	// AfterLine is called after each handled line; the binary waits for the
	// engine to settle there so output stays in order.
	AfterLine func()
	// Now is the clock for thread transcripts (default time.Now).
	Now func() time.Time
	// FilesDir is where the files of messages (a digest's chart) are
	// written; their path is printed under the message (default: the
	// system's temporary directory).
	FilesDir string
	// Extra adds console commands ("/clock") handled by the caller; the
	// function returns the text to show.
	Extra map[string]func(args []string) string
}

// Adapter implements chatmodel.Chat, chatmodel.GroupResolver and chatmodel.ThreadReader.
type Adapter struct {
	cfg  Config
	opts Options
	out  io.Writer
	in   io.Reader

	// session makes message ids unique across runs of the binary (the
	// store keeps references to messages of earlier sessions).
	session string

	mu   sync.Mutex
	user string
	// channel is where typed commands go (/channel switches it; default
	// Config.Channel).
	channel string
	// down makes posts and edits fail (/chat down): a chat outage, to see
	// what waits in the outbox and goes out when it is back (/chat up).
	down    bool
	thread  string // current thread (message number) for typed commands
	msgs    []*message
	lastRun string
	// form is the form being answered, question by question (forms.go).
	form *consoleForm
	// formChecker, when set, checks each answer of a form (SetFormChecker).
	formChecker chatmodel.FormChecker
	// formRefresher, when set, gives a form's choices again for the
	// target answered (SetFormRefresher).
	formRefresher chatmodel.FormRefresher
}

type message struct {
	n       int
	thread  string
	text    string
	author  string
	at      time.Time
	buttons []chatmodel.Button
	bot     bool
	// only is set for an ephemeral message with buttons (▶ Run on
	// /runbook show): numbered so /press finds it, shown to that person
	// only, never read back as part of a thread.
	only string
	// ref is the engine's id for a message shown again from an earlier
	// session; reactions to it must name that id.
	ref string
	// channel is where it was posted ("": the configured channel).
	channel string
}

// id is the message id reactions and button presses carry.
func (a *Adapter) id(m *message) string {
	if m.ref != "" {
		return m.ref
	}
	return a.refID(m.n)
}

var (
	_ chatmodel.Chat          = (*Adapter)(nil)
	_ chatmodel.GroupResolver = (*Adapter)(nil)
	_ chatmodel.ThreadReader  = (*Adapter)(nil)
	_ chatmodel.ReactionHints = (*Adapter)(nil)
)

// New returns a console adapter reading commands from in and printing to out.
func New(cfg Config, in io.Reader, out io.Writer, opts Options) *Adapter {
	if cfg.User == "" {
		cfg.User = "alice"
	}
	if len(cfg.Users) == 0 {
		cfg.Users = []string{"alice", "bob", "carol"}
	}
	if cfg.Channel == "" {
		cfg.Channel = "#ops"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Adapter{cfg: cfg, opts: opts, in: in, out: &syncWriter{w: out}, user: cfg.User, channel: cfg.Channel,
		session: strconv.FormatInt(time.Now().UnixNano(), 36)}
}

// refID is the message id the engine stores for message number n.
func (a *Adapter) refID(n int) string { return a.session + "." + strconv.Itoa(n) }

func (a *Adapter) bold(s string) string {
	if !a.opts.Color {
		return s
	}
	return "\x1b[1m" + s + "\x1b[0m"
}

func (a *Adapter) dim(s string) string {
	if !a.opts.Color {
		return s
	}
	return "\x1b[2m" + s + "\x1b[0m"
}

var boldRe = regexp.MustCompile(`\*([^*\n]+)\*`)

// render turns the engine's Markdown subset into terminal text.
func (a *Adapter) render(text string) string {
	return boldRe.ReplaceAllStringFunc(text, func(m string) string { return a.bold(m[1 : len(m)-1]) })
}

// printMessage prints a message with its number, indenting thread replies.
func (a *Adapter) printMessage(m *message, edited bool) {
	indent, arrow := "", ""
	if m.thread != "" {
		indent, arrow = "    ", "↳ "
	}
	tag := fmt.Sprintf("#%d", m.n)
	if m.channel != "" && m.channel != a.cfg.Channel {
		tag += " " + m.channel
	}
	if edited {
		tag += " (edited)"
	}
	lines := strings.Split(a.render(m.text), "\n")
	fmt.Fprintf(a.out, "%s%s %s%s\n", indent, a.dim(tag), arrow, lines[0])
	pad := indent + strings.Repeat(" ", len([]rune(tag))+1+len([]rune(arrow)))
	for _, l := range lines[1:] {
		if l == "```" {
			continue
		}
		l = strings.TrimPrefix(l, "```")
		fmt.Fprintf(a.out, "%s%s\n", pad, l)
	}
	if len(m.buttons) > 0 {
		var bs []string
		for _, b := range m.buttons {
			bs = append(bs, "["+b.Label+"]")
		}
		fmt.Fprintf(a.out, "%s%s  %s\n", pad, strings.Join(bs, " "), a.dim(fmt.Sprintf("(/press %d %s)", m.n, m.buttons[0].Action)))
	}
}

// Post implements chatmodel.Chat.
func (a *Adapter) Post(_ context.Context, to chatmodel.Conversation, m chatmodel.Message) (chatmodel.MessageRef, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.down {
		return chatmodel.MessageRef{}, errChatDown
	}
	text := m.Text
	for i := len(m.Mentions) - 1; i >= 0; i-- {
		text = "@" + m.Mentions[i] + " " + text // console user ids are names
	}
	msg := &message{n: len(a.msgs) + 1, thread: to.Thread, text: text, author: "groundcrew", at: a.opts.Now(), buttons: m.Buttons, bot: true, channel: to.Channel}
	if m.Role == chatmodel.RoleRoot && m.RunID != "" {
		a.lastRun = m.RunID
	}
	a.msgs = append(a.msgs, msg)
	a.printMessage(msg, false)
	if m.Link != nil {
		fmt.Fprintf(a.out, "    %s %s\n", a.dim("🔗 "+m.Link.Label+":"), m.Link.URL)
	}
	if m.Detail != "" {
		fmt.Fprintf(a.out, "    %s\n", strings.ReplaceAll(m.Detail, "\n", "\n    "))
	}
	for _, f := range m.Files {
		fmt.Fprintf(a.out, "    %s\n", a.writeFile(f))
	}
	return chatmodel.MessageRef{Platform: "console", Channel: to.Channel, Thread: to.Thread, ID: a.refID(msg.n)}, nil
}

// Update implements chatmodel.Chat.
func (a *Adapter) Update(_ context.Context, ref chatmodel.MessageRef, m chatmodel.Message) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.down {
		return errChatDown
	}
	session, num, _ := strings.Cut(ref.ID, ".")
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 {
		return fmt.Errorf("console: no message %q", ref.ID)
	}
	if session != a.session || n > len(a.msgs) {
		// A message from an earlier session: the terminal cannot edit it,
		// so its new version is shown once as a new message, and later
		// updates edit that copy (not one more copy per update).
		shown := a.shownCopy(ref.ID)
		if shown == nil {
			msg := &message{n: len(a.msgs) + 1, thread: ref.Thread, text: m.Text, author: "groundcrew", at: a.opts.Now(), buttons: m.Buttons, bot: true, ref: ref.ID}
			a.msgs = append(a.msgs, msg)
			a.printMessage(msg, false)
			return nil
		}
		n = shown.n
	}
	msg := a.msgs[n-1]
	if msg.text == m.Text && len(msg.buttons) == len(m.Buttons) {
		return nil
	}
	// A terminal cannot edit in place: show the first line and what changed.
	old := map[string]bool{}
	for _, l := range strings.Split(msg.text, "\n")[1:] {
		old[l] = true
	}
	lines := strings.Split(m.Text, "\n")
	shown := []string{lines[0]}
	for _, l := range lines[1:] {
		if !old[l] {
			shown = append(shown, l)
		}
	}
	msg.text, msg.buttons = m.Text, m.Buttons
	a.printMessage(&message{n: msg.n, thread: msg.thread, text: strings.Join(shown, "\n"), buttons: m.Buttons}, true)
	return nil
}

// shownCopy is this session's copy of an earlier session's message.
func (a *Adapter) shownCopy(id string) *message {
	for i := len(a.msgs) - 1; i >= 0; i-- {
		if a.msgs[i].ref == id {
			return a.msgs[i]
		}
	}
	return nil
}

// Ephemeral implements chatmodel.Chat.
func (a *Adapter) Ephemeral(_ context.Context, to chatmodel.Conversation, u chatmodel.User, m chatmodel.Message) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	lines := strings.Split(a.render(m.Text), "\n")
	tag := ""
	var msg *message
	if len(m.Buttons) > 0 {
		msg = &message{n: len(a.msgs) + 1, thread: to.Thread, text: m.Text, author: "groundcrew", at: a.opts.Now(), buttons: m.Buttons, bot: true, only: u.Name}
		a.msgs = append(a.msgs, msg)
		tag = a.dim(fmt.Sprintf("#%d", msg.n)) + " "
	}
	fmt.Fprintf(a.out, "%s %s%s\n", a.dim("(only @"+u.Name+" sees this)"), tag, lines[0])
	for _, l := range lines[1:] {
		fmt.Fprintf(a.out, "  %s\n", l)
	}
	if msg != nil {
		var bs []string
		for _, b := range msg.buttons {
			bs = append(bs, "["+b.Label+"]")
		}
		fmt.Fprintf(a.out, "  %s  %s\n", strings.Join(bs, " "), a.dim(fmt.Sprintf("(/press %d %s)", msg.n, msg.buttons[0].Action)))
	}
	return nil
}

// Symbol implements chatmodel.ReactionHints: the reactions of chatutil.Reactions.
func (a *Adapter) Symbol(i chatmodel.Intent) string { return chatutil.Symbol(i) }

// GroupMembers implements chatmodel.GroupResolver from the configured groups.
func (a *Adapter) GroupMembers(_ context.Context, group string) ([]string, error) {
	members, ok := a.cfg.Groups[group]
	if !ok {
		return nil, fmt.Errorf("console group %q is not configured (chat.console.groups): %w", group, chatmodel.ErrNotFound)
	}
	return members, nil
}

// ReadThread implements chatmodel.ThreadReader.
func (a *Adapter) ReadThread(_ context.Context, c chatmodel.Conversation) ([]chatmodel.ThreadMessage, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []chatmodel.ThreadMessage
	for _, m := range a.msgs {
		if m.only != "" {
			continue // seen by one person, not part of the thread
		}
		if a.refID(m.n) == c.Thread || m.thread == c.Thread {
			out = append(out, chatmodel.ThreadMessage{Time: m.at, Author: chatmodel.User{ID: m.author, Name: m.author}, Text: m.text, Bot: m.bot})
		}
	}
	return out, nil
}

// Run implements the adapter's receive loop: one line per command until
// end of input or ctx ends. It returns nil at end of input. A line is read
// only once the one before it was handled (no read-ahead), so what reads
// the input (serve's replicas: cmd/groundcrew/standbyinput.go) knows when
// a line is taken to be run.
func (a *Adapter) Run(ctx context.Context, h chatmodel.Handler) error {
	lines := make(chan string)
	next := make(chan struct{}, 1)
	errc := make(chan error, 1)
	next <- struct{}{}
	go func() {
		rd := bufio.NewReaderSize(a.in, 64*1024)
		for n := 1; ; n++ {
			select {
			case <-next:
			case <-ctx.Done():
				return
			}
			line, long, err := readLine(rd, MaxLineBytes)
			if long {
				// Refused, never fatal: the rest of the input still counts.
				line = fmt.Sprintf("%s%d", longLine, n)
			}
			if err != nil && line == "" {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				errc <- err
				close(lines)
				return
			}
			select {
			case lines <- line:
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case line, ok := <-lines:
			if !ok {
				return <-errc
			}
			if ctx.Err() != nil {
				return nil // this session ended while the line was read: it is not run
			}
			if n, ok := strings.CutPrefix(line, longLine); ok {
				a.say("⚠️ input line %s is longer than %d KiB, the limit for one line; it was ignored", n, MaxLineBytes>>10)
			} else {
				a.handleLine(ctx, h, line)
			}
			if a.opts.AfterLine != nil {
				a.opts.AfterLine()
			}
			next <- struct{}{}
		}
	}
}

// MaxLineBytes is the longest input line read; a longer line is refused
// with a message and the rest of the input is read on.
const MaxLineBytes = 64 << 10

// longLine marks a refused line on the way to the handler loop (a NUL
// never survives handleLine's trimming of a real line as a prefix).
const longLine = "\x00long line "

// readLine reads one line without its line break. A line longer than max
// is read to its end and dropped (long is true), so memory stays bounded.
func readLine(rd *bufio.Reader, max int) (line string, long bool, err error) {
	var buf []byte
	for {
		chunk, isPrefix, err := rd.ReadLine()
		if !long {
			if len(buf)+len(chunk) > max {
				long, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err != nil {
			return string(buf), long, err
		}
		if !isPrefix {
			return string(buf), long, nil
		}
	}
}

var reactRe = regexp.MustCompile(`^(\+|-)?:([a-z0-9_+\-]+):\s+#?(\S+)$`)

func (a *Adapter) handleLine(ctx context.Context, h chatmodel.Handler, line string) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	if strings.HasPrefix(line, "# ") || line == "#" {
		if a.opts.Echo {
			fmt.Fprintf(a.out, "\n%s\n", a.dim(line))
		}
		return
	}
	a.mu.Lock()
	user := a.user
	line = strings.ReplaceAll(line, "$RUN", a.lastRun)
	a.mu.Unlock()
	if a.opts.Echo {
		fmt.Fprintf(a.out, "\n%s %s\n", a.bold(user+">"), textmodel.Sanitize(line))
	}
	u := chatmodel.User{ID: user, Name: user}
	conv := chatmodel.Conversation{Platform: "console", Channel: a.currentChannel(), Thread: a.currentThread()}
	if a.answerForm(ctx, h, line) {
		return
	}
	fields := strings.Fields(line)
	switch {
	case fields[0] == "/runbook" || fields[0] == "/rb":
		text := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(line, fields[0]), " "))
		a.handle(ctx, h, chatmodel.Event{Kind: chatmodel.EventCommand, User: u, Conversation: conv, Text: text, Time: a.opts.Now()})
	case fields[0] == "/as":
		if len(fields) != 2 {
			a.say("usage: /as <user>   (users: %s)", strings.Join(a.cfg.Users, ", "))
			return
		}
		a.mu.Lock()
		a.user = strings.TrimPrefix(fields[1], "@")
		a.mu.Unlock()
		a.say("you are now @%s", strings.TrimPrefix(fields[1], "@"))
	case fields[0] == "/channel":
		if len(fields) != 2 {
			a.say("usage: /channel <#name>   (now in %s)", a.currentChannel())
			return
		}
		a.mu.Lock()
		a.channel, a.thread = "#"+strings.TrimPrefix(fields[1], "#"), ""
		a.mu.Unlock()
		a.say("now typing in %s", a.currentChannel())
	case fields[0] == "/react" || fields[0] == "/unreact":
		if len(fields) != 3 {
			a.say("usage: /react <message #|gate|manual> <emoji>   e.g. /react 7 ✅, /react gate :white_check_mark:")
			return
		}
		a.react(ctx, h, u, fields[1], fields[2], fields[0] == "/unreact")
	case reactRe.MatchString(line):
		m := reactRe.FindStringSubmatch(line)
		a.react(ctx, h, u, m[3], m[2], m[1] == "-")
	case fields[0] == "/press":
		if len(fields) != 3 {
			a.say("usage: /press <message #|gate|manual> <action>   e.g. /press 7 approve")
			return
		}
		a.press(ctx, h, u, fields[1], fields[2])
	case fields[0] == "/thread":
		a.mu.Lock()
		if len(fields) == 2 {
			n, _ := strconv.Atoi(strings.TrimPrefix(fields[1], "#"))
			a.thread = a.refID(n)
		} else {
			a.thread = ""
		}
		a.mu.Unlock()
		a.say("now typing in %s", map[bool]string{true: "the channel", false: "the thread of #" + strings.TrimPrefix(fields[len(fields)-1], "#")}[a.currentThread() == ""])
	case fields[0] == "/chat" && len(fields) == 2 && (fields[1] == "down" || fields[1] == "up"):
		a.mu.Lock()
		a.down = fields[1] == "down"
		a.mu.Unlock()
		a.say("chat is %s", map[bool]string{true: "down: posts and edits fail until /chat up", false: "up"}[fields[1] == "down"])
	case fields[0] == "/users":
		a.say("users: %s; groups: %s", strings.Join(a.cfg.Users, ", "), a.groupsText())
	case a.opts.Extra[fields[0]] != nil:
		a.say("%s", a.opts.Extra[fields[0]](fields[1:]))
	case fields[0] == "/help" || fields[0] == "help":
		a.say("%s", consoleHelp)
	case strings.HasPrefix(fields[0], "/"):
		a.say("unknown console command %s — /help lists them; bot commands start with /runbook", fields[0])
	default:
		a.mu.Lock()
		m := &message{n: len(a.msgs) + 1, thread: a.thread, text: line, author: user, at: a.opts.Now()}
		a.msgs = append(a.msgs, m)
		a.mu.Unlock()
	}
}

// errChatDown is what posts and edits return after /chat down.
var errChatDown = errors.New("console chat is down (/chat down): connection refused")

const consoleHelp = `console commands:
  /runbook <command>        talk to the bot (/runbook help)
  /as <user>                switch user
  /channel <#name>          type in another channel (channels: bindings)
  /react <#|gate|manual> ✅  react to a message (✅ approve/done, ❌ reject/failed, ⏭ skip); /unreact removes
  :white_check_mark: <#>    same, Slack style
  /press <#|gate|manual> <action>  press a button (approve, reject, done, skip, fail)
  /thread <#>               type in a message's thread (/thread alone: back to the channel)
  /users                    list users and groups
  /chat down|up             make posts and edits fail (a chat outage) / work again
  $RUN                      stands for the latest run id`

func (a *Adapter) groupsText() string {
	var gs []string
	for g, us := range a.cfg.Groups {
		gs = append(gs, g+"="+strings.Join(us, ","))
	}
	sort.Strings(gs)
	if len(gs) == 0 {
		return "none"
	}
	return strings.Join(gs, " ")
}

func (a *Adapter) say(format string, args ...any) {
	fmt.Fprintf(a.out, "%s\n", a.dim("  · "+fmt.Sprintf(format, args...)))
}

func (a *Adapter) currentChannel() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.channel
}

// channelOf is the channel a message was posted in.
func (a *Adapter) channelOf(m *message) string {
	if m.channel != "" {
		return m.channel
	}
	return a.cfg.Channel
}

func (a *Adapter) currentThread() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.thread
}

func (a *Adapter) handle(ctx context.Context, h chatmodel.Handler, ev chatmodel.Event) {
	if err := h.Handle(ctx, ev); err != nil {
		a.say("error: %v", err)
	}
}

// resolve finds a message by number or by role: "gate" is the latest
// message with an approve button, "manual" the latest with a done button.
func (a *Adapter) resolve(ref string) (*message, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	want := map[string]chatmodel.Intent{"gate": chatmodel.IntentApprove, "manual": chatmodel.IntentDone}[ref]
	if want != "" {
		for i := len(a.msgs) - 1; i >= 0; i-- {
			for _, b := range a.msgs[i].buttons {
				if b.Action == want {
					return a.msgs[i], true
				}
			}
		}
		return nil, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(ref, "#"))
	if err != nil || n < 1 || n > len(a.msgs) {
		return nil, false
	}
	return a.msgs[n-1], true
}

func (a *Adapter) react(ctx context.Context, h chatmodel.Handler, u chatmodel.User, ref, emoji string, removed bool) {
	m, ok := a.resolve(ref)
	if !ok {
		a.say("no message %s", ref)
		return
	}
	emoji = strings.Trim(emoji, ":")
	intent := chatutil.IntentOf(emoji)
	if name := chatutil.Name(intent); name != "" {
		emoji = name
	}
	verb := "reacted"
	if removed {
		verb = "removed"
	}
	a.say("@%s %s :%s: on #%d", u.Name, verb, emoji, m.n)
	a.handle(ctx, h, chatmodel.Event{Kind: chatmodel.EventReaction, User: u, Intent: intent, Removed: removed,
		Conversation: chatmodel.Conversation{Platform: "console", Channel: a.channelOf(m), Thread: m.thread},
		Message:      chatmodel.MessageRef{Platform: "console", Channel: a.channelOf(m), Thread: m.thread, ID: a.id(m)}, Time: a.opts.Now()})
}

func (a *Adapter) press(ctx context.Context, h chatmodel.Handler, u chatmodel.User, ref, action string) {
	m, ok := a.resolve(ref)
	if !ok {
		a.say("no message %s", ref)
		return
	}
	var btn *chatmodel.Button
	for i := range m.buttons {
		if strings.EqualFold(string(m.buttons[i].Action), action) || strings.EqualFold(m.buttons[i].Label, action) {
			btn = &m.buttons[i]
		}
	}
	if btn == nil {
		a.say("message #%d has no %q button", m.n, action)
		return
	}
	if m.only != "" && m.only != u.Name {
		a.say("message #%d is shown to @%s only", m.n, m.only)
		return
	}
	a.say("@%s pressed [%s] on #%d", u.Name, btn.Label, m.n)
	a.handle(ctx, h, chatmodel.Event{Kind: chatmodel.EventButton, User: u, Intent: btn.Action, Value: btn.Value,
		Conversation: chatmodel.Conversation{Platform: "console", Channel: a.channelOf(m), Thread: m.thread},
		Message:      chatmodel.MessageRef{Platform: "console", Channel: a.channelOf(m), Thread: m.thread, ID: a.id(m)}, Time: a.opts.Now()})
}

// writeNew writes data to a new file in dir: name, or name-2, name-3, …
// when it exists (two digests in one minute each keep their chart; the
// path printed under a message always shows that message's file).
func writeNew(dir, name string, data []byte) (string, error) {
	ext := filepath.Ext(name)
	base := strings.TrimSuffix(name, ext)
	for i := 1; i <= 100; i++ {
		path := filepath.Join(dir, name)
		if i > 1 {
			path = filepath.Join(dir, fmt.Sprintf("%s-%d%s", base, i, ext))
		}
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("creating %s: %w", path, err)
		}
		_, err = fh.Write(data)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", fmt.Errorf("writing %s: %w", path, err)
		}
		return path, nil
	}
	return "", fmt.Errorf("%s and 99 numbered copies exist in %s", name, dir)
}

// writeFile writes a message's file to FilesDir and says where (or why
// not: the message stands without it).
func (a *Adapter) writeFile(f chatmodel.File) string {
	dir := a.opts.FilesDir
	if dir == "" {
		dir = os.TempDir()
	}
	name := filepath.Base(filepath.Clean("/" + f.Name))
	if name == "/" || name == "." {
		name = "file"
	}
	path, err := writeNew(dir, name, f.Data)
	if err != nil {
		return fmt.Sprintf("📎 %s not written: %v", name, err)
	}
	if f.Alt != "" {
		return fmt.Sprintf("📎 %s — %s", path, f.Alt)
	}
	return "📎 " + path
}

// syncWriter serialises writes to the terminal: the prompt's own lines and
// the engine's posts (from its workers and the outbox) are written from
// different goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
