// Package core provides the engine's built-in operations: core.echo,
// core.sleep and core.tcp_check. They need no configuration.
package core

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// Provider implements opmodel.Provider.
type Provider struct {
	// Dial is used by tcp_check (default net.Dialer).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Resolve is used by tcp_check (default net.DefaultResolver).
	Resolve func(ctx context.Context, host string) ([]string, error)
}

var _ opmodel.Provider = Provider{}

// Ops implements opmodel.Provider.
func (p Provider) Ops() []opmodel.Op {
	return []opmodel.Op{
		{Name: "core.echo", Class: opmodel.ClassRead, Doc: "Returns its `message` argument (handy to show computed values).",
			Args: []opmodel.ArgSpec{{Name: "message", Required: true, Doc: "text to show"}},
			Do: func(_ context.Context, c opmodel.Call) (opmodel.Result, error) {
				m := c.Args.String("message")
				return opmodel.Result{Summary: m, Data: map[string]any{"message": m}}, nil
			}},
		{Name: "core.sleep", Class: opmodel.ClassRead, Doc: "Waits for `duration` (e.g. 30s).",
			Args: []opmodel.ArgSpec{{Name: "duration", Required: true, Doc: "how long, e.g. 30s, 2m"}},
			Do: func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
				d, err := c.Args.Duration("duration", 0)
				if err != nil {
					return opmodel.Result{}, err
				}
				t := time.NewTimer(d)
				defer t.Stop()
				select {
				case <-ctx.Done():
					return opmodel.Result{}, ctx.Err()
				case <-t.C:
				}
				return opmodel.Result{Summary: "slept " + d.String()}, nil
			}},
		{Name: "core.tcp_check", Class: opmodel.ClassRead, Doc: "Resolves `host` and opens a TCP connection to `port` from the bot.",
			Args: []opmodel.ArgSpec{{Name: "host", Required: true}, {Name: "port", Required: true}, {Name: "timeout", Doc: "default 5s"}},
			Do:   p.tcpCheck},
	}
}

func (p Provider) tcpCheck(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
	host := c.Args.String("host")
	port, err := c.Args.Int("port", 0)
	if err != nil {
		return opmodel.Result{}, err
	}
	timeout, err := c.Args.Duration("timeout", 5*time.Second)
	if err != nil {
		return opmodel.Result{}, err
	}
	return TCPCheck(ctx, host, port, timeout, p.Resolve, p.Dial)
}

// TCPCheck resolves host and dials host:port, reporting the addresses and
// the connect time. A failed check is a result (reachable=false), not an
// error, so runbooks can branch on it.
func TCPCheck(ctx context.Context, host string, port int, timeout time.Duration,
	resolve func(ctx context.Context, host string) ([]string, error),
	dial func(ctx context.Context, network, addr string) (net.Conn, error)) (opmodel.Result, error) {
	if resolve == nil {
		resolve = net.DefaultResolver.LookupHost
	}
	if dial == nil {
		d := &net.Dialer{}
		dial = d.DialContext
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	data := map[string]any{"host": host, "port": port, "reachable": false}
	ips, err := resolve(ctx, host)
	if err != nil {
		data["error"] = "DNS: " + err.Error()
		return opmodel.Result{Summary: fmt.Sprintf("%s: DNS resolution failed: %v", addr, err), Data: data, Warn: true}, nil
	}
	data["addresses"] = ips
	start := time.Now()
	conn, err := dial(ctx, "tcp", addr)
	elapsed := time.Since(start)
	if err != nil {
		data["error"] = err.Error()
		return opmodel.Result{Summary: fmt.Sprintf("%s → %v: connection failed: %v", addr, ips, err), Data: data, Warn: true}, nil
	}
	conn.Close()
	data["reachable"], data["connect_ms"] = true, elapsed.Milliseconds()
	return opmodel.Result{Summary: fmt.Sprintf("%s → %v, connect %d ms", addr, ips, elapsed.Milliseconds()), Data: data}, nil
}
