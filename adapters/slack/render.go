package slack

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"

	"github.com/groundcrew/groundcrew/adapters/chatutil"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// Block Kit limits (https://docs.slack.dev/reference/block-kit/…). Text limits
// are counted in runes, with a margin under Slack's 3000 characters.
const (
	sectionLimit     = 2900 // section block text
	sectionsPerMsg   = 10   // text sections in one message; more go to replies
	buttonsPerBlock  = 25   // elements of one actions block
	maxButtons       = 100  // per message
	buttonLabelLimit = 75
	buttonValueLimit = 2000
	actionIDLimit    = 255
	// A Detail this short (and with few lines) is shown in a context block
	// under the message instead of a thread reply.
	inlineDetailRunes = 300
	inlineDetailLines = 3
	fence             = "```"
)

// ErrInvalidMessage is wrapped by rendering errors (a button Slack would
// refuse, an empty message). Retrying such a message cannot succeed.
var ErrInvalidMessage = errors.New("message cannot be rendered for slack")

// slackMsg is one Slack message: fallback text (notifications) and blocks.
type slackMsg struct {
	text   string
	blocks []slackapi.Block
}

// rendered is a chatmodel.Message as Slack messages: the message itself and the
// thread replies that carry what did not fit (overflowing text, Detail).
type rendered struct {
	main    slackMsg
	replies []slackMsg
}

// render turns m into Block Kit: the text as mrkdwn sections, a short Detail
// as a context block and a long one as code-block replies, Buttons as actions
// blocks. Nothing is dropped: text beyond sectionsPerMsg sections becomes
// replies too.
func render(m chatmodel.Message) (rendered, error) {
	var r rendered
	chunks := chatutil.Split(mentions(m.Mentions)+mrkdwn(m.Text), sectionLimit)
	head, overflow := chunks, []string(nil)
	if len(chunks) > sectionsPerMsg {
		head, overflow = chunks[:sectionsPerMsg], chunks[sectionsPerMsg:]
	}
	for _, c := range head {
		r.main.blocks = append(r.main.blocks, section(c))
	}
	if len(head) > 0 {
		r.main.text = head[0]
	}
	r.replies = sectionMessages(overflow)

	detail := strings.TrimRight(strings.ReplaceAll(m.Detail, "\r\n", "\n"), "\n ")
	switch {
	case detail == "":
	case inlineDetail(detail):
		r.main.blocks = append(r.main.blocks, slackapi.NewContextBlock("",
			slackapi.NewTextBlockObject(slackapi.MarkdownType, mrkdwn(detail), false, false)))
	default:
		r.replies = append(r.replies, sectionMessages(chatutil.Split(codeBlock(detail), sectionLimit))...)
	}

	if m.Link != nil {
		// the link after the text: <url|label>, the label escaped as
		// mrkdwn (the URL has no <, > or |: chatmodel.Message.Clean)
		r.main.blocks = append(r.main.blocks, slackapi.NewContextBlock("",
			slackapi.NewTextBlockObject(slackapi.MarkdownType, "<"+m.Link.URL+"|"+mrkdwn(m.Link.Label)+">", false, false)))
	}

	actions, err := actionBlocks(m.Buttons)
	if err != nil {
		return rendered{}, err
	}
	r.main.blocks = append(r.main.blocks, actions...)

	if len(r.main.blocks) == 0 {
		if len(r.replies) == 0 {
			return rendered{}, fmt.Errorf("%w: no text, detail or buttons", ErrInvalidMessage)
		}
		r.main, r.replies = r.replies[0], r.replies[1:]
	}
	if r.main.text == "" {
		r.main.text = fallbackText(m)
	}
	return r, nil
}

