package digest

import (
	"errors"
	"fmt"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// loginRefused reports whether err says the target refused the bot's
// credentials (a source's error with LoginRefused() true, as a Concourse
// 401 is).
func loginRefused(err error) bool {
	var lr interface{ LoginRefused() bool }
	return errors.As(err, &lr) && lr.LoginRefused()
}

func userErrorf(format string, args ...any) error {
	return &chatmodel.UserError{Msg: fmt.Sprintf(format, args...)}
}
