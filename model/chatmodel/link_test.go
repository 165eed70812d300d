package chatmodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClean_KeepsOnlyLinksEveryChatCanShowWhole(t *testing.T) {
	for url, keep := range map[string]bool{
		"https://gc.example.com/runs/r-7f3a?t=tplsw0-wwc27zzh": true,
		"http://127.0.0.1:8080/incidents/i-3f2a":               true,
		"javascript:alert(1)":                                  false,
		"https://gc.example.com/a|b":                           false,
		"https://gc.example.com/a>b":                           false,
		"https://gc.example.com/a b":                           false,
		"https://gc.example.com/a)b":                           false,
		"https://gc.example.com/\u202e":                        false,
	} {
		m := Message{Text: "x", Link: &Link{URL: url, Label: "Run \u202e page"}}.Clean()
		if !keep {
			assert.Nil(t, m.Link, url)
			continue
		}
		if assert.NotNil(t, m.Link, url) {
			assert.Equal(t, "Run <U+202E> page", m.Link.Label)
		}
	}
}
