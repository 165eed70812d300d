package digest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/groundcrew/groundcrew/bot"
)

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// humanDuration renders a duration as the engine's messages do: "45 s",
// "12 min", "3 h 5 min", "4 d".
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		h := int(d.Hours())
		m := int(d.Minutes()) - 60*h
		if m == 0 {
			return fmt.Sprintf("%d h", h)
		}
		return fmt.Sprintf("%d h %d min", h, m)
	}
	return fmt.Sprintf("%d d", int(d.Hours()/24))
}

// userMessage is an error as shown in chat.
func userMessage(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out: " + err.Error()
	}
	return err.Error()
}

// loginRefused reports whether err says the target refused the bot's
// credentials (a source's error with LoginRefused() true, as a Concourse
// 401 is).
func loginRefused(err error) bool {
	var lr interface{ LoginRefused() bool }
	return errors.As(err, &lr) && lr.LoginRefused()
}

func userErrorf(format string, args ...any) error {
	return &bot.UserError{Msg: fmt.Sprintf(format, args...)}
}
