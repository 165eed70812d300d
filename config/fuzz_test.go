package config

import (
	"os"
	"testing"
)

// FuzzParseConfig: no config file makes the loader panic. (Secret files it
// names are only read, never written.)
func FuzzParseConfig(f *testing.F) {
	if data, err := os.ReadFile("../deploy/groundcrew.example.yaml"); err == nil {
		f.Add(data)
	}
	for _, s := range []string{
		"chat: {platform: console}\ntargets: {sim: {simulator: {}}}\n",
		"retention: 30d\nchat: {platform: console}\ntargets: {sim: {simulator: {}}}\n",
		"approvals: {default: {runners: [alice], required: 2}}\n",
		"targets: {a: {url: 'http://x', team: main, username: u, password: p}}\nchat: {platform: slack}\n",
		"digests: [{target: a, channel: C1, schedule: '0 8 * * *'}]\n",
		"store: [1, 2]\n", "&a [*a]\n", "{",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = Parse("fuzz.yaml", data)
	})
}
