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
	"slices"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/incident"
)

// Silencer creates silences through Alertmanager's v2 API
// (POST /api/v2/silences). It implements incident.Silencer.
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
	c := s.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := c.Do(req)
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
