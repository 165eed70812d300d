package e2e

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// cutProxy is a loopback TCP proxy in front of the Mattermost server, so a
// test can drop the bot's connections (its WebSocket included) and refuse
// new ones for a while, as a network outage would.
type cutProxy struct {
	URL      string
	upstream string
	l        net.Listener

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

func newCutProxy(t *testing.T, upstreamURL string) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{
		URL:      "http://" + l.Addr().String(),
		upstream: strings.TrimPrefix(upstreamURL, "http://"),
		l:        l,
		conns:    map[net.Conn]struct{}{},
	}
	go p.serve()
	t.Cleanup(func() { l.Close(); p.cut() })
	return p
}

func (p *cutProxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		if !down {
			p.conns[c] = struct{}{}
		}
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		go p.pipe(c)
	}
}

func (p *cutProxy) pipe(c net.Conn) {
	u, err := net.Dial("tcp", p.upstream)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[u] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
	<-done
	c.Close()
	u.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
}

// cut closes every open connection and refuses new ones until restore.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
}

func (p *cutProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}
