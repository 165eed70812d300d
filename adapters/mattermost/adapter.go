// Package mattermost connects groundcrew to a Mattermost server: it receives
// the /runbook slash command and button callbacks over HTTP, reactions over
// the WebSocket API, and posts run messages as the bot account through the
// REST API (Client4).
//
// Design notes:
//   - Run messages are always posted by the bot account, never through the
//     command's response_url (which would post as the invoking user).
//   - Button callbacks are unsigned by Mattermost, so each button carries an
//     HMAC over post id, thread, action and value in its (hidden) context.
//   - The WebSocket does not replay events missed while disconnected, so every
//     message the adapter posted in the last ReactionWindow is "watched": after
//     each (re)connect its reactions are re-read and differences are delivered
//     as ordinary reaction events, with the same stable ids as live events, so
//     the engine's dedupe drops what it has already seen.
package mattermost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mattermost/mattermost/server/public/model"

	"github.com/groundcrew/groundcrew/adapters/chatutil"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// Platform is the platform name put in Conversations and MessageRefs.
const Platform = "mattermost"

// Interface checks.
var (
	_ chatmodel.Chat          = (*Adapter)(nil)
	_ chatmodel.GroupResolver = (*Adapter)(nil)
	_ chatmodel.ThreadReader  = (*Adapter)(nil)
)

// Adapter is the Mattermost chat adapter. All methods are safe for
// concurrent use. Create it with New, mount HTTPHandler on the bot's HTTP
// server and call Run.
type Adapter struct {
	cfg    resolved
	client *model.Client4
	log    *slog.Logger
	now    func() time.Time

	retry   retryPolicy
	backoff backoffPolicy
	dialer  *websocket.Dialer
	// ackWait is how long the HTTP endpoints wait for Handle before
	// answering, so that ephemeral replies can go into the HTTP answer.
	ackWait time.Duration
	// ackGrace is how long to keep collecting ephemeral replies after
	// Handle returned.
	ackGrace time.Duration
	// ephemeralRecheck is how long a 403 from CreatePostEphemeral is
	// remembered before the API is tried again (a permission granted
	// meanwhile then takes effect without a restart).
	ephemeralRecheck time.Duration

	queue        channelQueue
	watches      *watchSet
	interactions interactions
	reconcileCh  chan struct{}

	mu          sync.Mutex // guards the fields below
	handler     chatmodel.Handler
	handlerCtx  context.Context
	botID       string
	botUsername string
	teamID      string
	siteURL     string // the server's public URL, for permalinks
	extraToken  string // token of the command registered by the adapter
	channelIDs  map[string]string
	users       map[string]cachedUser
	noEphemeral time.Time // until then, the bot lacks create_post_ephemeral
	connected   bool
	// fallbackSent remembers the public stand-ins for ephemeral messages
	// (key: channel, thread, user, text) so one person gets one post per
	// refusal, not one per reaction (✅ then 👍).
	fallbackSent map[string]time.Time
	// triggers are the trigger ids of recent commands (dialog.go).
	trig triggers
	// formRefresher answers a dialog's refresh (SetFormRefresher).
	formRefresher chatmodel.FormRefresher
}

// New checks the config, reads the secrets and returns an adapter. It does
// not contact the server: Run does.
func New(cfg Config, opts Options) (*Adapter, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.ReactionWindow <= 0 {
		opts.ReactionWindow = 24 * time.Hour
	}
	client := model.NewAPIv4Client(r.url)
	client.HTTPClient = opts.HTTPClient
	client.SetToken(r.botToken)
	a := &Adapter{
		cfg:              r,
		client:           client,
		log:              opts.Logger.With("adapter", Platform),
		now:              time.Now,
		retry:            defaultRetry,
		backoff:          defaultBackoff,
		dialer:           &websocket.Dialer{HandshakeTimeout: 15 * time.Second, Proxy: http.ProxyFromEnvironment},
		ackWait:          2 * time.Second,
		ackGrace:         150 * time.Millisecond,
		ephemeralRecheck: 10 * time.Minute,
		watches:          newWatchSet(opts.ReactionWindow, 5000),
		reconcileCh:      make(chan struct{}, 1),
		channelIDs:       map[string]string{},
		users:            map[string]cachedUser{},
		fallbackSent:     map[string]time.Time{},
	}
	return a, nil
}

