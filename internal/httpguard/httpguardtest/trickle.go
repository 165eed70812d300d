// Package httpguardtest has test helpers for slow clients.
package httpguardtest

import (
	"bufio"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Trickle sends the headers of a request announcing a large body, then one
// byte every interval, and returns how long until the server answered or
// closed the connection (bounded by give).
func Trickle(t *testing.T, addr, path string, interval, give time.Duration) (time.Duration, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	start := time.Now()
	_, err = fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\n", path)
	require.NoError(t, err)
	done := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(c).ReadString('\n')
		done <- line
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for time.Since(start) < give {
		select {
		case line := <-done:
			return time.Since(start), line
		case <-tick.C:
			if _, err := c.Write([]byte("a")); err != nil {
				return time.Since(start), "write failed: " + err.Error()
			}
		}
	}
	return time.Since(start), "still open"
}
