package alertmanager

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Path is where the receiver listens on server.listen.
const Path = "/alertmanager"

// Sink takes the signals (the incident manager).
type Sink interface {
	Signal(ctx context.Context, s incident.Signal) (*incident.Incident, error)
	// Unanswered is told when Alertmanager gave up waiting for the answer
	// to a delivery: it will send it again, and that is not a new
	// notification.
	Unanswered(ctx context.Context, key, delivery string) error
}

// Auditor records alerts that match no route.
type Auditor interface {
	AppendAudit(ctx context.Context, e runmodel.AuditEntry) error
}

// Options configure a Receiver.
type Options struct {
	// Token is the Bearer token Alertmanager sends (http_config.authorization).
	Token  string
	Routes []*Route
	// Targets are the configured target names; a route that renders
	// another target opens its incident without a runbook button.
	Targets []string
	Sink    Sink
	Audit   Auditor // optional
	// Dedupe, when set, remembers across restarts which unrouted firing
	// alerts were already audited (the in-memory record is lost at restart).
	Dedupe runmodel.Dedupe
	// WorkerNames, when set, is how workerID in route params checks a
	// host against the target's worker naming template (see workerIDFunc).
	WorkerNames WorkerNamer
	// Observer, when set, counts notifications and unrouted alerts (metrics).
	Observer Observer
	MaxBody  int64 // default DefaultMaxBody
	Logger   *slog.Logger
	Now      func() time.Time
}

// Notification outcomes, as Observer.Notification reports them.
const (
	OutcomeOK           = "ok"
	OutcomeUnauthorized = "unauthorized"
	OutcomeMalformed    = "malformed"
	OutcomeTooLarge     = "too_large"
	OutcomeStoreError   = "store_error"
)

// Observer is told what became of each notification (metrics).
type Observer interface {
	// AlertmanagerNotification counts one webhook request by outcome.
	AlertmanagerNotification(outcome string)
	// AlertsUnrouted counts alerts that matched no route.
	AlertsUnrouted(n int)
}

type noObserver struct{}

func (noObserver) AlertmanagerNotification(string) {}
func (noObserver) AlertsUnrouted(int)              {}

// Receiver is the webhook receiver, an http.Handler for Path.
type Receiver struct {
	o       Options
	log     *slog.Logger
	targets map[string]bool

	mu       sync.Mutex
	unrouted map[string]bool // fingerprints already recorded as unrouted while firing
}

