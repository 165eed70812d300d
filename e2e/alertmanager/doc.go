// Package e2e runs groundcrew's Alertmanager receiver against a real
// Alertmanager (built from the Go module proxy, see server/) on loopback:
// alerts posted to Alertmanager's API open one incident thread in
// `groundcrew serve` (console chat), repeat notifications update it, and
// the 🔕 button creates a real silence through the v2 API, and the resolved
// notification resolves the incident. Run it with run.sh.
package e2e
