package statsink

import (
	"bufio"
	"bytes"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// PrometheusSink keeps the flushed statistics as Prometheus metrics and
// serves them in the text exposition format, as the reference's
// USE_PROMETHEUS does (statsd_exporter's exporter in the process): each
// statsd name mapped by the Mapper, a counter's flushes summed, a timer's
// values observed in a histogram (or a summary, exported as its sum and
// count) as they are, in milliseconds, as the reference observes them.
type PrometheusSink struct {
	mapper *Mapper
	mu     sync.Mutex
	fams   map[string]*family
}

// family is the series of one Prometheus metric name.
type family struct {
	kind   string // counter, gauge, histogram or summary
	help   string
	series map[string]*series // by the labels' text
}

// series is one labelled series.
type series struct {
	labels  string // {k="v",...} without the braces
	value   float64
	buckets []float64 // histogram upper bounds
	counts  []uint64  // observations per bucket (not cumulative)
	sum     float64
	count   uint64
}

// NewPrometheusSink returns a sink mapping names with m (ReferenceMapper
// for the reference's names; nil maps none: every name is the statsd name
// made a Prometheus name).
func NewPrometheusSink(m *Mapper) *PrometheusSink {
	if m == nil {
		m = &Mapper{observer: "summary", buckets: defBuckets}
	}
	return &PrometheusSink{mapper: m, fams: map[string]*family{}}
}

// get returns the series of the mapped metric, nil when the name is
// dropped or already a metric of another kind (statsd_exporter counts
// such an event as a conflict and drops it).
func (p *PrometheusSink) get(mp mapped, kind string) *series {
	if mp.drop || mp.name == "" {
		return nil
	}
	f := p.fams[mp.name]
	if f == nil {
		f = &family{kind: kind, help: mp.help, series: map[string]*series{}}
		p.fams[mp.name] = f
	}
	if f.kind != kind {
		return nil
	}
	key := labelText(mp.labels)
	s := f.series[key]
	if s == nil {
		s = &series{labels: key}
		if kind == "histogram" {
			s.buckets = mp.buckets
			s.counts = make([]uint64, len(mp.buckets))
		}
		f.series[key] = s
	}
	return s
}

// FlushCounter adds delta to the counter the name maps to.
func (p *PrometheusSink) FlushCounter(name string, delta uint64) {
	mp := p.mapper.lookup(name, "counter")
	v := float64(delta)
	if mp.scale != nil {
		v *= *mp.scale
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.get(mp, "counter"); s != nil && v >= 0 {
		s.value += v
	}
}

// FlushGauge sets the gauge the name maps to.
func (p *PrometheusSink) FlushGauge(name string, value uint64) {
	mp := p.mapper.lookup(name, "gauge")
	v := float64(value)
	if mp.scale != nil {
		v *= *mp.scale
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.get(mp, "gauge"); s != nil {
		s.value = v
	}
}

// FlushTimer observes ms in the histogram or summary the name maps to.
func (p *PrometheusSink) FlushTimer(name string, ms float64) {
	mp := p.mapper.lookup(name, "observer")
	if mp.scale != nil {
		ms *= *mp.scale
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.get(mp, mp.observer)
	if s == nil {
		return
	}
	s.sum += ms
	s.count++
	for i, b := range s.buckets {
		if ms <= b {
			s.counts[i]++
			break
		}
	}
}

// Flush does nothing: a scrape reads the metrics.
func (p *PrometheusSink) Flush() {}

// Close does nothing (the command closes the listener).
func (p *PrometheusSink) Close() error { return nil }

// ServeHTTP writes every metric in the text exposition format (0.0.4),
// sorted by name and labels. The text is made under the sink's lock and
// written after, so a slow scraper delays no request.
func (p *PrometheusSink) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	var out bytes.Buffer
	p.write(&out)
	_, _ = w.Write(out.Bytes())
}

// write writes every metric's text to out.
func (p *PrometheusSink) write(out *bytes.Buffer) {
	bw := bufio.NewWriter(out)
	defer bw.Flush()
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(p.fams))
	for n := range p.fams {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := p.fams[n]
		bw.WriteString("# HELP " + n + " " + strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(f.help) + "\n")
		bw.WriteString("# TYPE " + n + " " + f.kind + "\n")
		keys := make([]string, 0, len(f.series))
		for k := range f.series {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s := f.series[k]
			switch f.kind {
			case "counter", "gauge":
				sample(bw, n, s.labels, "", s.value)
			case "histogram":
				var cum uint64
				for i, b := range s.buckets {
					cum += s.counts[i]
					sample(bw, n+"_bucket", s.labels, `le="`+formatFloat(b)+`"`, float64(cum))
				}
				sample(bw, n+"_bucket", s.labels, `le="+Inf"`, float64(s.count))
				fallthrough
			case "summary":
				sample(bw, n+"_sum", s.labels, "", s.sum)
				sample(bw, n+"_count", s.labels, "", float64(s.count))
			}
		}
	}
}

// sample writes one line: name{labels,extra} value.
func sample(w *bufio.Writer, name, labels, extra string, v float64) {
	w.WriteString(name)
	if labels != "" || extra != "" {
		w.WriteByte('{')
		w.WriteString(labels)
		if labels != "" && extra != "" {
			w.WriteByte(',')
		}
		w.WriteString(extra)
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatFloat(v))
	w.WriteByte('\n')
}

// formatFloat is a value as the exposition format writes it.
func formatFloat(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// labelText is labels sorted by name, k="v" comma-separated, the values
// escaped.
func labelText(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + `="` + esc.Replace(labels[k]) + `"`)
	}
	return b.String()
}
