// Package slack connects groundcrew to Slack: it receives "/runbook"
// commands, reactions and button presses (over Socket Mode or signed HTTP
// requests) and hands them to the engine as chatmodel.Events, and it implements
// chatmodel.Chat, chatmodel.GroupResolver and chatmodel.ThreadReader on the Slack Web API.
//
// Outbound writes go through one FIFO lane per channel that spaces them about
// one second apart (chat.postMessage's per-channel limit) and waits out every
// 429 Retry-After, so a message is never dropped: a write that ultimately
// fails returns its error to the engine, whose durable outbox retries it.
//
// Inbound events are acknowledged at once and handed to the engine in arrival
// order by a single dispatcher goroutine, so acks never wait for the engine.
package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/groundcrew/groundcrew/adapters/chatutil"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// Platform is the value of Conversation.Platform and MessageRef.Platform for
// Slack.
const Platform = "slack"

// Compile-time checks of the ports the adapter implements.
var (
	_ chatmodel.Chat          = (*Adapter)(nil)
	_ chatmodel.GroupResolver = (*Adapter)(nil)
	_ chatmodel.ThreadReader  = (*Adapter)(nil)
)

// Options are the non-config dependencies of an Adapter. The zero value is
// usable.
type Options struct {
	// Logger receives operational logs (default: discard). Secrets are never
	// logged.
	Logger *slog.Logger
	// APIURL overrides the Slack Web API base URL, ending in "/" (tests).
	APIURL string
	// HTTPClient makes the Web API calls (default: a client with a 30s timeout).
	HTTPClient *http.Client
	// PostInterval is the minimum gap between two writes to one channel
	// (default 1s, Slack's chat.postMessage limit per channel).
	PostInterval time.Duration
	// Now returns the current time (default time.Now).
	Now func() time.Time
}

// Adapter is the Slack chat adapter. It is safe for concurrent use. Call Run
// once; in http mode also mount HTTPHandler on the bot's HTTP server.
type Adapter struct {
	// bodyTimeout bounds reading a request body on the HTTP endpoints
	// (0: httpguard.BodyTimeout).
	bodyTimeout time.Duration

	cfg   Config
	api   *slackapi.Client
	opts  Options
	log   *slog.Logger
	now   func() time.Time
	retry *retrier
	lanes *lanes
	dir   *directory
	inbox *inbox

	// connected is true while events can arrive (readiness).
	connected atomic.Bool
	// refusedActions counts the block_actions beyond the first of a payload
	// (refused: Slack sends one per click).
	refusedActions atomic.Int64

	mu        sync.Mutex
	botUserID string
	botName   string
	replies   map[string]string       // message ref key -> repliesKey of what was last posted for it
	responses map[string]*responseURL // channel/user -> response_url of their last command there

	// responseURLOK accepts a command's response_url (nil:
	// validResponseURL; tests accept their fake's).
	responseURLOK func(string) bool

	// formChecker checks a submitted form before it is taken (nil: not).
	formChecker chatmodel.FormChecker
	// views refreshes open modals when their target changes (refresh.go).
	views viewRefreshes
}