// repliesKey identifies the content of the replies, to tell on an update
// whether they changed ("" when there are none).
func (r rendered) repliesKey() string {
	if len(r.replies) == 0 {
		return ""
	}
	h := sha256.New()
	for _, rep := range r.replies {
		b, _ := json.Marshal(rep.blocks)
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// flatten returns the main message and its replies as one list (ephemeral
// messages have no thread to put replies in).
func (r rendered) flatten() []slackMsg {
	return append([]slackMsg{r.main}, r.replies...)
}

func section(text string) slackapi.Block {
	return slackapi.NewSectionBlock(slackapi.NewTextBlockObject(slackapi.MarkdownType, text, false, false), nil, nil)
}

// sectionMessages groups chunks into messages of sectionsPerMsg sections.
func sectionMessages(chunks []string) []slackMsg {
	var out []slackMsg
	for len(chunks) > 0 {
		n := min(len(chunks), sectionsPerMsg)
		msg := slackMsg{text: chunks[0]}
		for _, c := range chunks[:n] {
			msg.blocks = append(msg.blocks, section(c))
		}
		out = append(out, msg)
		chunks = chunks[n:]
	}
	return out
}

func inlineDetail(d string) bool {
	return utf8.RuneCountInString(d) <= inlineDetailRunes &&
		strings.Count(d, "\n") < inlineDetailLines &&
		!strings.Contains(d, fence)
}

// codeBlock renders a long Detail: as a code block (keeps tables aligned),
// unless it already carries its own code blocks.
func codeBlock(d string) string {
	if strings.Contains(d, fence) {
		return mrkdwn(d)
	}
	return fence + "\n" + mrkdwn(d) + "\n" + fence
}

func fallbackText(m chatmodel.Message) string {
	if len(m.Buttons) > 0 {
		labels := make([]string, 0, len(m.Buttons))
		for _, b := range m.Buttons {
			labels = append(labels, b.Label)
		}
		return escape(strings.Join(labels, " · "))
	}
	return "groundcrew"
}

func actionBlocks(buttons []chatmodel.Button) ([]slackapi.Block, error) {
	if len(buttons) > maxButtons {
		return nil, fmt.Errorf("%w: %d buttons (at most %d)", ErrInvalidMessage, len(buttons), maxButtons)
	}
	var blocks []slackapi.Block
	var elems []slackapi.BlockElement
	for i, b := range buttons {
		switch {
		case b.Action == "":
			return nil, fmt.Errorf("%w: button %q has no action", ErrInvalidMessage, b.Label)
		case len(b.Action) > actionIDLimit:
			return nil, fmt.Errorf("%w: button %q: action is %d bytes (at most %d)", ErrInvalidMessage, b.Label, len(b.Action), actionIDLimit)
		case utf8.RuneCountInString(b.Value) > buttonValueLimit:
			return nil, fmt.Errorf("%w: button %q: value is %d characters (at most %d)", ErrInvalidMessage, b.Label, utf8.RuneCountInString(b.Value), buttonValueLimit)
		}
		label := b.Label
		if strings.TrimSpace(label) == "" {
			label = string(b.Action)
		}
		btn := slackapi.NewButtonBlockElement(string(b.Action), b.Value,
			slackapi.NewTextBlockObject(slackapi.PlainTextType, chatutil.Ellipsis(label, buttonLabelLimit), true, false))
		switch b.Style {
		case "primary":
			btn = btn.WithStyle(slackapi.StylePrimary)
		case "danger":
			btn = btn.WithStyle(slackapi.StyleDanger)
		}
		elems = append(elems, btn)
		if len(elems) == buttonsPerBlock || i == len(buttons)-1 {
			blocks = append(blocks, slackapi.NewActionBlock("", elems...))
			elems = nil
		}
	}
	return blocks, nil
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

var unescaper = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">")

// escape escapes the three characters Slack's mrkdwn reserves.
func escape(s string) string { return escaper.Replace(s) }

// mrkdwn converts groundcrew's Markdown subset (*bold*, `code`, ```blocks```)
// to Slack mrkdwn: it escapes &, < and > and turns a stray Markdown **bold**
// into Slack's *bold* outside code.
func mrkdwn(s string) string {
	s = escape(strings.ReplaceAll(s, "\r\n", "\n"))
	blocks := strings.Split(s, fence)
	for i := 0; i < len(blocks); i += 2 { // even parts are outside code blocks
		spans := strings.Split(blocks[i], "`")
		for j := 0; j < len(spans); j += 2 { // even parts are outside inline code
			spans[j] = strings.ReplaceAll(spans[j], "**", "*")
		}
		blocks[i] = strings.Join(spans, "`")
	}
	return strings.Join(blocks, fence)
}

// mentions renders user ids as mentions that notify (<@U…>), followed by
// a space; anything that is not a user id is left out.
func mentions(ids []string) string {
	var b strings.Builder
	for _, id := range ids {
		if slackUserID.MatchString(id) {
			b.WriteString("<@" + id + "> ")
		}
	}
	return b.String()
}
