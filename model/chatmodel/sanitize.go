package chatmodel

import (
	"strings"

	"github.com/groundcrew/groundcrew/model/textmodel"
)

// Clean returns the message with its texts sanitized (see Sanitize).
func (m Message) Clean() Message {
	m.Text, m.Detail = textmodel.Sanitize(m.Text), textmodel.Sanitize(m.Detail)
	if len(m.Buttons) > 0 {
		bs := make([]Button, len(m.Buttons))
		for i, btn := range m.Buttons {
			btn.Label = textmodel.Sanitize(btn.Label)
			bs[i] = btn
		}
		m.Buttons = bs
	}
	if len(m.Files) > 0 {
		fs := make([]File, 0, len(m.Files))
		for _, f := range m.Files {
			if len(f.Data) == 0 || len(f.Data) > MaxFileBytes {
				continue
			}
			f.Name, f.Alt = textmodel.Sanitize(f.Name), textmodel.Sanitize(f.Alt)
			fs = append(fs, f)
		}
		m.Files = fs
	}
	if m.Link != nil {
		l := *m.Link
		l.Label = textmodel.Sanitize(l.Label)
		m.Link = &l
		if !safeURL(l.URL) {
			m.Link = nil // a link no chat can show whole is left out, never mangled
		}
	}
	return m
}

// safeURL reports whether u is an http(s) address of printable ASCII
// without the characters chat markup gives a meaning to.
func safeURL(u string) bool {
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") || len(u) > 2000 {
		return false
	}
	for i := 0; i < len(u); i++ {
		if c := u[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`<>|()[]\"'`, c) >= 0 {
			return false
		}
	}
	return true
}