// New checks cfg, resolves its secrets and returns an adapter. It makes no
// network call: Run checks the bot token with auth.test.
func New(cfg Config, opts Options) (*Adapter, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.PostInterval <= 0 {
		opts.PostInterval = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger.With("chat", Platform)
	a := &Adapter{
		cfg:       cfg,
		opts:      opts,
		log:       log,
		now:       opts.Now,
		inbox:     newInbox(),
		replies:   map[string]string{},
		responses: map[string]*responseURL{},
	}
	a.api = a.newAPI()
	server := opts.APIURL
	if server == "" {
		server = slackapi.APIURL
	}
	a.retry = newRetrier(log, server)
	a.lanes = newLanes(opts.PostInterval, a.retry)
	a.dir = newDirectory(a.api, a.retry, cfg.UsergroupCacheTTL, opts.Now, log)
	return a, nil
}

// newAPI builds a Web API client with the bot token (and the app token, used
// only by apps.connections.open in socket mode).
func (a *Adapter) newAPI() *slackapi.Client {
	o := []slackapi.Option{
		slackapi.OptionHTTPClient(a.opts.HTTPClient),
		slackapi.OptionLog(slogOutput{a.log}),
	}
	if a.cfg.AppToken.IsSet() {
		o = append(o, slackapi.OptionAppLevelToken(a.cfg.AppToken.Value()))
	}
	if a.opts.APIURL != "" {
		o = append(o, slackapi.OptionAPIURL(a.opts.APIURL))
	}
	return slackapi.New(a.cfg.BotToken.Value(), o...)
}

// Mode returns the configured transport ("socket" or "http").
func (a *Adapter) Mode() string { return a.cfg.Mode }

// Connected reports whether events can arrive: the Socket Mode connection
// is up, or (http mode) the bot token was accepted (readiness).
func (a *Adapter) Connected() bool { return a.connected.Load() }

// Run checks the bot token (auth.test, which also gives the bot's own user id
// so its own reactions are ignored), then delivers inbound events to h until
// ctx ends. In socket mode it also owns the WebSocket connection, reconnecting
// with backoff. It returns nil on cancellation and an error only when Slack
// rejects the tokens.
func (a *Adapter) Run(ctx context.Context, h chatmodel.Handler) error {
	if h == nil {
		return errors.New("slack: run: nil handler")
	}
	if err := a.authTest(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer a.connected.Store(false)
	var wg sync.WaitGroup
	wg.Go(func() { a.inbox.run(ctx, func(e chatmodel.Event) { a.dispatch(ctx, h, e) }) })
	stopRefreshes := a.startRefreshes(ctx)
	var err error
	if a.cfg.Mode == ModeSocket {
		err = a.runSocket(ctx)
	} else {
		a.log.Info("slack http mode: waiting for requests on /slack/commands, /slack/events, /slack/interactivity")
		a.connected.Store(true)
		<-ctx.Done()
	}
	cancel()
	wg.Wait()
	stopRefreshes()
	if n := a.inbox.len(); n > 0 {
		a.log.Warn("slack: events acknowledged but not handled at shutdown", "count", n)
	}
	return err
}

// authTest calls auth.test, retrying transient failures until ctx ends.
func (a *Adapter) authTest(ctx context.Context) error {
	var resp *slackapi.AuthTestResponse
	err := a.retry.do(ctx, "auth.test", retryForever, func(ctx context.Context) error {
		var err error
		resp, err = a.api.AuthTestContext(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("slack: checking bot_token with auth.test: %w", err)
	}
	a.mu.Lock()
	a.botUserID, a.botName = resp.UserID, resp.User
	a.mu.Unlock()
	a.log.Info("slack: authenticated", "bot_user", resp.User, "bot_user_id", resp.UserID, "team", resp.Team)
	return nil
}

// RefusedActions is how many button actions were refused because they
// came beyond the first in one block_actions payload.
func (a *Adapter) RefusedActions() int64 { return a.refusedActions.Load() }

// selfName is the bot's handle, for "/invite @…" hints.
func (a *Adapter) selfName() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.botName == "" {
		return "groundcrew"
	}
	return a.botName
}

func (a *Adapter) selfID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.botUserID
}

// dispatch hands one event to the engine: it drops the bot's own events and
// names the event's user from its id.
func (a *Adapter) dispatch(ctx context.Context, h chatmodel.Handler, e chatmodel.Event) {
	if self := a.selfID(); self != "" && e.User.ID == self {
		a.log.Debug("slack: ignoring own event", "kind", e.Kind, "id", e.ID)
		return
	}
	a.identify(ctx, &e)
	if err := h.Handle(ctx, e); err != nil && ctx.Err() == nil {
		a.log.Error("slack: engine rejected event", "kind", e.Kind, "id", e.ID, "user", e.User.ID, "err", err)
	}
}

// identify replaces the event's user by what Slack says of its id: the
// person acting is the id Slack signed, the name shown is that id's handle
// (never a name from the payload, never the editable display name), and
// Kind flags bots, deactivated and unknown accounts, which the engine
// never lets act. A payload naming someone else than its id (a renamed
// user, Slack's legacy name field) acts for the id, under the id's
// handle: the account is asked about once more (a rename within the
// cache's hour shows at once) and the difference logged.
func (a *Adapter) identify(ctx context.Context, e *chatmodel.Event) {
	claimed := strings.TrimPrefix(e.User.Name, "@")
	e.User = chatmodel.User{ID: e.User.ID}
	if e.User.ID == "" {
		e.User.Kind = chatmodel.UserUnknown
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u, err := a.UserByID(lctx, e.User.ID)
	if err != nil {
		a.log.Warn("slack: could not look up the user of an event; it cannot vote", "user", e.User.ID, "err", err)
		e.User.Kind = chatmodel.UserUnknown
		return
	}
	if claimed != "" && u.Name != "" && !strings.EqualFold(claimed, u.Name) {
		if fresh, ferr := a.dir.refetchUser(lctx, e.User.ID); ferr == nil {
			u = fresh
		}
		if !strings.EqualFold(claimed, u.Name) {
			a.log.Info("slack: an event's payload names another user than its id; it acts for the id, under the id's handle",
				"kind", e.Kind, "id", e.ID, "user", u.ID, "username", u.Name, "payload_name", claimed)
		}
	}
	e.User = u
}

// ResolveUser implements chatmodel.IdentityResolver: a handle ("alice",
// "@alice") or a user id, looked up through users.list / users.info. It
// wraps chatmodel.ErrNotFound when Slack has no such user.
func (a *Adapter) ResolveUser(ctx context.Context, nameOrID string) (chatmodel.User, error) {
	name := strings.TrimPrefix(strings.TrimSpace(nameOrID), "@")
	if slackUserID.MatchString(name) {
		u, err := a.dir.user(ctx, name)
		if err == nil && u.Kind == chatmodel.UserUnknown {
			return chatmodel.User{}, fmt.Errorf("slack user %s: %w", name, chatmodel.ErrNotFound)
		}
		return u, err
	}
	return a.dir.userByName(ctx, name)
}

// VerifiedEmail implements chatmodel.EmailResolver: the address the
// account signs in with (needs the users:read.email scope; "" without it,
// and for Slack Connect users of another organisation).
func (a *Adapter) VerifiedEmail(ctx context.Context, userID string) (string, error) {
	return a.dir.email(ctx, userID)
}

// ChannelID implements chatmodel.ChannelResolver: "#name" to the
// channel's id (from the channels the bot can list), an id as it is; an
// unknown name wraps chatmodel.ErrNotFound.
func (a *Adapter) ChannelID(ctx context.Context, nameOrID string) (string, error) {
	return a.dir.channelID(ctx, nameOrID)
}

// UserByID implements chatmodel.IdentityResolver: users.info of the id,
// the look-up that names the user of every event (cached; ctx may ask for
// a fresh answer with chatmodel.Fresh). An id Slack does not know is
// returned with Kind chatmodel.UserUnknown.
func (a *Adapter) UserByID(ctx context.Context, id string) (chatmodel.User, error) {
	if id == "" {
		return chatmodel.User{Kind: chatmodel.UserUnknown}, nil
	}
	return a.dir.user(ctx, id)
}

// slogOutput lets slack-go's logger write to slog at debug level.
type slogOutput struct{ l *slog.Logger }

// Output implements slack-go's logger interface.
func (s slogOutput) Output(_ int, msg string) error {
	s.l.Debug(strings.TrimSpace(msg))
	return nil
}

// Symbol implements chatmodel.ReactionHints: the reactions of chatutil.Reactions.
func (a *Adapter) Symbol(i chatmodel.Intent) string { return chatutil.Symbol(i) }
