package digest

import (
	"bytes"
	"fmt"
	"image/color"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// ChartPoints is how many scheduled digests a chart shows (the last N).
const ChartPoints = 30

// Chart size in pixels (96 dpi).
const (
	ChartWidth  = 960
	ChartHeight = 540
)

// Point is what a chart keeps of one digest.
type Point struct {
	At      time.Time      `json:"at"`
	Pending int            `json:"pending"`
	Errored int            `json:"errored"`
	Workers map[string]int `json:"workers,omitempty"`
	// BuildLogBytes is set when the target has a database (HasDB).
	BuildLogBytes int64 `json:"build_log_bytes,omitempty"`
	HasDB         bool  `json:"has_db,omitempty"`
}

// PointOf is the chart point of a digest's figures.
func PointOf(d Data) Point {
	p := Point{At: d.At, Pending: d.Builds.Count("pending"), Errored: d.Builds.Count("errored"), Workers: map[string]int{}}
	for s, n := range d.Workers.ByState {
		p.Workers[s] = n
	}
	if d.DB != nil && d.DB.Err == "" {
		p.BuildLogBytes, p.HasDB = d.DB.BuildLogBytes, true
	}
	return p
}

// appendPoint adds p to the series, keeping the last ChartPoints.
func appendPoint(series []Point, p Point) []Point {
	out := append(append([]Point(nil), series...), p)
	if len(out) > ChartPoints {
		out = out[len(out)-ChartPoints:]
	}
	return out
}

// ChartAlt says in words what the chart of pts shows (alt text).
func ChartAlt(target string, pts []Point) string {
	if len(pts) == 0 {
		return ""
	}
	last := pts[len(pts)-1]
	var ws []string
	for _, s := range sortedStates(pts) {
		ws = append(ws, fmt.Sprintf("%d %s", last.Workers[s], s))
	}
	s := fmt.Sprintf("Chart of %s over the last %d digest%s: pending builds (now %d), errored builds (now %d), workers by state (now %s)",
		target, len(pts), plural(len(pts)), last.Pending, last.Errored, strings.Join(ws, ", "))
	if last.HasDB {
		s += fmt.Sprintf(", build-log tables (now %s)", gib(last.BuildLogBytes))
	}
	return s + "."
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

func sortedStates(pts []Point) []string {
	seen := map[string]bool{}
	for _, p := range pts {
		for s := range p.Workers {
			seen[s] = true
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// chart colours: problems warm, workers by state.
var (
	colPending = color.RGBA{R: 0xe6, G: 0x7e, B: 0x22, A: 0xff}
	colErrored = color.RGBA{R: 0xc0, G: 0x39, B: 0x2b, A: 0xff}
	colDB      = color.RGBA{R: 0x8e, G: 0x44, B: 0xad, A: 0xff}
	colState   = map[string]color.Color{
		"running":  color.RGBA{R: 0x27, G: 0xae, B: 0x60, A: 0xff},
		"stalled":  color.RGBA{R: 0xc0, G: 0x39, B: 0x2b, A: 0xff},
		"landing":  color.RGBA{R: 0xf1, G: 0xc4, B: 0x0f, A: 0xff},
		"landed":   color.RGBA{R: 0x7f, G: 0x8c, B: 0x8d, A: 0xff},
		"retiring": color.RGBA{R: 0x34, G: 0x98, B: 0xdb, A: 0xff},
	}
)

// RenderChart draws pts (oldest first) as a PNG of ChartWidth×ChartHeight:
// pending and errored builds on top, workers by state below (and the
// build-log tables' size when the target has a database), each line's
// current value labelled at its end.
func RenderChart(target string, pts []Point) ([]byte, error) {
	if len(pts) == 0 {
		return nil, fmt.Errorf("charting %s: no digests", target)
	}
	hasDB := pts[len(pts)-1].HasDB
	rows := 2
	if hasDB {
		rows = 3
	}
	x := func(i int) float64 { return float64(pts[i].At.Unix()) }
	line := func(p *plot.Plot, name string, c color.Color, y func(Point) float64, format func(float64) string) error {
		xy := make(plotter.XYs, len(pts))
		for i := range pts {
			xy[i] = plotter.XY{X: x(i), Y: y(pts[i])}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color, l.Width = c, vg.Points(2)
		p.Add(l)
		dots, err := plotter.NewScatter(xy)
		if err != nil {
			return err
		}
		dots.Color, dots.Radius, dots.Shape = c, vg.Points(2), draw.CircleGlyph{}
		p.Add(dots)
		last := xy[len(xy)-1]
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{last}, Labels: []string{name + " " + format(last.Y)}})
		if err != nil {
			return err
		}
		for i := range lab.TextStyle {
			lab.TextStyle[i].Color = c
			lab.TextStyle[i].Font.Size = vg.Points(10)
			lab.TextStyle[i].XAlign = draw.XLeft
			lab.TextStyle[i].YAlign = draw.YCenter
		}
		lab.Offset = vg.Point{X: vg.Points(5)}
		p.Add(lab)
		return nil
	}
	count := func(v float64) string { return fmt.Sprintf("%.0f", v) }
	newPlot := func(title, ylabel string) *plot.Plot {
		p := plot.New()
		p.Title.Text = title
		p.Title.TextStyle.Font.Size = vg.Points(12)
		p.Y.Label.Text = ylabel
		p.Y.Min = 0
		p.X.Tick.Marker = plot.TimeTicks{Format: "Jan 2\n15:04"}
		p.Add(plotter.NewGrid())
		return p
	}
	builds := newPlot(fmt.Sprintf("%s — last %d digest%s", target, len(pts), plural(len(pts))), "builds")
	if err := line(builds, "pending", colPending, func(p Point) float64 { return float64(p.Pending) }, count); err != nil {
		return nil, err
	}
	if err := line(builds, "errored", colErrored, func(p Point) float64 { return float64(p.Errored) }, count); err != nil {
		return nil, err
	}
	workers := newPlot("", "workers")
	for _, s := range sortedStates(pts) {
		c, ok := colState[s]
		if !ok {
			c = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
		}
		if err := line(workers, s, c, func(p Point) float64 { return float64(p.Workers[s]) }, count); err != nil {
			return nil, err
		}
	}
	plots := [][]*plot.Plot{{builds}, {workers}}
	if hasDB {
		db := newPlot("", "GiB")
		if err := line(db, "build logs", colDB, func(p Point) float64 { return float64(p.BuildLogBytes) / (1 << 30) },
			func(v float64) string { return fmt.Sprintf("%.1f GiB", v) }); err != nil {
			return nil, err
		}
		plots = append(plots, []*plot.Plot{db})
	}
	for _, row := range plots {
		for _, p := range row {
			p.X.Min, p.X.Max = x(0), x(len(pts)-1)
			if p.X.Min == p.X.Max {
				p.X.Min -= 3600
				p.X.Max += 3600
			}
			// Room for the end labels.
			span := p.X.Max - p.X.Min
			p.X.Max += span * 0.16
			if p.Y.Max < 1 {
				p.Y.Max = 1
			}
			p.Y.Max *= 1.15
		}
	}
	img := vgimg.NewWith(vgimg.UseWH(vg.Length(ChartWidth)*vg.Inch/96, vg.Length(ChartHeight)*vg.Inch/96), vgimg.UseDPI(96))
	dc := draw.New(img)
	dc = draw.Crop(dc, 0, -vg.Points(4), 0, -vg.Points(4))
	tiles := draw.Tiles{Rows: rows, Cols: 1, PadY: vg.Points(6), PadX: vg.Points(6), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align(plots, tiles, dc)
	for i, row := range plots {
		row[0].Draw(canvases[i][0])
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encoding the chart of %s: %w", target, err)
	}
	return buf.Bytes(), nil
}

// chartFile is the digest's chart as a message attachment (nil when it
// cannot be drawn: the text digest is complete without it).
func chartFile(target string, pts []Point, at time.Time) (*chatmodel.File, error) {
	png, err := RenderChart(target, pts)
	if err != nil {
		return nil, err
	}
	return &chatmodel.File{Name: fmt.Sprintf("digest-%s-%s.png", target, at.UTC().Format("20060102-1504")), Alt: ChartAlt(target, pts), Data: png}, nil
}
