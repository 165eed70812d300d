package chatmodel

import "github.com/groundcrew/groundcrew/model/textmodel"

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
	return m
}
