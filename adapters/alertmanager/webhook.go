// Package alertmanager receives Alertmanager's webhook notifications
// (payload version 4) on POST /alertmanager, routes each alert group to a
// target, a channel and a suggested runbook (alerts.routes in the config),
// and hands one incident.Signal per group and route to the incident
// manager. It can also create silences through Alertmanager's v2 API.
package alertmanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Message is Alertmanager's webhook payload, version 4.
type Message struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   int               `json:"truncatedAlerts"`
	Status            string            `json:"status"`
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []Alert           `json:"alerts"`
}

// Alert is one alert of a notification.
type Alert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// Firing reports whether the alert is firing.
func (a Alert) Firing() bool { return a.Status == StatusFiring }

// Alert and notification statuses.
const (
	StatusFiring   = "firing"
	StatusResolved = "resolved"
)

// Limits on what a notification may contain.
const (
	// DefaultMaxBody is the largest body accepted: about 2,000 alerts of
	// a real group. It is the only limit on a notification's size (the
	// number of alerts and the length of label values are not: a refused
	// notification is never sent again, and its resolve would be lost).
	DefaultMaxBody = 1 << 20
	maxLabelName   = 4096
)

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("malformed Alertmanager notification")

// Decode reads and checks one webhook payload. Unknown fields are
// accepted (Alertmanager adds some between versions); a missing or other
// version, a bad status, no alerts, or an alert without labels is an error
// wrapping ErrMalformed.
func Decode(r io.Reader) (*Message, error) {
	dec := json.NewDecoder(r)
	var m Message
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrMalformed)
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return &m, nil
}

func (m *Message) validate() error {
	if m.Version != "4" {
		return fmt.Errorf("version %q: only version 4 is understood", m.Version)
	}
	if m.Status != StatusFiring && m.Status != StatusResolved {
		return fmt.Errorf("status %q: want firing or resolved", m.Status)
	}
	if m.GroupKey == "" {
		return errors.New("no groupKey")
	}
	if len(m.Alerts) == 0 {
		return errors.New("no alerts")
	}
	if err := checkLabels("groupLabels", m.GroupLabels); err != nil {
		return err
	}
	for i, a := range m.Alerts {
		if a.Status != StatusFiring && a.Status != StatusResolved {
			return fmt.Errorf("alerts[%d]: status %q: want firing or resolved", i, a.Status)
		}
		if len(a.Labels) == 0 {
			return fmt.Errorf("alerts[%d]: no labels", i)
		}
		if err := checkLabels(fmt.Sprintf("alerts[%d].labels", i), a.Labels); err != nil {
			return err
		}
		if err := checkLabels(fmt.Sprintf("alerts[%d].annotations", i), a.Annotations); err != nil {
			return err
		}
	}
	return nil
}

func checkLabels(where string, ls map[string]string) error {
	for k := range ls {
		if k == "" {
			return fmt.Errorf("%s: empty label name", where)
		}
		if len(k) > maxLabelName {
			return fmt.Errorf("%s: label name %.40q… is too long", where, k)
		}
		if strings.ContainsRune(k, 0) {
			return fmt.Errorf("%s: label name with a NUL byte", where)
		}
	}
	return nil
}