// Connected reports whether the WebSocket is connected (readiness).
func (a *Adapter) Connected() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.connected
}

// Run connects to Mattermost (identifying the bot, resolving the team and,
// if configured, registering /runbook), then listens on the WebSocket for
// reactions until ctx ends, reconnecting with backoff. It returns nil when
// ctx is cancelled and an error only for problems retrying cannot fix (a
// rejected token, an unknown team).
func (a *Adapter) Run(ctx context.Context, h chatmodel.Handler) error {
	if h == nil {
		return errors.New("mattermost: Run needs a handler")
	}
	a.mu.Lock()
	a.handler, a.handlerCtx = h, ctx
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.handler, a.handlerCtx = nil, nil
		a.connected = false
		a.mu.Unlock()
	}()
	if err := a.start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	return a.listen(ctx)
}

// start identifies the bot and prepares the team, retrying while the server
// is unreachable or failing, and giving up on answers that will not change.
func (a *Adapter) start(ctx context.Context) error {
	wait := a.backoff.min
	for {
		err := a.startOnce(ctx)
		if err == nil {
			return nil
		}
		var apiErr *APIError
		if !errors.As(err, &apiErr) || !apiErr.Retryable() {
			return err
		}
		a.log.Warn("mattermost not reachable yet, retrying", "err", err, "wait", wait)
		if !sleepCtx(ctx, wait) {
			return ctx.Err()
		}
		wait = min(wait*2, a.backoff.max)
	}
}

func (a *Adapter) startOnce(ctx context.Context) error {
	var me *model.User
	err := a.call(ctx, "identifying the bot (GET /users/me)", true, func(ctx context.Context) (*model.Response, error) {
		var resp *model.Response
		var err error
		me, resp, err = a.client.GetMe(ctx, "")
		return resp, err
	})
	if err != nil {
		if s := statusOf(err); s == http.StatusUnauthorized || s == http.StatusForbidden {
			return fmt.Errorf("mattermost rejected the bot token (chat.mattermost.bot_token): %w", err)
		}
		return err
	}
	a.mu.Lock()
	a.botID, a.botUsername = me.Id, me.Username
	a.users[me.Id] = cachedUser{name: me.Username, bot: true, at: time.Now()}
	a.mu.Unlock()

	// Permalinks should use the URL people open, which may differ from the
	// one the bot uses (an internal address). Best effort.
	cctx, cancel := context.WithTimeout(ctx, a.callTimeout())
	if cc, _, err := a.client.GetClientConfig(cctx, ""); err == nil && cc["SiteURL"] != "" {
		a.mu.Lock()
		a.siteURL = strings.TrimRight(cc["SiteURL"], "/")
		a.mu.Unlock()
	}
	cancel()

	if a.cfg.team != "" {
		var team *model.Team
		err := a.call(ctx, fmt.Sprintf("looking up team %q", a.cfg.team), true, func(ctx context.Context) (*model.Response, error) {
			var resp *model.Response
			var err error
			team, resp, err = a.client.GetTeamByName(ctx, a.cfg.team, "")
			return resp, err
		})
		if err != nil {
			if s := statusOf(err); s == http.StatusNotFound || s == http.StatusForbidden {
				return fmt.Errorf("chat.mattermost.team: team %q not found or the bot @%s is not a member: %w", a.cfg.team, me.Username, err)
			}
			return err
		}
		a.mu.Lock()
		a.teamID = team.Id
		a.mu.Unlock()
	}
	if a.cfg.register {
		if err := a.registerCommand(ctx); err != nil {
			return err
		}
	}
	a.log.Info("connected to mattermost", "bot", me.Username, "team", a.cfg.team)
	return nil
}

