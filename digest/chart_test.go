package digest_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/digest"
)

func series(n int, db bool) []digest.Point {
	start := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	var pts []digest.Point
	for i := range n {
		p := digest.Point{At: start.Add(time.Duration(i) * 24 * time.Hour), Pending: 10 + i*7%40, Errored: i % 5,
			Workers: map[string]int{"running": 12 - i%3, "stalled": i % 3}}
		if db {
			p.HasDB, p.BuildLogBytes = true, int64(20+i)<<30
		}
		pts = append(pts, p)
	}
	return pts
}

// distinctColours counts the colours of a sample of the image's pixels.
func distinctColours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
		}
	}
	return len(seen)
}

func TestRenderChart(t *testing.T) {
	for _, db := range []bool{false, true} {
		data, err := digest.RenderChart("infra-prd", series(30, db))
		require.NoError(t, err)
		img, err := png.Decode(bytes.NewReader(data))
		require.NoError(t, err, "a PNG")
		assert.Equal(t, image.Rect(0, 0, digest.ChartWidth, digest.ChartHeight), img.Bounds())
		assert.Greater(t, distinctColours(img), 8, "not blank: lines, labels and grid are drawn")
	}
	// One digest: still a chart (a point per line).
	data, err := digest.RenderChart("infra-prd", series(1, false))
	require.NoError(t, err)
	_, err = png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	_, err = digest.RenderChart("infra-prd", nil)
	assert.Error(t, err)

	alt := digest.ChartAlt("infra-prd", series(30, true))
	assert.Equal(t, "Chart of infra-prd over the last 30 digests: pending builds (now 13), errored builds (now 4), workers by state (now 10 running, 2 stalled), build-log tables (now 49.0 GiB).", alt)
}

// A scheduled digest carries its chart; the series grows digest by
// digest up to ChartPoints and is kept in the history.
func TestScheduler_DigestHasAChart(t *testing.T) {
	env := newSchedEnv(at(10, 7, 0))
	s := env.start(t, nil)
	ctx := context.Background()
	s.Tick(ctx)
	for d := range 3 {
		env.set(at(10+d, 8, 0))
		s.Tick(ctx)
	}
	posts := env.chat.Posts()
	require.Len(t, posts, 3)
	last := posts[2].Msg
	require.Len(t, last.Files, 1)
	f := last.Files[0]
	assert.Contains(t, f.Name, "digest-infra-prd-")
	assert.Contains(t, f.Alt, "over the last 3 digests")
	_, err := png.Decode(bytes.NewReader(f.Data))
	require.NoError(t, err)
	assert.Len(t, env.hist.only(t).Series, 3)
	assert.Contains(t, last.Text, "Health digest", "the text stays complete")
}

func BenchmarkRenderChart(b *testing.B) {
	pts := series(digest.ChartPoints, true)
	for b.Loop() {
		if _, err := digest.RenderChart("infra-prd", pts); err != nil {
			b.Fatal(err)
		}
	}
}
