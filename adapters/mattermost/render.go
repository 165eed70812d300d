package mattermost

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mattermost/mattermost/server/public/model"

	"github.com/groundcrew/groundcrew/adapters/chatutil"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// maxRunes is the size of one post message or attachment text. Mattermost
// accepts 16383 runes (model.PostMessageMaxRunesV2); a margin is kept for
// the continuation notes.
const maxRunes = 16000

// toMarkdown converts the engine's Markdown subset to Mattermost Markdown.
// The engine writes *bold* and ~struck~ (one character, as Slack does);
// Mattermost reads the first as italics and the second as a channel link,
// so single-character spans become **bold** and ~~struck~~. Code spans and
// fenced blocks are left untouched, as are "* " bullets, existing ** and
// ~~, and a lone ~ (~/.ssh).
func toMarkdown(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 16)
	inFence := false
	lines := strings.SplitAfter(s, "\n")
	for _, line := range lines {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
			inFence = !inFence
			b.WriteString(line)
			continue
		}
		if inFence {
			b.WriteString(line)
			continue
		}
		b.WriteString(convertLine(line))
	}
	return b.String()
}

// convertLine rewrites *x* and ~x~ spans of one line outside `code`.
func convertLine(line string) string {
	if !strings.ContainsAny(line, "*~") {
		return line
	}
	var b strings.Builder
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '`':
			end := indexRune(rs, '`', i+1)
			if end < 0 {
				b.WriteString(string(rs[i:]))
				return b.String()
			}
			b.WriteString(string(rs[i : end+1]))
			i = end
		case '*', '~':
			d := rs[i]
			if i+1 < len(rs) && rs[i+1] == d { // already ** or ~~
				j := i
				for j < len(rs) && rs[j] == d {
					j++
				}
				b.WriteString(string(rs[i:j]))
				i = j - 1
				continue
			}
			if end := spanEnd(rs, i); end > 0 {
				b.WriteString(string([]rune{d, d}))
				b.WriteString(string(rs[i+1 : end]))
				b.WriteString(string([]rune{d, d}))
				i = end
				continue
			}
			b.WriteRune(d)
		default:
			b.WriteRune(rs[i])
		}
	}
	return b.String()
}

// spanEnd returns the index of the rs[i] ('*' or '~') closing a *bold* or
// ~struck~ span opened at i, or -1. The span must not start or end with a
// space; a code span inside it is skipped whole.
func spanEnd(rs []rune, i int) int {
	d := rs[i]
	if i+1 >= len(rs) || unicode.IsSpace(rs[i+1]) {
		return -1
	}
	if i > 0 && (unicode.IsLetter(rs[i-1]) || unicode.IsDigit(rs[i-1])) {
		return -1 // 2*3*4, a*b
	}
	for j := i + 1; j < len(rs); j++ {
		switch rs[j] {
		case '`': // a code span inside: ~`vol49` gone~
			end := indexRune(rs, '`', j+1)
			if end < 0 {
				return -1
			}
			j = end
		case '\n':
			return -1
		case d:
			if unicode.IsSpace(rs[j-1]) || j == i+1 {
				return -1
			}
			if j+1 < len(rs) && (unicode.IsLetter(rs[j+1]) || unicode.IsDigit(rs[j+1])) {
				return -1
			}
			return j
		}
	}
	return -1
}

func indexRune(rs []rune, r rune, from int) int {
	for i := from; i < len(rs); i++ {
		if rs[i] == r {
			return i
		}
	}
	return -1
}

// rendered is a chatmodel.Message turned into Mattermost parts.
type rendered struct {
	message  string
	detail   string   // attachment text ("" for none)
	overflow []string // extra thread replies, in order
}