// BotUserID returns the bot account's user id, known once Run has started.
func (a *Adapter) BotUserID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.botID
}

// botName is the bot's username, for "/invite @…" hints.
func (a *Adapter) botName() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.botUsername == "" {
		return "groundcrew"
	}
	return a.botUsername
}

// currentHandler returns the handler given to Run and the context to call it
// with, or nil when Run is not running.
func (a *Adapter) currentHandler() (chatmodel.Handler, context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.handler, a.handlerCtx
}

// deliver hands one event to the engine.
func (a *Adapter) deliver(e chatmodel.Event) error {
	h, ctx := a.currentHandler()
	if h == nil {
		return errNotRunning
	}
	if err := a.identify(ctx, &e); err != nil {
		return err
	}
	a.log.Debug("delivering event", "kind", e.Kind, "id", e.ID, "user", e.User.Name, "message", e.Message.ID)
	if err := h.Handle(ctx, e); err != nil {
		a.log.Error("engine could not handle event", "kind", e.Kind, "id", e.ID, "err", err)
		return err
	}
	return nil
}

var errNotRunning = errors.New("mattermost adapter is not running")

// errForgedName refuses a request whose user name is not its user id's.
var errForgedName = errors.New("the request's user name does not match its user id")

// identify replaces the event's user by what the server says of its id:
// the name shown is the id's username (never a name the request carries),
// and Kind flags bots, deactivated and unknown accounts, which the engine
// never lets act. A request whose name disagrees with its id (a forged
// button callback: signed context, someone else's user_name) is refused
// and logged.
func (a *Adapter) identify(ctx context.Context, e *chatmodel.Event) error {
	claimed := e.User.Name
	e.User = chatmodel.User{ID: e.User.ID}
	if e.User.ID == "" {
		e.User.Kind = chatmodel.UserUnknown
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u, err := a.UserByID(lctx, e.User.ID)
	if err != nil {
		// Without the server's word the user may not act (Kind unknown);
		// commands that only read still work.
		a.log.Warn("could not look up the user of an event; it cannot vote", "user", e.User.ID, "err", err)
		e.User.Kind = chatmodel.UserUnknown
		return nil
	}
	e.User = u
	if claimed != "" && u.Kind != chatmodel.UserUnknown && !strings.EqualFold(strings.TrimPrefix(claimed, "@"), u.Name) {
		a.log.Warn("refused a request: its user name does not match its user id", "kind", e.Kind, "user", e.User.ID, "username", u.Name, "claimed", claimed)
		return errForgedName
	}
	return nil
}

// ResolveUser implements chatmodel.IdentityResolver: a username ("alice",
// "@alice") or a user id, looked up on the server. It wraps chatmodel.ErrNotFound
// when the server has no such user.
func (a *Adapter) ResolveUser(ctx context.Context, nameOrID string) (chatmodel.User, error) {
	name := strings.TrimPrefix(strings.TrimSpace(nameOrID), "@")
	if model.IsValidId(name) {
		us, err := a.lookupUsers(ctx, []string{name})
		if err != nil {
			return chatmodel.User{}, err
		}
		if u, ok := us[name]; ok {
			return u.user(name), nil
		}
	}
	var got *model.User
	err := a.call(ctx, "looking up user "+name, true, func(ctx context.Context) (*model.Response, error) {
		var resp *model.Response
		var err error
		got, resp, err = a.client.GetUserByUsername(ctx, strings.ToLower(name), "")
		return resp, err
	})
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound {
			return chatmodel.User{}, fmt.Errorf("mattermost user %q: %w", name, chatmodel.ErrNotFound)
		}
		return chatmodel.User{}, err
	}
	cu := userOf(got)
	a.mu.Lock()
	a.users[got.Id] = cu
	a.mu.Unlock()
	return cu.user(got.Id), nil
}

