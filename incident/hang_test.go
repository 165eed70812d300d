package incident_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/alertmanager"
	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/delivery/deliverytest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
)

// hungRig is the incident side as serve wires it — the Alertmanager
// receiver over HTTP, the incident manager, the bbolt store and the
// outbox posting from its own goroutine — with a chat that took the
// connection and never answers (no deadline either: CallTimeout is an
// hour, so a call that started blocks "forever" until Release).
type hungRig struct {
	db   *store.DB
	chat *deliverytest.Chat
	out  *delivery.Outbox
	m    *incident.Manager
	h    *incident.Handler
	srv  *httptest.Server
}

func newHungRig(t *testing.T) *hungRig {
	t.Helper()
	r := &hungRig{chat: &deliverytest.Chat{}}
	db, err := store.Open(t.TempDir()+"/gc.db", store.Options{})
	require.NoError(t, err)
	r.db = db
	r.out = delivery.New(delivery.Options{Chat: r.chat, Store: db, CallTimeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.out.Run(ctx) }()
	require.Eventually(t, r.out.Running, 5*time.Second, time.Millisecond)
	r.m, err = incident.New(incident.Options{Store: db, Chat: r.chat, Outbox: r.out, Platform: "slack"})
	require.NoError(t, err)
	r.h = &incident.Handler{M: r.m, Next: nopHandler{}}
	rc, err := alertmanager.NewReceiver(alertmanager.Options{Token: "tok", Sink: r.m, Targets: []string{"infra-prd"},
		Routes: []*alertmanager.Route{mustRoute(t, alertmanager.RouteConfig{Channel: "#incidents", Target: "infra-prd"})}})
	require.NoError(t, err)
	r.srv = httptest.NewServer(rc)
	t.Cleanup(func() {
		r.chat.Release()
		r.srv.Close()
		cancel()
		<-done
		r.m.Wait()
		_ = db.Close()
	})
	return r
}

type nopHandler struct{}

func (nopHandler) Handle(context.Context, chatmodel.Event) error { return nil }

func mustRoute(t *testing.T, c alertmanager.RouteConfig) *alertmanager.Route {
	t.Helper()
	r, errs := alertmanager.CompileRoute(0, c)
	require.Empty(t, errs)
	return r
}

// notify posts one Alertmanager notification and returns how long the
// answer took.
func (r *hungRig) notify(t *testing.T, status, group string, alerts ...string) time.Duration {
	t.Helper()
	return r.notifyCtx(t, nil, status, group, alerts...)
}

// notifyCtx is notify; a ctx that is done is an Alertmanager that gave up
// waiting before the answer (the request is handed to the receiver as it
// arrived, its answer unread).
func (r *hungRig) notifyCtx(t *testing.T, gone context.Context, status, group string, alerts ...string) time.Duration {
	t.Helper()
	type alert struct {
		Status      string            `json:"status"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		StartsAt    time.Time         `json:"startsAt"`
		Fingerprint string            `json:"fingerprint"`
	}
	msg := map[string]any{"version": "4", "groupKey": "{}:{alertname=\"" + group + "\"}", "status": status, "receiver": "groundcrew",
		"groupLabels": map[string]string{"alertname": group}, "commonLabels": map[string]string{"alertname": group}}
	var as []alert
	for _, a := range alerts {
		as = append(as, alert{Status: status, Labels: map[string]string{"alertname": group, "instance": a},
			Annotations: map[string]string{"summary": a + " is full"}, StartsAt: time.Date(2026, 3, 1, 4, 0, 0, 0, time.UTC), Fingerprint: a})
	}
	msg["alerts"] = as
	body, err := json.Marshal(msg)
	require.NoError(t, err)
	if gone != nil {
		req := httptest.NewRequestWithContext(gone, http.MethodPost, "/alertmanager", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer tok")
		rec := httptest.NewRecorder()
		r.srv.Config.Handler.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code)
		return 0
	}
	req, err := http.NewRequest(http.MethodPost, r.srv.URL, strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	took := time.Since(start)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return took
}

// TestHungChat_WebhookAnsweredAndPostedOnceReleased: chat hangs. Every
// notification — two new incidents, repeats, a change, a resolve — is
// answered at once; an acknowledgement and a listing are served
// meanwhile; nothing is in chat. When chat answers again each incident's
// root appears exactly once, with its buttons and its latest state, and
// the thread follows in order.
func TestHungChat_WebhookAnsweredAndPostedOnceReleased(t *testing.T) {
	r := newHungRig(t)
	ctx := context.Background()
	r.chat.Hang()

	var slowest time.Duration
	for _, n := range []func() time.Duration{
		func() time.Duration { return r.notify(t, "firing", "DiskFull", "worker-0") },
		func() time.Duration { return r.notify(t, "firing", "WorkerStalled", "worker-1") },
		func() time.Duration { return r.notify(t, "firing", "DiskFull", "worker-0") },
		func() time.Duration { return r.notify(t, "firing", "DiskFull", "worker-0", "worker-2") },
		func() time.Duration { return r.notify(t, "resolved", "WorkerStalled", "worker-1") },
	} {
		slowest = max(slowest, n())
	}
	t.Logf("slowest webhook answer with chat hung: %s", slowest)
	assert.Less(t, slowest, time.Second, "no notification waits for chat")
	require.Eventually(t, func() bool { return r.chat.Waiting() > 0 }, 5*time.Second, 5*time.Millisecond, "the outbox's goroutine is the one waiting")

	// Other inputs are served meanwhile.
	open, err := r.m.Open(ctx)
	require.NoError(t, err)
	require.Len(t, open, 1, "DiskFull is open, WorkerStalled resolved")
	disk := open[0]
	assert.Contains(t, r.m.ListText(open, incident.ListFilter{}, func(*incident.Incident) []*runmodel.Run { return nil }), "not in chat yet")
	start := time.Now()
	_, changed, err := r.m.Acknowledge(ctx, disk.ID, chatmodel.User{ID: "U2", Name: "bob"}, "command")
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Less(t, time.Since(start), time.Second, "an acknowledgement does not wait for chat")
	assert.Empty(t, r.chat.Posts())

	r.chat.Release()
	require.Eventually(t, func() bool { return len(r.out.Pending(ctx)) == 0 }, 10*time.Second, 10*time.Millisecond, "the outbox empties")
	posts := r.chat.Posts()
	var roots []deliverytest.Posted
	for _, p := range posts {
		if p.To.Thread == "" {
			roots = append(roots, p)
		}
	}
	require.Len(t, roots, 2, "each incident's root exactly once: %v", texts(posts))
	got, err := r.db.GetIncident(ctx, disk.ID)
	require.NoError(t, err)
	require.False(t, got.Root.IsZero(), "the incident knows its message")
	var diskRoot deliverytest.Posted
	for _, p := range roots {
		if p.Ref.ID == got.Root.ID {
			diskRoot = p
		}
	}
	// The root as it is now: the post, or — when the acknowledgement came
	// while the post was on its way to the hung server — the edit after it.
	require.Eventually(t, func() bool {
		latest := diskRoot.Message.Text
		for _, e := range r.chat.Edits() {
			if e.Ref.ID == got.Root.ID {
				latest = e.Message.Text
			}
		}
		return strings.Contains(latest, "acknowledged by @bob")
	}, 10*time.Second, 10*time.Millisecond, "the root shows the acknowledgement")
	var thread []string
	for _, p := range posts {
		if p.To.Thread == got.Root.ID {
			thread = append(thread, strings.SplitN(p.Message.Text, "\n", 2)[0])
		}
	}
	assert.Equal(t, []string{"🔁 Changed: 1 new", "👀 @bob acknowledged — " + thread[1][len("👀 @bob acknowledged — "):]}, thread, "the thread in order")

	// Nothing is posted twice later.
	n := len(r.chat.Posts())
	time.Sleep(1500 * time.Millisecond)
	assert.Len(t, r.chat.Posts(), n)
}

func texts(ps []deliverytest.Posted) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s/%s: %s", p.To.Channel, p.To.Thread, strings.SplitN(p.Message.Text, "\n", 2)[0]))
	}
	return out
}

// TestRetriedNotificationCountsOnce: Alertmanager sends a notification
// again when it gave up waiting for the answer (a webhook that waited for
// a hung chat, before): that retry is one notification with the first.
// The same notification answered in time and sent again is a repeat.
func TestRetriedNotificationCountsOnce(t *testing.T) {
	r := newHungRig(t)
	ctx := context.Background()
	gaveUp, cancel := context.WithCancel(ctx)
	cancel()
	r.notifyCtx(t, gaveUp, "firing", "DiskFull", "worker-0") // stored; Alertmanager is gone before the answer
	r.notify(t, "firing", "DiskFull", "worker-0")            // its retry
	open, err := r.m.Open(ctx)
	require.NoError(t, err)
	require.Len(t, open, 1)
	assert.Equal(t, 1, open[0].Notifications, "a retry is not a notification")
	r.notify(t, "firing", "DiskFull", "worker-0") // answered last time: a repeat
	r.notify(t, "firing", "DiskFull", "worker-0", "worker-2")
	got, err := r.db.GetIncident(ctx, open[0].ID)
	require.NoError(t, err)
	assert.Equal(t, 3, got.Notifications)
	require.Eventually(t, func() bool { return len(r.out.Pending(ctx)) == 0 }, 5*time.Second, 10*time.Millisecond)
	latest := ""
	for _, p := range r.chat.Posts() {
		if p.Ref.ID == got.Root.ID {
			latest = p.Message.Text
		}
	}
	for _, e := range r.chat.Edits() {
		if e.Ref.ID == got.Root.ID {
			latest = e.Message.Text
		}
	}
	assert.Contains(t, latest, "· 3 notifications")
}
