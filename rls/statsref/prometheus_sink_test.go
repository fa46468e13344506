package statsref

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/statsd_exporter/pkg/event"
	"github.com/prometheus/statsd_exporter/pkg/exporter"
	"github.com/prometheus/statsd_exporter/pkg/mapper"

	"github.com/ratelua/ratelua/rls/statsink"
)

// referenceMapperFile is the mapping the reference's Prometheus sink
// embeds, read from the pinned module's source.
func referenceMapperFile(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-json", "github.com/envoyproxy/ratelimit").Output()
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go list -m github.com/envoyproxy/ratelimit: %v %s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(m.Dir, "src", "stats", "prom", "default_mapper.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// statEvent is one statsd event of the service: a counter's increase, a
// gauge's value or a timer's value (ms).
type statEvent struct {
	kind  string // counter, gauge, observer
	name  string
	value uint64
}

// randomEvents are n events named as the service names its statistics:
// rules of one to four levels (values with dots, digits, dashes), every
// statistic and service counter, the Go runtime's gauges, the response
// time.
func randomEvents(seed uint64, n int) []statEvent {
	r := rand.New(rand.NewPCG(seed, 7))
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	out := make([]statEvent, n)
	for i := range out {
		var e statEvent
		switch r.IntN(10) {
		case 0:
			e = statEvent{kind: "counter", name: "ratelimit.service." + pick("config_load_success", "config_load_error", "global_shadow_mode",
				"call.should_rate_limit.redis_error", "call.should_rate_limit.service_error")}
		case 1:
			e = statEvent{kind: "counter", name: "ratelimit." + pick("app", "9x", "a-b") + ".domain_not_found"}
		case 2:
			e = statEvent{kind: "gauge", name: "ratelimit.go." + pick("alloc", "numGoroutine", "heapSys")}
		case 3:
			e = statEvent{kind: "observer", name: "ratelimit_server.ShouldRateLimit.response_time"}
		case 4:
			e = statEvent{kind: "counter", name: "ratelimit_server." + pick("ShouldRateLimit", "Check") + ".total_requests"}
		default:
			levels := []string{pick("app", "edge", "9d")}
			for range 1 + r.IntN(4) {
				levels = append(levels, pick("user", "user_u1", "ip_10_0_0_1", "path_/v1/x", "k-v", "1", "(other)", "value_v.1"))
			}
			e = statEvent{kind: "counter", name: "ratelimit.service.rate_limit." + strings.Join(levels, ".") + "." +
				pick("total_hits", "over_limit", "near_limit", "within_limit", "shadow_mode", "over_limit_with_local_cache")}
		}
		e.value = uint64(r.IntN(2000))
		if e.kind == "counter" && e.value == 0 {
			e.value = 1
		}
		out[i] = e
	}
	return out
}

// exporterSamples runs the events through statsd_exporter (the
// reference's Prometheus sink) with mapping, and returns its ratelimit
// metrics' samples by "name{labels}" and their families' types.
func exporterSamples(t *testing.T, mapping string, events []statEvent) (map[string]string, map[string]string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := &mapper.MetricMapper{Registerer: reg}
	if err := m.InitFromYAMLString(mapping); err != nil {
		t.Fatal(err)
	}
	cv := func(name, label string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name}, []string{label})
	}
	exp := exporter.NewExporter(reg, m, log.NewNopLogger(), cv("actions", "action"), prometheus.NewCounter(prometheus.CounterOpts{Name: "unmapped"}),
		cv("errors", "reason"), cv("events", "type"), cv("conflicts", "type"),
		prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "metrics"}, []string{"type"}))
	ch := make(chan event.Events)
	done := make(chan struct{})
	go func() { exp.Listen(ch); close(done) }()
	for _, e := range events {
		switch e.kind {
		case "counter":
			ch <- event.Events{&event.CounterEvent{CMetricName: e.name, CValue: float64(e.value), CLabels: map[string]string{}}}
		case "gauge":
			ch <- event.Events{&event.GaugeEvent{GMetricName: e.name, GValue: float64(e.value), GLabels: map[string]string{}}}
		case "observer":
			ch <- event.Events{&event.ObserverEvent{OMetricName: e.name, OValue: float64(e.value), OLabels: map[string]string{}}}
		}
	}
	close(ch)
	<-done
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	samples, types := map[string]string{}, map[string]string{}
	for _, f := range fams {
		name := f.GetName()
		switch name {
		case "actions", "unmapped", "errors", "events", "conflicts", "metrics":
			continue
		}
		types[name] = strings.ToLower(f.GetType().String())
		for _, mt := range f.GetMetric() {
			labels := func(extra ...string) string {
				var ls []string
				for _, l := range mt.GetLabel() {
					ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				}
				ls = append(ls, extra...)
				if len(ls) == 0 {
					return ""
				}
				sort.Strings(ls)
				return "{" + strings.Join(ls, ",") + "}"
			}
			f2 := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
			switch {
			case mt.Counter != nil:
				samples[name+labels()] = f2(mt.GetCounter().GetValue())
			case mt.Gauge != nil:
				samples[name+labels()] = f2(mt.GetGauge().GetValue())
			case mt.Histogram != nil:
				h := mt.GetHistogram()
				for _, b := range h.GetBucket() {
					samples[name+"_bucket"+labels(`le="`+f2(b.GetUpperBound())+`"`)] = f2(float64(b.GetCumulativeCount()))
				}
				samples[name+"_bucket"+labels(`le="+Inf"`)] = f2(float64(h.GetSampleCount()))
				samples[name+"_sum"+labels()] = f2(h.GetSampleSum())
				samples[name+"_count"+labels()] = f2(float64(h.GetSampleCount()))
			case mt.Summary != nil:
				// The quantiles are not compared: statsink exports a
				// summary's sum and count.
				s := mt.GetSummary()
				samples[name+"_sum"+labels()] = f2(s.GetSampleSum())
				samples[name+"_count"+labels()] = f2(float64(s.GetSampleCount()))
			}
		}
	}
	return samples, types
}

