package web

import (
	"html/template"
	"regexp"
	"strings"
)

var (
	mdCode = regexp.MustCompile("`([^`\n]+)`")
	mdBold = regexp.MustCompile(`\*([^*\n]+)\*`)
)

// chatText renders the engine's Markdown subset — *bold*, `code`,
// ```blocks``` and lines — as HTML. Everything is escaped first; only
// fixed tags are added, so the result is as safe as escaped text.
func chatText(s string) template.HTML {
	var b strings.Builder
	inBlock := false
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			rest := strings.TrimPrefix(strings.TrimSpace(l), "```")
			if !inBlock {
				b.WriteString(`<pre class="block"><code>`)
				inBlock = true
				if r := strings.TrimSuffix(rest, "```"); r != "" {
					b.WriteString(template.HTMLEscapeString(r))
					if strings.HasSuffix(rest, "```") {
						b.WriteString("</code></pre>")
						inBlock = false
					} else {
						b.WriteString("\n")
					}
				}
				continue
			}
			b.WriteString("</code></pre>")
			inBlock = false
			continue
		}
		if inBlock {
			b.WriteString(template.HTMLEscapeString(l) + "\n")
			continue
		}
		e := template.HTMLEscapeString(l)
		e = mdCode.ReplaceAllString(e, "<code>$1</code>")
		e = mdBold.ReplaceAllString(e, "<strong>$1</strong>")
		b.WriteString(e)
		if i < len(lines)-1 && !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "```") {
			b.WriteString("<br>")
		}
	}
	if inBlock {
		b.WriteString("</code></pre>")
	}
	return template.HTML(b.String()) //nolint:gosec // built from escaped text and fixed tags
}
