package httpguard

import (
	"io"
	"strings"
)

func strBody(n int) io.Reader { return strings.NewReader(strings.Repeat("x", n)) }
