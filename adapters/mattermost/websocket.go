package mattermost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mattermost/mattermost/server/public/model"
)

// backoffPolicy bounds the WebSocket reconnect loop.
type backoffPolicy struct {
	min    time.Duration // first wait after a drop
	max    time.Duration // cap
	stable time.Duration // a connection that lived this long resets the wait
}

var defaultBackoff = backoffPolicy{min: time.Second, max: time.Minute, stable: time.Minute}

// errAuthFailed is returned when the server refuses the WebSocket
// authentication challenge.
var errAuthFailed = errors.New("websocket authentication refused")

// listen runs WebSocket sessions until ctx ends, reconnecting with
// exponential backoff and jitter.
func (a *Adapter) listen(ctx context.Context) error {
	wait := a.backoff.min
	for {
		started := time.Now()
		err := a.session(ctx)
		a.mu.Lock()
		a.connected = false
		a.mu.Unlock()
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(started) >= a.backoff.stable {
			wait = a.backoff.min
		}
		d := wait/2 + rand.N(wait/2+1) // jitter in [wait/2, wait]
		a.log.Warn("mattermost websocket disconnected, reconnecting", "err", err, "wait", d)
		if !sleepCtx(ctx, d) {
			return nil
		}
		wait = min(wait*2, a.backoff.max)
	}
}

// session runs one WebSocket connection until it drops or ctx ends. After
// the server's hello it re-reads the reactions of watched messages.
func (a *Adapter) session(ctx context.Context) error {
	ws, err := model.NewWebSocketClient4WithDialer(a.dialer, a.cfg.wsURL, a.cfg.botToken)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", a.cfg.wsURL, err)
	}
	ws.Listen()
	defer closeWS(ws)

	hello := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ws.PingTimeoutChannel:
			return errors.New("no ping from the server for over a minute")
		case r, ok := <-ws.ResponseChannel:
			if !ok {
				return listenError(ws)
			}
			if r.Status != model.StatusOk && r.Error != nil {
				if r.SeqReply == 1 { // the authentication challenge
					return fmt.Errorf("%w: %v", errAuthFailed, r.Error)
				}
				a.log.Warn("websocket request failed", "err", r.Error)
			}
		case ev, ok := <-ws.EventChannel:
			if !ok {
				return listenError(ws)
			}
			if ev.EventType() == model.WebsocketEventHello {
				if !hello {
					hello = true
					a.mu.Lock()
					a.connected = true
					a.mu.Unlock()
					a.log.Info("mattermost websocket connected")
					a.reconcile(ctx)
				}
				continue
			}
			a.handleWSEvent(ctx, ev)
		case <-a.reconcileCh:
			if hello {
				a.reconcile(ctx)
			}
		}
	}
}

// closeWS closes the client and drains its channels so its reader
// goroutine, which may be blocked on a full channel, can end.
func closeWS(ws *model.WebSocketClient) {
	ws.Close()
	events, responses := ws.EventChannel, ws.ResponseChannel
	for events != nil || responses != nil {
		select {
		case _, ok := <-events:
			if !ok {
				events = nil
			}
		case _, ok := <-responses:
			if !ok {
				responses = nil
			}
		}
	}
	select {
	case <-ws.PingTimeoutChannel:
	default:
	}
}

func listenError(ws *model.WebSocketClient) error {
	if ws.ListenError != nil {
		return fmt.Errorf("websocket closed: %w", ws.ListenError)
	}
	return errors.New("websocket closed by the server")
}

// handleWSEvent turns the events the bot cares about into engine events.
func (a *Adapter) handleWSEvent(ctx context.Context, ev *model.WebSocketEvent) {
	switch ev.EventType() {
	case model.WebsocketEventReactionAdded, model.WebsocketEventReactionRemoved:
		raw, _ := ev.GetData()["reaction"].(string)
		var r model.Reaction
		if err := json.Unmarshal([]byte(raw), &r); err != nil || r.PostId == "" {
			a.log.Warn("ignoring malformed reaction event", "err", err)
			return
		}
		channel := r.ChannelId
		if channel == "" && ev.GetBroadcast() != nil {
			// reaction_removed carries an empty channel_id.
			channel = ev.GetBroadcast().ChannelId
		}
		removed := ev.EventType() == model.WebsocketEventReactionRemoved
		a.onLiveReaction(ctx, &r, channel, removed)
	}
}
