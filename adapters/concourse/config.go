package concourse

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"
)

// TargetConfig describes one Concourse instance the bot acts on. The config
// layer fills it (secrets already resolved from env or *_file); the client
// never logs it, and its String, GoString and LogValue redact the password.
type TargetConfig struct {
	// Name identifies the target in errors and chat ("infra-prd").
	// Defaults to the URL's host.
	Name string `yaml:"name" json:"name"`
	// FlyTarget is the target's name in people's fly config, used in the
	// fly commands the client's texts show (`fly -t infra-stg.infra …`).
	// Defaults to Name.
	FlyTarget string `yaml:"fly_target" json:"fly_target,omitempty"`
	// URL is the web node's external URL ("https://ci.infra-prd.example.com").
	URL string `yaml:"url" json:"url"`
	// Team is the default team for team-scoped calls. Defaults to "main".
	Team string `yaml:"team" json:"team"`
	// Username and Password are used for the password grant, like
	// `fly login -u -p`. Without them the client calls the API anonymously.
	Username string `yaml:"username" json:"username"`
	Password string `yaml:"password" json:"-"`
	// CACert is the path of a PEM bundle trusted for the URL.
	CACert string `yaml:"ca_cert" json:"ca_cert,omitempty"`
	// InsecureSkipVerify turns off TLS verification (like fly -k).
	InsecureSkipVerify bool `yaml:"insecure_skip_verify" json:"insecure_skip_verify,omitempty"`
	// TSA is the worker gateway as host:port; defaults to <url host>:2222.
	TSA string `yaml:"tsa" json:"tsa,omitempty"`
	// Vars are passed through to runbook templates ({zone: infra-prd}).
	Vars map[string]string `yaml:"vars" json:"vars,omitempty"`
	// MaxInFlight caps the adaptive number of requests bulk operations
	// keep in flight on this target (aborts, verifications, scans);
	// default DefaultMaxInFlight (32), at most MaxMaxInFlight. The limit
	// starts at 8, grows while answers stay fast and backs off on rising
	// latency, 5xx and 429.
	MaxInFlight int `yaml:"max_in_flight" json:"max_in_flight,omitempty"`
	// Workers says how worker IDs map to names and hosts (templates over
	// vars); see WorkerNaming.
	Workers WorkerNaming `yaml:"workers" json:"workers,omitempty"`
	// StalledWorkerTimeout is the web node's --stalled-worker-timeout
	// (Concourse 8.3): the ATC removes a worker stalled longer than that by
	// itself. 0 (Concourse's default) means never.
	StalledWorkerTimeout time.Duration `yaml:"stalled_worker_timeout" json:"stalled_worker_timeout,omitempty"`
}

const redacted = "[redacted]"

func (c TargetConfig) redactedCopy() TargetConfig {
	if c.Password != "" {
		c.Password = redacted
	}
	return c
}

// String implements fmt.Stringer without the password.
func (c TargetConfig) String() string {
	r := c.redactedCopy()
	return fmt.Sprintf("{name:%s url:%s team:%s username:%s password:%s tsa:%s}",
		r.Name, r.URL, r.Team, r.Username, r.Password, r.TSA)
}

// GoString implements fmt.GoStringer (%#v) without the password.
func (c TargetConfig) GoString() string { return "concourse.TargetConfig" + c.String() }

// Format makes every fmt verb (%v, %+v, %s, %q, %#v) print the redacted form.
func (c TargetConfig) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = fmt.Fprint(f, c.GoString())
		return
	}
	_, _ = fmt.Fprint(f, c.String())
}

// LogValue implements slog.LogValuer without the password.
func (c TargetConfig) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("name", c.Name), slog.String("url", c.URL),
		slog.String("team", c.Team), slog.String("username", c.Username),
	)
}

// withDefaults validates the config and fills Name, Team and TSA.
func (c TargetConfig) withDefaults() (TargetConfig, *url.URL, error) {
	if strings.TrimSpace(c.URL) == "" {
		return c, nil, fmt.Errorf("target %q: url is empty: set targets.%s.url to the Concourse web URL", c.Name, c.Name)
	}
	u, err := url.Parse(strings.TrimRight(c.URL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, nil, fmt.Errorf("target %q: url %q is not an http(s) URL such as https://ci.example.com", c.Name, c.URL)
	}
	if c.Name == "" {
		c.Name = u.Hostname()
	}
	if c.Team == "" {
		c.Team = "main"
	}
	if c.FlyTarget == "" {
		c.FlyTarget = c.Name
	}
	if c.TSA == "" {
		c.TSA = net.JoinHostPort(u.Hostname(), "2222")
	} else if _, _, err := net.SplitHostPort(c.TSA); err != nil {
		c.TSA = net.JoinHostPort(c.TSA, "2222")
	}
	if c.MaxInFlight < 0 || c.MaxInFlight > MaxMaxInFlight {
		return c, nil, fmt.Errorf("target %q: max_in_flight %d is out of range: use 1 to %d (0 for the default %d)", c.Name, c.MaxInFlight, MaxMaxInFlight, DefaultMaxInFlight)
	}
	if c.StalledWorkerTimeout < 0 {
		return c, nil, fmt.Errorf("target %q: stalled_worker_timeout %s is negative: give the web node's --stalled-worker-timeout (0 or absent: it never removes stalled workers by itself)", c.Name, c.StalledWorkerTimeout)
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if (c.Username == "") != (c.Password == "") {
		return c, nil, fmt.Errorf("target %q: set both username and password (or neither, for anonymous access)", c.Name)
	}
	return c, u, nil
}
