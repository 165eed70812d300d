// Package human formats figures for people, the same way in every message
// of the engine and its subsystems.
package human

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration renders a duration for people: "45 s", "12 min", "2 h 5 min",
// "3 d". A negative duration renders as "0 s".
func Duration(d time.Duration) string {
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

// Count renders a whole number with thousands separators: 1234567 as
// "1,234,567".
func Count[N ~int | ~int64](n N) string {
	if n < 0 {
		return "-" + Count(-n)
	}
	s := strconv.FormatInt(int64(n), 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