// sinkSamples runs the events through statsink's Prometheus sink with
// mapping and scrapes it.
func sinkSamples(t *testing.T, mapping string, events []statEvent) (map[string]string, map[string]string) {
	t.Helper()
	m, err := statsink.ParseMapper([]byte(mapping))
	if err != nil {
		t.Fatal(err)
	}
	sink := statsink.NewPrometheusSink(m)
	for _, e := range events {
		switch e.kind {
		case "counter":
			sink.FlushCounter(e.name, e.value)
		case "gauge":
			sink.FlushGauge(e.name, e.value)
		case "observer":
			sink.FlushTimer(e.name, float64(e.value))
		}
	}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	samples, types := scrape(t, srv.URL)
	for k := range samples {
		if strings.Contains(k, "quantile=") {
			delete(samples, k)
		}
	}
	return samples, types
}

// TestPrometheusSinkAgainstStatsdExporter sends random statistics of the
// service's names through the reference's Prometheus machinery
// (statsd_exporter's mapper and exporter, with the reference's own
// mapping file, and with a user's PROMETHEUS_MAPPER_YAML) and through
// statsink's sink: the same metrics, labels, types and values.
func TestPrometheusSinkAgainstStatsdExporter(t *testing.T) {
	custom := `defaults:
  observer_type: histogram
  histogram_options:
    buckets: [1, 5, 50, 500]
mappings:
  - match: ratelimit.service.rate_limit.*.*.*.total_hits
    name: rl_hits_deep
    labels: {domain: "$1", rule: "$2_$3"}
  - match: ratelimit.service.rate_limit.*.*.total_hits
    name: rl_hits
    help: hits per rule
    labels: {domain: "$1", rule: "$2"}
  - match: ratelimit\.service\.rate_limit\.([^.]*)\..*\.(over_limit|near_limit)$
    match_type: regex
    name: rl_${2}
    labels: {domain: "$1"}
  - match: ratelimit.service.rate_limit.*.*.*.*.*
    name: dropped
    action: drop
  - match: ratelimit.go.*
    match_metric_type: gauge
    name: rl_go_$1
  - match: ratelimit_server.*.response_time
    name: rl_response_ms
    observer_type: summary
    labels: {method: "$1"}
  - match: ratelimit_server.*.total_requests
    name: rl_requests
    scale: 2
    labels: {method: "$1"}
`
	for name, mapping := range map[string]string{"reference": referenceMapperFile(t), "custom": custom} {
		t.Run(name, func(t *testing.T) {
			events := randomEvents(uint64(len(name)), 3000)
			want, wantTypes := exporterSamples(t, mapping, events)
			got, gotTypes := sinkSamples(t, mapping, events)
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: statsd_exporter %s, statsink %q", k, v, got[k])
				}
			}
			for k, v := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("%s %s: statsink only", k, v)
				}
			}
			for k, v := range wantTypes {
				if gotTypes[k] != v {
					t.Errorf("type of %s: statsd_exporter %s, statsink %q", k, v, gotTypes[k])
				}
			}
			if len(want) < 50 {
				t.Fatalf("%d samples: the events exercise too little", len(want))
			}
			t.Logf("%d samples, %d families compared", len(want), len(wantTypes))
		})
	}
}
