package statsref

import (
	"sort"
	"strconv"
	"testing"
)

func TestDebugReference(t *testing.T) {
	refPort := freePort(t)
	p := startPair(t, []string{"PROMETHEUS_ADDR=127.0.0.1:" + strconv.Itoa(refPort), "USE_PROMETHEUS=true"}, []string{}, "USE_STATSD=false")
	p.exercise(t, nil)
	url := "http://127.0.0.1:" + strconv.Itoa(refPort) + "/metrics"
	waitFor(t, "x", func() bool {
		samples, _ := scrape(t, url)
		v, _ := strconv.ParseFloat(samples[`ratelimit_service_total_requests{grpc_method="ShouldRateLimit"}`], 64)
		return v >= float64(p.sent)
	})
	m, types := scrape(t, url)
	var names []string
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Logf("%s %s", n, m[n])
	}
	t.Log(types)
}
