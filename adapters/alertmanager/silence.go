package alertmanager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/incident"
)

// Silencer creates and expires silences through Alertmanager's v2 API
// (POST /api/v2/silences, DELETE /api/v2/silence/{id}) and counts the
// alerts that still fire (GET /api/v2/alerts). It implements
// incident.Silencer.
type Silencer struct {
	URL    string // Alertmanager's base URL, e.g. http://alertmanager:9093
	Client *http.Client
	Now    func() time.Time
}

var _ incident.Silencer = (*Silencer)(nil)

type matcher struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	IsRegex bool   `json:"isRegex"`
	IsEqual bool   `json:"isEqual"`
}

type silence struct {
	Matchers  []matcher `json:"matchers"`
	StartsAt  time.Time `json:"startsAt"`
	EndsAt    time.Time `json:"endsAt"`
	CreatedBy string    `json:"createdBy"`
	Comment   string    `json:"comment"`
}

// Silence implements incident.Silencer: equality matchers on the labels.
func (s *Silencer) Silence(ctx context.Context, labels map[string]string, d time.Duration, by, comment string) (string, error) {
	if len(labels) == 0 {
		return "", errors.New("no labels to silence")
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	sil := silence{StartsAt: now().UTC(), EndsAt: now().Add(d).UTC(), CreatedBy: by, Comment: comment}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		sil.Matchers = append(sil.Matchers, matcher{Name: k, Value: labels[k], IsEqual: true})
	}
	body, err := json.Marshal(sil)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(s.URL, "/")+"/api/v2/silences", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("creating a silence: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client().Do(req)
	if err != nil {
		return "", fmt.Errorf("creating a silence in Alertmanager %s: %w", s.URL, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("creating a silence in Alertmanager %s: %s: %s", s.URL, resp.Status, oneLine(string(data), 200))
	}
	var out struct {
		SilenceID string `json:"silenceID"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.SilenceID == "" {
		return "", fmt.Errorf("creating a silence in Alertmanager %s: unexpected answer %q", s.URL, oneLine(string(data), 200))
	}
	return out.SilenceID, nil
}

func (s *Silencer) client() *http.Client {
	if s.Client != nil {
		return s.Client
	}
	return &http.Client{Timeout: 10 * time.Second}
}

func (s *Silencer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Expire implements incident.Silencer: DELETE /api/v2/silence/{id}. A
// silence Alertmanager no longer has is not an error: it has ended.
func (s *Silencer) Expire(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("no silence to expire")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, strings.TrimRight(s.URL, "/")+"/api/v2/silence/"+url.PathEscape(id), nil)
	if err != nil {
		return fmt.Errorf("expiring silence %s: %w", id, err)
	}
	resp, err := s.client().Do(req)
	if err != nil {
		return fmt.Errorf("expiring silence %s in Alertmanager %s: %w", id, s.URL, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNotFound {
		return nil
	}
	return fmt.Errorf("expiring silence %s in Alertmanager %s: %s: %s", id, s.URL, resp.Status, oneLine(string(data), 200))
}

// maxAlertsAnswer bounds the answer of GET /api/v2/alerts.
const maxAlertsAnswer = 32 << 20

// Firing implements incident.Silencer: the alerts matching every label
// (silenced and inhibited ones included) that have not ended.
func (s *Silencer) Firing(ctx context.Context, labels map[string]string) (int, error) {
	if len(labels) == 0 {
		return 0, errors.New("no labels to match")
	}
	q := url.Values{}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		q.Add("filter", k+"="+matcherValue(labels[k]))
	}
	q.Set("active", "true")
	q.Set("silenced", "true")
	q.Set("inhibited", "true")
	q.Set("unprocessed", "true")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(s.URL, "/")+"/api/v2/alerts?"+q.Encode(), nil)
	if err != nil {
		return 0, fmt.Errorf("listing alerts: %w", err)
	}
	resp, err := s.client().Do(req)
	if err != nil {
		return 0, fmt.Errorf("listing alerts in Alertmanager %s: %w", s.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return 0, fmt.Errorf("listing alerts in Alertmanager %s: %s: %s", s.URL, resp.Status, oneLine(string(data), 200))
	}
	var alerts []struct {
		EndsAt time.Time         `json:"endsAt"`
		Labels map[string]string `json:"labels"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAlertsAnswer)).Decode(&alerts); err != nil {
		return 0, fmt.Errorf("listing alerts in Alertmanager %s: unexpected answer: %w", s.URL, err)
	}
	now, n := s.now(), 0
	for _, a := range alerts {
		if !a.EndsAt.IsZero() && !a.EndsAt.After(now) {
			continue // resolved
		}
		match := true
		for k, v := range labels {
			match = match && a.Labels[k] == v
		}
		if match {
			n++
		}
	}
	return n, nil
}

// matcherValue quotes a label value for Alertmanager's matcher syntax.
func matcherValue(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(v) + `"`
}
