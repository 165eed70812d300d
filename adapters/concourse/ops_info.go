package concourse

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

func (p *Provider) opInfo() opmodel.Op {
	return opmodel.Op{
		Name: "concourse.info", Class: opmodel.ClassRead,
		Doc: "Server version and cluster, and who the bot is logged in as (fly status, fly userinfo).",
		Do: func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
			cl, err := p.client(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			info, err := cl.Info(ctx)
			if err != nil {
				return opmodel.Result{}, err
			}
			data := InfoData{
				Target: cl.Name(), URL: cl.URL(), Team: cl.Team(), Version: info.Version,
				WorkerVersion: info.WorkerVersion, ClusterName: info.ClusterName, ExternalURL: info.ExternalURL,
			}
			summary := fmt.Sprintf("Concourse %s", info.Version)
			if info.ClusterName != "" {
				summary += " (cluster " + info.ClusterName + ")"
			}
			if cl.cfg.Username != "" {
				u, err := cl.User(ctx)
				if err != nil {
					return opmodel.Result{}, err
				}
				roles := []string{}
				for team, rs := range u.Teams {
					if !scopeOf(c).allows(team) {
						continue // another team is not the run's channel's to see
					}
					for _, r := range rs {
						roles = append(roles, team+"/"+r)
					}
				}
				sort.Strings(roles)
				data.User = &InfoUser{Name: or(u.DisplayUserID, u.UserName), IsAdmin: u.IsAdmin, Roles: roles}
				summary += fmt.Sprintf(", logged in as %s", or(u.DisplayUserID, u.UserName))
				if u.IsAdmin {
					summary += " (admin)"
				} else if len(roles) > 0 {
					summary += " (" + strings.Join(roles, ", ") + ")"
				}
			}
			return opmodel.Result{Summary: summary, Data: data}, nil
		},
	}
}

// InfoData is the result of concourse.info.
type InfoData struct {
	Target        string    `json:"target"`
	URL           string    `json:"url"`
	Team          string    `json:"team"`
	Version       string    `json:"version"`
	WorkerVersion string    `json:"worker_version"`
	ClusterName   string    `json:"cluster_name"`
	ExternalURL   string    `json:"external_url"`
	User          *InfoUser `json:"user,omitempty"` // nil for anonymous targets
}

// InfoUser is the user the bot is logged in as.
type InfoUser struct {
	Name    string   `json:"name"`
	IsAdmin bool     `json:"is_admin"`
	Roles   []string `json:"roles"` // team/role
}

// TSAData is the result of concourse.tsa_connectivity.
type TSAData struct {
	Host        string   `json:"host"`
	Port        string   `json:"port"`
	Address     string   `json:"address"`
	Resolved    bool     `json:"resolved"`
	IPs         []string `json:"ips"`
	ResolveMS   int64    `json:"resolve_ms"`
	Connected   bool     `json:"connected"`
	ConnectedIP string   `json:"connected_ip"`
	ConnectMS   int64    `json:"connect_ms"`
	Error       string   `json:"error"`
}

func (p *Provider) opTSAConnectivity() opmodel.Op {
	return opmodel.Op{
		Name: "concourse.tsa_connectivity", Class: opmodel.ClassRead,
		Doc: "Resolve the TSA host and open a TCP connection to it from the bot (nc -vz <host> 2222); a failure is a result, not an error.",
		Args: []opmodel.ArgSpec{
			{Name: "address", Doc: "host:port to test (default: the target's tsa setting, <url host>:2222)"},
			{Name: "timeout", Doc: "connect timeout (default 5s)"},
		},
		Do: func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
			cl, err := p.client(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			addr := or(c.Args.String("address"), cl.cfg.TSA)
			timeout, err := c.Args.Duration("timeout", 5*time.Second)
			if err != nil {
				return opmodel.Result{}, err
			}
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return opmodel.Result{}, fmt.Errorf("argument \"address\": %q is not host:port (e.g. ci.example.com:2222)", addr)
			}
			return p.probe(ctx, host, port, timeout), nil
		},
	}
}

// probe resolves host and dials each address until one connects.
func (p *Provider) probe(ctx context.Context, host, port string, timeout time.Duration) opmodel.Result {
	data := TSAData{Host: host, Port: port, Address: net.JoinHostPort(host, port), IPs: []string{}}
	fail := func(summary string, err error) opmodel.Result {
		data.Error = err.Error()
		return opmodel.Result{Summary: summary, Data: data, Warn: true}
	}
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	ips, err := p.opts.LookupHost(rctx, host)
	cancel()
	data.ResolveMS = time.Since(start).Milliseconds()
	if err != nil {
		return fail(fmt.Sprintf("DNS lookup of %s failed: %v; check the resolver and the name", host, err), err)
	}
	data.IPs, data.Resolved = ips, true
	var lastErr error
	for _, ip := range ips {
		start = time.Now()
		dctx, cancel := context.WithTimeout(ctx, timeout)
		conn, err := p.opts.Dial(dctx, "tcp", net.JoinHostPort(ip, port))
		cancel()
		if err != nil {
			lastErr = err
			continue
		}
		ms := time.Since(start).Milliseconds()
		_ = conn.Close()
		data.Connected, data.ConnectedIP, data.ConnectMS = true, ip, ms
		return opmodel.Result{
			Summary: fmt.Sprintf("TSA reachable: %s:%s → %s, connect %d ms", host, port, strings.Join(ips, ", "), ms),
			Data:    data,
		}
	}
	return fail(fmt.Sprintf("TSA unreachable: %s:%s → %s: %v; check the web node, the load balancer and ACLs on port %s",
		host, port, strings.Join(ips, ", "), lastErr, port), lastErr)
}
