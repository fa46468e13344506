package settings

import (
	"os"
	"strconv"
	"strings"

	"github.com/ratelua/ratelua/rls/statsink"
)

// stats reads where the statistics go, refusing what the reference
// refuses (two sinks at once) and what it would misread.
func (r *envReader) stats() statsink.Config {
	c := statsink.Config{
		Disable:        r.bool("DISABLE_STATS"),
		Statsd:         r.bool("USE_STATSD"),
		StatsdHost:     r.str("STATSD_HOST"),
		StatsdPort:     r.int("STATSD_PORT"),
		StatsdProtocol: strings.ToLower(r.str("STATSD_PROTOCOL")),
		DogStatsd:      r.bool("USE_DOG_STATSD"),
		Prometheus:     r.bool("USE_PROMETHEUS"),
		PrometheusAddr: r.str("PROMETHEUS_ADDR"),
		PrometheusPath: r.str("PROMETHEUS_PATH"),
		FlushInterval:  r.duration("STATS_FLUSH_INTERVAL"),
	}
	tags, err := statsink.ParseTags(r.str("EXTRA_TAGS"))
	if err != nil {
		r.fail("EXTRA_TAGS", r.getenv("EXTRA_TAGS"), err.Error())
	}
	c.ExtraTags = tags
	mogrifiers := r.str("USE_DOG_STATSD_MOGRIFIERS")
	mapper := r.str("PROMETHEUS_MAPPER_YAML")
	if c.Disable {
		// The reference reads nothing else of its statistics then.
		return c
	}
	switch c.StatsdProtocol {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
	default:
		r.fail("STATSD_PROTOCOL", c.StatsdProtocol, "must be tcp or udp")
	}
	if c.StatsdPort < 0 || c.StatsdPort > 65535 {
		r.fail("STATSD_PORT", strconv.Itoa(c.StatsdPort), "must be a port from 0 to 65535")
	}
	if c.FlushInterval <= 0 {
		r.fail("STATS_FLUSH_INTERVAL", c.FlushInterval.String(), "must be above 0")
	}
	if !strings.HasPrefix(c.PrometheusPath, "/") {
		r.fail("PROMETHEUS_PATH", c.PrometheusPath, "must start with /")
	}
	n := 0
	for _, on := range []bool{c.Statsd, c.DogStatsd, c.Prometheus} {
		if on {
			n++
		}
	}
	if n > 1 {
		name := "USE_DOG_STATSD"
		if !c.DogStatsd {
			name = "USE_PROMETHEUS"
		}
		r.fail(name, r.getenv(name), statsink.ErrSeveralSinks.Error())
	}
	if c.DogStatsd {
		var names []string
		if mogrifiers != "" {
			names = strings.Split(mogrifiers, ",")
		}
		m, err := statsink.MogrifiersFromEnv(names, r.getenv)
		if err != nil {
			r.fail("USE_DOG_STATSD_MOGRIFIERS", mogrifiers, err.Error())
		}
		c.Mogrifiers = m
		// DataDog's client tags every line with these, as the
		// reference's does.
		for _, t := range [...]struct{ env, tag string }{{"DD_ENV", "env"}, {"DD_SERVICE", "service"}, {"DD_VERSION", "version"}} {
			if v := r.getenv(t.env); v != "" {
				c.DogStatsdTags = append(c.DogStatsdTags, t.tag+":"+v)
			}
		}
	}
	if c.Prometheus && mapper != "" {
		b, err := os.ReadFile(mapper)
		if err == nil {
			c.Mapper, err = statsink.ParseMapper(b)
		}
		if err != nil {
			r.fail("PROMETHEUS_MAPPER_YAML", mapper, err.Error())
		}
	}
	return c
}