// UserByID implements chatmodel.IdentityResolver: the server's record of
// the id, by the look-up that names the user of every event (cached for
// userTTL; ctx may ask for a fresh answer with chatmodel.Fresh). An id the
// server does not know is returned with Kind chatmodel.UserUnknown.
func (a *Adapter) UserByID(ctx context.Context, id string) (chatmodel.User, error) {
	if id == "" {
		return chatmodel.User{Kind: chatmodel.UserUnknown}, nil
	}
	us, err := a.lookupUsers(ctx, []string{id})
	if err != nil {
		return chatmodel.User{}, err
	}
	u, ok := us[id]
	if !ok {
		return chatmodel.User{ID: id, Kind: chatmodel.UserUnknown}, nil
	}
	return u.user(id), nil
}

// userTTL is how long what the server said of a user is trusted: a user
// deactivated or renamed counts as such at most this long after.
const userTTL = 5 * time.Minute

// cachedUser is what the adapter remembers of a user.
type cachedUser struct {
	at      time.Time
	name    string
	bot     bool
	deleted bool
	// email is the user's e-mail when the server says it is verified ("":
	// none, not verified, or hidden from the bot by the privacy settings).
	email string
}

// user is the engine's view of a cached user.
func (u cachedUser) user(id string) chatmodel.User {
	out := chatmodel.User{ID: id, Name: u.name}
	switch {
	case u.bot:
		out.Kind = chatmodel.UserBot
	case u.deleted:
		out.Kind = chatmodel.UserDeactivated
	}
	return out
}

func userOf(u *model.User) cachedUser {
	cu := cachedUser{name: u.Username, bot: u.IsBot, deleted: u.DeleteAt != 0, at: time.Now()}
	if u.EmailVerified {
		cu.email = u.Email
	}
	return cu
}

// VerifiedEmail implements chatmodel.EmailResolver: the user's e-mail when
// the server says it is verified (the bot sees it when it is an admin or
// the privacy settings show e-mails), "" otherwise.
func (a *Adapter) VerifiedEmail(ctx context.Context, userID string) (string, error) {
	us, err := a.lookupUsers(ctx, []string{userID})
	if err != nil {
		return "", err
	}
	return us[userID].email, nil
}

// userName returns the username of a user id, cached; "" if unknown.
func (a *Adapter) userName(ctx context.Context, id string) string {
	us, err := a.lookupUsers(ctx, []string{id})
	if err != nil {
		a.log.Warn("could not look up user", "user", id, "err", err)
		return ""
	}
	return us[id].name
}

// lookupUsers returns the users with the given ids, from the cache or with
// one API call for the missing ones.
func (a *Adapter) lookupUsers(ctx context.Context, ids []string) (map[string]cachedUser, error) {
	out := make(map[string]cachedUser, len(ids))
	var missing []string
	fresh := chatmodel.WantsFresh(ctx)
	a.mu.Lock()
	for _, id := range ids {
		if u, ok := a.users[id]; ok && !fresh && time.Since(u.at) < userTTL {
			out[id] = u
		} else if id != "" {
			missing = append(missing, id)
		}
	}
	a.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	var got []*model.User
	err := a.call(ctx, fmt.Sprintf("looking up %d users", len(missing)), true, func(ctx context.Context) (*model.Response, error) {
		var resp *model.Response
		var err error
		got, resp, err = a.client.GetUsersByIds(ctx, missing)
		return resp, err
	})
	if err != nil {
		return out, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, u := range got {
		a.users[u.Id] = userOf(u)
		out[u.Id] = a.users[u.Id]
	}
	return out, nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Symbol implements chatmodel.ReactionHints: the reactions of chatutil.Reactions
// (every advertised name exists on Mattermost 11.1).
func (a *Adapter) Symbol(i chatmodel.Intent) string { return chatutil.Symbol(i) }
