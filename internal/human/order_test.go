package human

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSortNumbersByValue: volumes, workers and alert lines are listed as
// people count them, not as text (vol0, vol1000, vol100, …).
func TestSortNumbersByValue(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"vol1000", "vol100", "vol10", "vol2", "vol0"}, []string{"vol0", "vol2", "vol10", "vol100", "vol1000"}},
		{[]string{"worker-10", "worker-9", "worker-1"}, []string{"worker-1", "worker-9", "worker-10"}},
		{
			// Names of several schemes: the prefix first, then the number.
			[]string{"caascad-ci-workers-infra-infra-prd-12", "worker-7", "caascad-ci-workers-infra-infra-prd-3", "worker", "worker-10", "w-0"},
			[]string{"caascad-ci-workers-infra-infra-prd-3", "caascad-ci-workers-infra-infra-prd-12", "w-0", "worker", "worker-7", "worker-10"},
		},
		{
			// Evidence lines: the number inside the line counts, the rest is text.
			[]string{"`mountpoint=/vol100` — 6% left", "`mountpoint=/vol2` — 6% left", "`mountpoint=/data` — 2% left", "`mountpoint=/vol10` — 6% left"},
			[]string{"`mountpoint=/data` — 2% left", "`mountpoint=/vol2` — 6% left", "`mountpoint=/vol10` — 6% left", "`mountpoint=/vol100` — 6% left"},
		},
		{
			// Several numbers; addresses; leading zeros; longer than int64.
			[]string{"10.0.0.10:9100", "10.0.0.9:9100", "10.0.1.1:9100", "a01", "a1", "a001", "n99999999999999999999", "n100000000000000000000", "n9"},
			[]string{"10.0.0.9:9100", "10.0.0.10:9100", "10.0.1.1:9100", "a001", "a01", "a1", "n9", "n99999999999999999999", "n100000000000000000000"},
		},
		{
			// Letters and versions; a name and its prefix; non-ASCII.
			[]string{"v1.10.0", "v1.9.2", "v1.9", "vol", "vol0", "volé1", "vola"},
			[]string{"v1.9", "v1.9.2", "v1.10.0", "vol", "vol0", "vola", "volé1"},
		},
	} {
		got := slices.Clone(tc.in)
		Sort(got)
		assert.Equal(t, tc.want, got)
	}
}

// TestCompareIsATotalOrder: antisymmetric, transitive, 0 only for equal
// strings — sort.Slice and slices.SortFunc need it, or lists come out in
// a different order each time.
func TestCompareIsATotalOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("0019a-Z.")
	var words []string
	for range 300 {
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		words = append(words, string(b))
	}
	for _, a := range words {
		for _, b := range words {
			ab, ba := Compare(a, b), Compare(b, a)
			assert.Equal(t, -ab, ba, "%q %q", a, b)
			assert.Equal(t, a == b, ab == 0, "%q %q", a, b)
		}
	}
	sorted := slices.Clone(words)
	Sort(sorted)
	for i := range sorted {
		for j := i + 1; j < len(sorted); j++ {
			assert.LessOrEqual(t, Compare(sorted[i], sorted[j]), 0, "%q before %q", sorted[i], sorted[j])
		}
	}
}
