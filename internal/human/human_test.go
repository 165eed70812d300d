package human

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                    "0 s",
		0:                               "0 s",
		45 * time.Second:                "45 s",
		12*time.Minute + 30*time.Second: "12 min",
		3 * time.Hour:                   "3 h",
		3*time.Hour + 5*time.Minute:     "3 h 5 min",
		47*time.Hour + 59*time.Minute:   "47 h 59 min",
		48 * time.Hour:                  "2 d",
		100 * time.Hour:                 "4 d",
	} {
		assert.Equal(t, want, Duration(d), "%v", d)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		assert.Equal(t, want, Count(n))
		assert.Equal(t, want, Count(int(n)))
	}
}
