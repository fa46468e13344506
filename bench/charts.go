package main

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/ratelua/ratelua/testbench"
)

// chart is one PNG written by drawCharts.
type chart struct {
	title string
	path  string
}

// drawCharts draws the charts the run has data for into dir: cost vs
// buckets and cost vs limits (the sweeps) and bytes per key per contender
// (the main table), each server kind a series.
func (rep report) drawCharts(dir string) ([]chart, error) {
	var out []chart
	for _, d := range []struct {
		file string
		draw func() (*plot.Plot, vg.Length, vg.Length, error)
	}{
		{"cost_vs_buckets.png", rep.bucketsChart},
		{"cost_vs_limits.png", rep.limitsChart},
		{"bytes_per_key.png", rep.bytesChart},
	} {
		p, w, h, err := d.draw()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.file, err)
		}
		if p == nil {
			continue
		}
		path := filepath.Join(dir, d.file)
		if err := p.Save(w, h, path); err != nil {
			return nil, fmt.Errorf("save %s: %w", path, err)
		}
		out = append(out, chart{title: p.Title.Text, path: path})
	}
	return out, nil
}

// sweepLines adds one line per server kind of a sweep to p; false when no
// server measured it.
func (rep report) sweepLines(p *plot.Plot, kind string) (bool, error) {
	found := false
	top := 0.0
	for i, sr := range rep.servers {
		rs := sr.sweep(kind)
		if len(rs) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(rs))
		for j, r := range rs {
			xys[j] = plotter.XY{X: r.c.x, Y: r.best().ratio}
			top = max(top, r.best().ratio)
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return false, err
		}
		l.Color, pts.Color = kindColor(sr.kind), kindColor(sr.kind)
		pts.Shape = plotutil.Shape(i)
		p.Add(l, pts)
		p.Legend.Add(fmt.Sprintf("ratelua sliding_window, %s %s (sweep load)", sr.kind, sr.version), l, pts)
		found = true
	}
	p.Y.Max = 1.4 * top // room for the legend above the lines
	return found, nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

func (rep report) bucketsChart() (*plot.Plot, vg.Length, vg.Length, error) {
	p := newPlot("sliding_window: server cost vs buckets per limit (1 limit)", "buckets per limit (log scale)", "server cost / floor")
	ok, err := rep.sweepLines(p, sweepBuckets)
	if err != nil || !ok {
		return nil, 0, 0, err
	}
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	return p, 18 * vg.Centimeter, 11 * vg.Centimeter, nil
}

func (rep report) limitsChart() (*plot.Plot, vg.Length, vg.Length, error) {
	p := newPlot("sliding_window: server cost vs limits", "limits", "server cost / floor")
	ok, err := rep.sweepLines(p, sweepLimits)
	if err != nil || !ok {
		return nil, 0, 0, err
	}
	// The main table's sliding_window and seed 002 design at 1 and 3
	// limits, on its own load (10,000 keys, real limits), as points.
	for _, sr := range rep.servers {
		for _, s := range []struct {
			label string
			group string
			shape draw.GlyphDrawer
		}{{"ratelua sliding_window (newest)", groupRatelua, draw.CrossGlyph{}}, {"seed 002 design", groupBaseline, draw.PyramidGlyph{}}} {
			var xys plotter.XYs
			for _, r := range sr.results {
				if r.c.group != s.group || r.c.version != 0 || r.c.functions || len(r.rounds) == 0 {
					continue
				}
				var x float64
				switch r.c.job {
				case jobSlidingWindow1:
					x = 1
				case jobSlidingWindow3:
					x = 3
				case jobSlidingWindow8:
					x = 8
				default:
					continue
				}
				xys = append(xys, plotter.XY{X: x, Y: r.best().ratio})
				p.Y.Max = max(p.Y.Max, 1.4*r.best().ratio) // room for the legend
			}
			if len(xys) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, 0, 0, err
			}
			sc.Color, sc.Shape, sc.Radius = kindColor(sr.kind), s.shape, vg.Points(4)
			p.Add(sc)
			p.Legend.Add(fmt.Sprintf("%s, %s (main table load)", s.label, sr.kind), sc)
		}
	}
	p.X.Min = 0
	p.X.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 1, Label: "1"}, {Value: 2, Label: "2"}, {Value: 3, Label: "3"}, {Value: 4, Label: "4"}, {Value: 8, Label: "8"}, {Value: 16, Label: "16"}})
	return p, 18 * vg.Centimeter, 12 * vg.Centimeter, nil
}

// bytesChart: horizontal bars of bytes per event key, one bar per server
// kind for each contender of the main table (and the floor).
func (rep report) bytesChart() (*plot.Plot, vg.Length, vg.Length, error) {
	var names []string
	var servers []serverResult
	for _, sr := range rep.servers {
		if len(sr.results) > 0 {
			servers = append(servers, sr)
		}
	}
	if len(servers) == 0 {
		return nil, 0, 0, nil
	}
	names = append(names, "floor: INCR counter with a TTL")
	for _, r := range servers[0].results {
		if r.c.functions || r.c.noMem {
			continue // the same state as its EVALSHA row, or not measured
		}
		names = append(names, r.c.name)
	}
	// Reverse, so that the first contender is at the top.
	for i, j := 0, len(names)-1; i < j; i, j = i+1, j-1 {
		names[i], names[j] = names[j], names[i]
	}
	p := newPlot("Bytes per event key (used_memory growth per event key over 10,000)", "bytes per key", "")
	p.Legend.Top, p.Legend.Left = true, false
	width := vg.Points(7)
	top := 0.0
	for i, sr := range servers {
		vals := make(plotter.Values, len(names))
		for j, name := range names {
			if name == names[len(names)-1] {
				vals[j] = sr.floor.mem.bytesPerKey
				continue
			}
			for _, r := range sr.results {
				if r.c.name == name {
					vals[j] = r.mem.bytesPerKey
				}
			}
		}
		for _, v := range vals {
			top = max(top, v)
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, 0, 0, err
		}
		bars.Horizontal = true
		bars.LineStyle.Width = 0
		bars.Color = kindColor(sr.kind)
		// The first server's bar above the second's.
		bars.Offset = -width * vg.Length(float64(i)-float64(len(servers)-1)/2)
		p.Add(bars)
		p.Legend.Add(fmt.Sprintf("%s %s", sr.kind, sr.version), bars)
	}
	p.NominalY(names...)
	p.X.Min, p.X.Max = 0, 1.15*top
	h := vg.Length(len(names))*vg.Points(float64(len(servers))*7+6) + 3*vg.Centimeter
	return p, 24 * vg.Centimeter, h, nil
}

// kindColor gives each server kind the same color in every chart.
func kindColor(k testbench.Kind) color.Color {
	if k == testbench.Valkey {
		return plotutil.Color(1)
	}
	return plotutil.Color(0)
}