// NewReceiver returns a receiver. A token is required.
func NewReceiver(o Options) (*Receiver, error) {
	if o.Token == "" {
		return nil, errors.New("alertmanager receiver: a token is required (alerts.alertmanager.token_file)")
	}
	if o.Sink == nil {
		return nil, errors.New("alertmanager receiver: Sink is required")
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Observer == nil {
		o.Observer = noObserver{}
	}
	r := &Receiver{o: o, log: o.Logger, targets: map[string]bool{}, unrouted: map[string]bool{}}
	for _, t := range o.Targets {
		r.targets[t] = true
	}
	return r, nil
}

// ServeHTTP implements http.Handler: 401 for a missing or wrong token,
// 413 for a body over the byte limit, 400 for a malformed body (nothing is
// stored), 500 when the incident could not be stored (Alertmanager
// retries), 200 otherwise. The number of alerts is never a reason to
// refuse: a refused notification is never sent again, and its resolve
// would be lost.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST Alertmanager webhook notifications here", http.StatusMethodNotAllowed)
		return
	}
	if !rc.authorized(req) {
		rc.o.Observer.AlertmanagerNotification(OutcomeUnauthorized)
		rc.log.Warn("alertmanager webhook refused: missing or wrong Bearer token", "remote", req.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="groundcrew"`)
		http.Error(w, "missing or wrong Bearer token (alerts.alertmanager.token_file)", http.StatusUnauthorized)
		return
	}
	body := http.MaxBytesReader(w, req.Body, rc.o.MaxBody)
	msg, err := Decode(body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			rc.o.Observer.AlertmanagerNotification(OutcomeTooLarge)
			err = fmt.Errorf("the body is over %s, the limit for a notification (raise alerts.alertmanager.max_body, or set max_alerts in Alertmanager's webhook_config)", sizeText(rc.o.MaxBody))
			rc.log.Error("alertmanager webhook refused: body too large; Alertmanager will not send it again", "remote", req.RemoteAddr, "err", err)
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		rc.o.Observer.AlertmanagerNotification(OutcomeMalformed)
		rc.log.Warn("alertmanager webhook refused", "remote", req.RemoteAddr, "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := rc.Handle(req.Context(), msg); err != nil {
		rc.o.Observer.AlertmanagerNotification(OutcomeStoreError)
		rc.log.Error("alertmanager notification not recorded", "group", msg.GroupKey, "err", err)
		http.Error(w, "could not record the notification; retry", http.StatusInternalServerError)
		return
	}
	if req.Context().Err() != nil {
		// Alertmanager gave up waiting (its timeout) before the answer:
		// it sends this notification again, which is its retry.
		rc.log.Warn("alertmanager gave up waiting for the answer to a notification (recorded; its retry will not count again)", "group", msg.GroupKey)
		rc.unanswered(msg)
	}
	rc.o.Observer.AlertmanagerNotification(OutcomeOK)
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "ok\n")
}

func (rc *Receiver) authorized(req *http.Request) bool {
	scheme, tok, ok := strings.Cut(req.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(rc.o.Token)) == 1
}

// Handle routes a decoded notification: the alerts of the group are split
// by the first route each matches, and each part becomes one signal keyed
// by receiver, group key and route — so however often Alertmanager
// repeats the group, it is one incident. Alerts that match no route are
// logged and recorded in the audit log (once per firing).
func (rc *Receiver) Handle(ctx context.Context, m *Message) error {
	parts := map[*Route][]Alert{}
	var order []*Route
	var unrouted []Alert
	for _, a := range m.Alerts {
		var route *Route
		for _, r := range rc.o.Routes {
			if r.Matches(a.Labels) {
				route = r
				break
			}
		}
		if route == nil {
			unrouted = append(unrouted, a)
			continue
		}
		if _, ok := parts[route]; !ok {
			order = append(order, route)
		}
		parts[route] = append(parts[route], a)
	}
	rc.recordUnrouted(ctx, m, unrouted)
	delivery := deliveryID(m)
	var errs []error
	for _, r := range order {
		s := rc.signal(m, r, parts[r])
		s.Delivery = delivery
		if _, err := rc.o.Sink.Signal(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// unanswered tells the sink that Alertmanager will send msg again.
func (rc *Receiver) unanswered(msg *Message) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	delivery := deliveryID(msg)
	for _, key := range rc.keys(msg) {
		if err := rc.o.Sink.Unanswered(ctx, key, delivery); err != nil {
			rc.log.Warn("recording an unanswered notification", "group", msg.GroupKey, "err", err)
		}
	}
}

// keys are the incident keys a notification's signals have.
func (rc *Receiver) keys(m *Message) []string {
	seen := map[*Route]bool{}
	var out []string
	for _, a := range m.Alerts {
		for _, r := range rc.o.Routes {
			if r.Matches(a.Labels) {
				if !seen[r] {
					seen[r] = true
					out = append(out, signalKey(m, r))
				}
				break
			}
		}
	}
	return out
}

func signalKey(m *Message, r *Route) string {
	return "alertmanager:" + m.Receiver + ":" + m.GroupKey + ":" + r.Name
}

// deliveryID identifies a notification by its content: Alertmanager sends
// the same notification again (the same alerts, statuses and times) when
// it got no answer in time, and the incident counts it once.
func deliveryID(m *Message) string {
	data, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12])
}

// signal builds the signal of one route's part of a group.
func (rc *Receiver) signal(m *Message, r *Route, alerts []Alert) incident.Signal {
	var firing []Alert
	for _, a := range alerts {
		if a.Firing() {
			firing = append(firing, a)
		}
	}
	s := incident.Signal{
		Key:    signalKey(m, r),
		Source: incident.Source{Kind: incident.SourceAlert, Name: r.Name, Ref: m.GroupKey},
		// Alerts Alertmanager left out (max_alerts) may be firing: a
		// group whose status is firing stays open.
		Firing: len(firing) > 0 || m.Status == StatusFiring && m.TruncatedAlerts > 0,
	}
	var titled []string
	s.Title, titled = title(m, alerts)
	ref := alerts[0]
	if len(firing) > 0 {
		ref = firing[0]
		for _, a := range firing {
			if s.Since.IsZero() || (!a.StartsAt.IsZero() && a.StartsAt.Before(s.Since)) {
				s.Since = a.StartsAt
			}
		}
	}
	s.Evidence, s.EvidenceKeys = evidence(m, firing, titled)
	s.Alerts = len(firing)
	// Alerts Alertmanager left out count as firing only while the group
	// fires: in a resolved notification they are resolved too.
	truncated := 0
	if m.Status == StatusFiring {
		truncated = m.TruncatedAlerts
		s.Alerts += truncated
	}
	if more := len(s.Evidence) - MaxEvidenceAlerts; more > 0 || truncated > 0 {
		// Every alert counts; the first ones are the evidence.
		more = max(more, 0)
		s.Evidence = s.Evidence[:len(s.Evidence)-more]
		s.EvidenceKeys = s.EvidenceKeys[:len(s.Evidence)]
		line := "… and " + human.Count(more+truncated) + " more"
		if truncated > 0 {
			line += fmt.Sprintf(" (%s not sent by Alertmanager: max_alerts)", human.Count(truncated))
		}
		s.Evidence = append(s.Evidence, line)
	}
	var err error
	if s.Channel, err = render(r.channel, ref); err != nil || s.Channel == "" {
		rc.log.Warn("alert route channel did not render; posting to its text as written", "route", r.Name, "err", err)
		s.Channel = r.channelText
	}
	if s.Target, err = render(r.target, ref); err != nil {
		rc.log.Warn("alert route target did not render", "route", r.Name, "err", err)
	}
	runbookOK := r.Runbook != ""
	if s.Target != "" && !rc.targets[s.Target] {
		rc.log.Warn("alert route names a target that is not configured; no runbook is offered", "route", r.Name, "target", s.Target)
		s.Evidence = append(s.Evidence, fmt.Sprintf("⚠️ target `%s` (from route %s) is not configured: no runbook offered", s.Target, r.Name))
		runbookOK = false
	}
	if runbookOK {
		s.Runbook, s.Params, s.Autostart = r.Runbook, map[string]string{}, r.Autostart
		for _, k := range slices.Sorted(maps.Keys(r.params)) {
			v, err := renderFor(r.params[k], ref, s.Target, rc.o.WorkerNames)
			if err != nil {
				rc.log.Warn("alert route parameter did not render", "route", r.Name, "param", k, "err", err)
			}
			if strings.TrimSpace(v) == "" {
				// Never drop it: a runbook run without it could pick
				// another object (worker-disk-full without worker= takes
				// the stalled worker, not the one that alerted).
				v = ""
				s.Evidence = append(s.Evidence, fmt.Sprintf("⚠️ parameter `%s` could not be filled from this alert (route %s, params.%s gave nothing): fill it in the suggested command", k, r.Name, k))
			}
			s.Params[k] = v
		}
	}
	// The instance travels into the run; a longer one is cut (it then
	// matches no worker, so the find-worker step fails closed).
	s.Instance = ref.Labels["instance"]
	if len(s.Instance) > maxInstance {
		s.Instance = strings.ToValidUTF8(s.Instance[:maxInstance], "")
	}
	s.Silence = m.GroupLabels
	if len(s.Silence) == 0 {
		s.Silence = m.CommonLabels
	}
	return s
}

// objectLabels are the labels that name one object: when every alert of
// a group has the same value, the incident's title says it.
var objectLabels = []string{"instance", "job", "worker", "pipeline"}

// Label values are shortened in titles and evidence like annotations are.
const (
	maxTitleValue    = 60
	maxEvidenceValue = 80
)

// maxInstance bounds the alert instance a signal carries (bytes).
const maxInstance = 256

// MaxEvidenceAlerts is how many alerts of a group are kept as evidence
// lines; the rest are counted ("… and 1,150 more").
const MaxEvidenceAlerts = 50

// title is the alert name and the labels that tell this group from the
// other groups of the same alert: its group labels beyond alertname, and
// the object labels every alert shares ("FileSystemSpaceFillingUp ·
// instance=worker-0:9100"). It returns the label names it used.
func title(m *Message, alerts []Alert) (string, []string) {
	name := m.CommonLabels["alertname"]
	if name == "" {
		name = m.GroupLabels["alertname"]
	}
	if name == "" {
		names := map[string]bool{}
		for _, a := range alerts {
			names[a.Labels["alertname"]] = true
		}
		list := slices.SortedFunc(maps.Keys(names), human.Compare)
		name = strings.Trim(strings.Join(list, ", "), ", ")
	}
	if name == "" {
		name = "Alert"
	}
	name = oneLine(name, maxTitleValue)
	var used []string
	var parts []string
	add := func(k, v string) {
		if k == "alertname" || v == "" || slices.Contains(used, k) {
			return
		}
		used = append(used, k)
		parts = append(parts, oneLine(k, 40)+"="+oneLine(v, maxTitleValue))
	}
	for _, k := range slices.Sorted(maps.Keys(m.GroupLabels)) {
		add(k, m.GroupLabels[k])
	}
	for _, k := range objectLabels {
		v, same := alerts[0].Labels[k], true
		for _, a := range alerts[1:] {
			if a.Labels[k] != v {
				same = false
				break
			}
		}
		if same {
			add(k, v)
		}
	}
	if len(parts) == 0 {
		return name, nil
	}
	return name + " · " + strings.Join(parts, " "), used
}

// evidence is one line per firing alert: the labels that tell it apart
// from the rest of the group (not those of the title), and its summary.
// Identical lines are said once with a count. The most severe come first
// (the incident's message shows the first ones), then in number order.
// keys are the lines' identities (incident.Signal.EvidenceKeys): the
// alert's fingerprint, a hash of them for a line of identical alerts. A line
// leaves out the labels the whole group shares, so it reads differently
// when another alert joins with another value of one of them; its key
// does not change.
func evidence(m *Message, firing []Alert, titled []string) (lines, keys []string) {
	// Labels every firing alert shares say nothing about one of them.
	common := map[string]string{}
	if len(firing) > 1 {
		maps.Copy(common, firing[0].Labels)
		for _, a := range firing[1:] {
			for k, v := range common {
				if a.Labels[k] != v {
					delete(common, k)
				}
			}
		}
	}
	// Severity is said only for the alerts whose severity is not the
	// group's usual one (the most common; of two as common, the less
	// severe, then the first by name): a critical alert among 49 warnings
	// says so, the warnings do not.
	severities := map[string]int{}
	for _, a := range firing {
		severities[a.Labels["severity"]]++
	}
	usual := ""
	for _, s := range slices.Sorted(maps.Keys(severities)) {
		if n, u := severities[s], severities[usual]; n > u || n == u && severityRank(s) > severityRank(usual) {
			usual = s
		}
	}
	var out []string
	seen := map[string]int{}
	ids := map[string][]string{} // the fingerprints of a line's alerts
	key := map[string]string{}   // what a line is ordered by: its labels, then its summary
	rank := map[string]int{}     // its severity first
	for _, a := range firing {
		var ls []string
		for _, k := range slices.Sorted(maps.Keys(a.Labels)) {
			if _, ok := common[k]; ok || k == "alertname" || k == "severity" && a.Labels[k] == usual || m.GroupLabels[k] != "" || slices.Contains(titled, k) {
				continue
			}
			ls = append(ls, oneLine(k, 40)+"="+oneLine(a.Labels[k], maxEvidenceValue))
		}
		line := "`" + strings.Join(ls, " ") + "`"
		if len(ls) == 0 {
			line = "`" + oneLine(a.Labels["alertname"], maxTitleValue) + "`"
		}
		sum := a.Annotations["summary"]
		if sum == "" {
			sum = a.Annotations["description"]
		}
		if sum != "" {
			line += " — " + oneLine(sum, 200)
		}
		ids[line] = append(ids[line], fingerprint(a))
		if seen[line]++; seen[line] == 1 {
			out = append(out, line)
			key[line] = strings.Join(ls, " ") + "\x00" + oneLine(sum, 200)
			rank[line] = severityRank(a.Labels["severity"])
		}
	}
	// The most severe first; then as people count: vol2 before vol10
	// before vol100, and a mount point before the ones below it.
	slices.SortFunc(out, func(a, b string) int {
		if c := cmp.Compare(rank[a], rank[b]); c != 0 {
			return c
		}
		return human.Compare(key[a], key[b])
	})
	keys = make([]string, len(out))
	for i, l := range out {
		keys[i] = ids[l][0]
		if len(ids[l]) > 1 {
			// Identical alerts: one key for them all, however many.
			h := sha256.Sum256([]byte(strings.Join(slices.Sorted(slices.Values(ids[l])), ",")))
			keys[i] = fmt.Sprintf("%d×%s", len(ids[l]), hex.EncodeToString(h[:8]))
		}
		if n := seen[l]; n > 1 {
			out[i] = fmt.Sprintf("%s (×%d)", l, n)
		}
	}
	return out, keys
}

// fingerprint identifies an alert: Alertmanager's fingerprint (a hash of
// its labels), or when it sent none the same kind of hash of its labels.
func fingerprint(a Alert) string {
	if a.Fingerprint != "" {
		return a.Fingerprint
	}
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(a.Labels)) {
		fmt.Fprintf(h, "%s\x00%s\x00", k, a.Labels[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// severityRank orders the usual severity labels, most severe first; an
// unknown one goes before info, no severity last.
func severityRank(s string) int {
	switch strings.ToLower(s) {
	case "critical", "page", "emergency", "fatal":
		return 0
	case "error", "high", "major":
		return 1
	case "warning", "warn", "medium", "minor":
		return 2
	case "info", "informational", "notice", "low", "none":
		return 4
	case "":
		return 5
	}
	return 3
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func (rc *Receiver) recordUnrouted(ctx context.Context, m *Message, alerts []Alert) {
	if len(alerts) > 0 {
		rc.o.Observer.AlertsUnrouted(len(alerts))
	}
	for _, a := range alerts {
		fp := a.Fingerprint
		if fp == "" {
			fp = labelString(a.Labels)
		}
		// One firing is one startsAt (a resolved alert keeps its startsAt).
		fp += ":" + a.StartsAt.UTC().Format(time.RFC3339Nano)
		rc.mu.Lock()
		seen := rc.unrouted[fp]
		if a.Firing() {
			if len(rc.unrouted) > 10000 {
				rc.unrouted = map[string]bool{}
			}
			rc.unrouted[fp] = true
		} else {
			delete(rc.unrouted, fp)
		}
		rc.mu.Unlock()
		rc.log.Warn("alert matches no route in alerts.routes", "status", a.Status, "labels", oneLine(labelString(a.Labels), 2000), "group", m.GroupKey)
		if seen || !a.Firing() || rc.o.Audit == nil {
			continue
		}
		if rc.o.Dedupe != nil {
			// After a restart the same firing is not audited again.
			sum := sha256.Sum256([]byte(fp))
			id := "alertmanager:unrouted:" + hex.EncodeToString(sum[:16])
			done, err := rc.o.Dedupe.SeenEvent(ctx, id, rc.o.Now())
			if err != nil {
				rc.log.Error("recording an unrouted alert", "err", err)
			} else if done {
				continue
			}
		}
		err := rc.o.Audit.AppendAudit(ctx, runmodel.AuditEntry{Time: rc.o.Now(), Actor: "alertmanager", Action: "alert_unrouted",
			Detail: oneLine(labelString(a.Labels), 2000)})
		if err != nil {
			rc.log.Error("recording an unrouted alert", "err", err)
		}
	}
}

func labelString(ls map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(ls)) {
		parts = append(parts, fmt.Sprintf("%s=%q", k, ls[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// sizeText writes a byte count as people read limits: "1 MiB", "64 KiB".
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