// render converts m. For a new post, content over the limits moves to extra
// thread replies; for an update (which cannot add replies) it is truncated
// with a note saying how much was cut.
func render(m chatmodel.Message, update bool) rendered {
	var r rendered
	text := toMarkdown(m.Text)
	if m.Link != nil {
		text += "\n[" + strings.NewReplacer("[", "(", "]", ")").Replace(m.Link.Label) + "](" + m.Link.URL + ")"
	}
	detail := toMarkdown(m.Detail)
	if utf8.RuneCountInString(text) > maxRunes {
		if update {
			text = chatutil.Truncate(text, maxRunes)
		} else {
			parts := chatutil.Split(text, maxRunes-40)
			text = parts[0] + "\n_(continued in the thread)_"
			r.overflow = append(r.overflow, parts[1:]...)
		}
	}
	r.message = text
	switch {
	case detail == "":
	case utf8.RuneCountInString(detail) <= maxRunes && len(r.overflow) == 0:
		r.detail = detail
	case update:
		r.detail = chatutil.Truncate(detail, maxRunes)
	default:
		r.overflow = append(r.overflow, chatutil.Split(detail, maxRunes)...)
	}
	return r
}

// actionID makes a post-unique button id. Mattermost routes button clicks
// by /actions/{id:[A-Za-z0-9]+}, so only letters and digits are kept.
func actionID(i int, action string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "b%d", i)
	for _, r := range action {
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		}
	}
	s := b.String()
	if len(s) > 26 {
		s = s[:26]
	}
	return s
}

func buttonStyle(s string) string {
	switch s {
	case "primary", "danger", "good", "success", "warning":
		return s
	default:
		return "default"
	}
}

// attachments builds the post's attachments: the detail text and the
// buttons. Buttons are signed for postID (a post's id, or the
// channelScope of a post being created); with no callback URL there are
// none (the engine's text tells users to react instead).
func (a *Adapter) attachments(r rendered, buttons []chatmodel.Button, postID, thread string) []*model.SlackAttachment {
	var actions []*model.PostAction
	if a.buttonsEnabled() && postID != "" {
		for i, btn := range buttons {
			c := a.signContext(postID, thread, string(btn.Action), btn.Value)
			if strings.HasPrefix(postID, "channel:") {
				c[ctxScope] = scopeChannel
			}
			actions = append(actions, &model.PostAction{
				Id:    actionID(i, string(btn.Action)),
				Type:  model.PostActionTypeButton,
				Name:  btn.Label,
				Style: buttonStyle(btn.Style),
				Integration: &model.PostActionIntegration{
					URL:     a.cfg.callbackURL + ActionPath,
					Context: c,
				},
			})
		}
	}
	if r.detail == "" && len(actions) == 0 {
		return nil
	}
	att := &model.SlackAttachment{Text: r.detail, Actions: actions}
	if r.detail != "" {
		att.Fallback = firstLine(r.detail)
	}
	return []*model.SlackAttachment{att}
}

// userActions are the buttons of an ephemeral message shown to user in
// channel, signed for them (its post id is not known in advance).
func (a *Adapter) userActions(user, channel, thread string, buttons []chatmodel.Button) []*model.PostAction {
	var actions []*model.PostAction
	for i, btn := range buttons {
		c := a.signContext(userScope(user, channel), thread, string(btn.Action), btn.Value)
		c[ctxScope] = "user"
		actions = append(actions, &model.PostAction{Id: actionID(i, string(btn.Action)), Type: model.PostActionTypeButton, Name: btn.Label,
			Style: buttonStyle(btn.Style), Integration: &model.PostActionIntegration{URL: a.cfg.callbackURL + ActionPath, Context: c}})
	}
	return actions
}

// ephemeralPost is the post of an ephemeral message to user, with its
// buttons when they can be answered.
func (a *Adapter) ephemeralPost(channel, thread, user, text string, buttons []chatmodel.Button) *model.Post {
	p := &model.Post{ChannelId: channel, RootId: thread, Message: text}
	if len(buttons) > 0 && a.buttonsEnabled() {
		p.AddProp(model.PostPropsAttachments, []*model.SlackAttachment{{Actions: a.userActions(user, channel, thread, buttons)}})
	}
	return p
}

func (a *Adapter) buttonsEnabled() bool {
	return a.cfg.callbackURL != "" && len(a.cfg.hmacKey) > 0
}

// props returns a post's props for attachments (nil for none).
func postProps(atts []*model.SlackAttachment) model.StringInterface {
	p := model.StringInterface{"from_bot": "true"}
	if len(atts) > 0 {
		p[model.PostPropsAttachments] = atts
	}
	return p
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if utf8.RuneCountInString(s) > 200 {
		s = string([]rune(s)[:200]) + "…"
	}
	return s
}
