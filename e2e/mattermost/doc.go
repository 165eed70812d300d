// Package e2e runs groundcrew's Mattermost adapter against a real Mattermost
// server (built from the Go module proxy, see server/) on loopback, with a
// fresh database on the machine's PostgreSQL. Run it with run.sh.
package e2e
