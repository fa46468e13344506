package statsink

import (
	"bytes"
	_ "embed"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Mapper turns statsd names into Prometheus names and labels, as the
// reference's Prometheus sink does with statsd_exporter's mapping
// (PROMETHEUS_MAPPER_YAML, or the reference's own by default): the first
// glob mapping that matches (each '*' one dot-separated component), else
// the first regular-expression mapping that matches (unanchored, as
// statsd_exporter's are), names the metric and its labels; an unmatched
// name is the statsd name with every character Prometheus does not allow
// made '_'.
type Mapper struct {
	globs, regexes []*mapping
	observer       string // the default observer type: summary or histogram
	buckets        []float64
}

// mapping is one entry of a mapping file.
type mapping struct {
	re         *regexp.Regexp
	glob       bool // templates expanded as statsd_exporter expands a glob's
	name, help string
	labels     map[string]string
	metricType string // counter, gauge, observer; empty for any
	drop       bool
	observer   string
	buckets    []float64
	scale      *float64
}

// The fields of a mapping file that statsink reads; any other is refused,
// so that a file is never half applied.
type mapperFile struct {
	Defaults struct {
		ObserverType        string    `yaml:"observer_type"`
		TimerType           string    `yaml:"timer_type"`
		MatchType           string    `yaml:"match_type"`
		Buckets             []float64 `yaml:"buckets"`
		GlobDisableOrdering bool      `yaml:"glob_disable_ordering"`
		HistogramOptions    struct {
			Buckets []float64 `yaml:"buckets"`
		} `yaml:"histogram_options"`
	} `yaml:"defaults"`
	Mappings []struct {
		Match            string            `yaml:"match"`
		MatchType        string            `yaml:"match_type"`
		Name             string            `yaml:"name"`
		Labels           map[string]string `yaml:"labels"`
		HonorLabels      bool              `yaml:"honor_labels"`
		Help             string            `yaml:"help"`
		Action           string            `yaml:"action"`
		MatchMetricType  string            `yaml:"match_metric_type"`
		ObserverType     string            `yaml:"observer_type"`
		TimerType        string            `yaml:"timer_type"`
		Buckets          []float64         `yaml:"buckets"`
		HistogramOptions *struct {
			Buckets []float64 `yaml:"buckets"`
		} `yaml:"histogram_options"`
		Scale *float64 `yaml:"scale"`
	} `yaml:"mappings"`
}

// Validity of names, as statsd_exporter checks them.
var (
	globRE      = regexp.MustCompile(`^(\*|[a-zA-Z_]([a-zA-Z0-9_\-])*)(\.\*|\.[a-zA-Z0-9_]([a-zA-Z0-9_\-])*)*$`)
	metricRE    = regexp.MustCompile(`^([a-zA-Z_]|(\$\{?\d+\}?))([a-zA-Z0-9_]|(\$\{?\d+\}?))*$`)
	labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]+$`)
)

// defBuckets are Prometheus's default histogram buckets (seconds).
var defBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// referenceMapping is the mapping of the reference's Prometheus sink: its
// per-rule statistics with the domain and the first one or two
// descriptor levels as labels, its errors, requests, response times and
// configuration loads.
//
//go:embed reference_mapping.yaml
var referenceMapping []byte

// ReferenceMapper returns the mapper of the reference's Prometheus sink
// (an error only if the embedded mapping were broken, which a test rules
// out).
func ReferenceMapper() (*Mapper, error) {
	return ParseMapper(referenceMapping)
}

// ParseMapper reads a statsd_exporter mapping file. A field statsink does
// not apply (ttl, summary_options, quantiles, ...), a bad glob, regular
// expression, metric or label name is an error naming it.
func ParseMapper(b []byte) (*Mapper, error) {
	var f mapperFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("statsink: mapping: %w", err)
	}
	m := &Mapper{observer: firstOf(f.Defaults.ObserverType, f.Defaults.TimerType, "summary"), buckets: defBuckets}
	if err := checkObserver(m.observer); err != nil {
		return nil, fmt.Errorf("statsink: mapping: defaults: %w", err)
	}
	if b := firstBuckets(f.Defaults.HistogramOptions.Buckets, f.Defaults.Buckets); b != nil {
		m.buckets = b
	}
	defMatch := firstOf(f.Defaults.MatchType, "glob")
	for i, e := range f.Mappings {
		where := fmt.Sprintf("statsink: mapping %d (%q)", i+1, e.Match)
		mp := &mapping{name: e.Name, help: e.Help, labels: e.Labels, metricType: e.MatchMetricType, scale: e.Scale,
			observer: firstOf(e.ObserverType, e.TimerType, m.observer), buckets: m.buckets}
		if e.HistogramOptions != nil && e.HistogramOptions.Buckets != nil {
			mp.buckets = e.HistogramOptions.Buckets
		} else if e.Buckets != nil {
			mp.buckets = e.Buckets
		}
		if err := checkObserver(mp.observer); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		switch e.Action {
		case "", "map":
		case "drop":
			mp.drop = true
		default:
			return nil, fmt.Errorf("%s: action %q: want map or drop", where, e.Action)
		}
		switch e.MatchMetricType {
		case "", "counter", "gauge", "observer":
		default:
			return nil, fmt.Errorf("%s: match_metric_type %q: want counter, gauge or observer", where, e.MatchMetricType)
		}
		if e.Name == "" {
			return nil, fmt.Errorf("%s: no name", where)
		}
		if !metricRE.MatchString(e.Name) {
			return nil, fmt.Errorf("%s: metric name %q is not a Prometheus name", where, e.Name)
		}
		for k := range e.Labels {
			if !labelNameRE.MatchString(k) {
				return nil, fmt.Errorf("%s: label name %q is not a Prometheus label name", where, k)
			}
		}
		switch t := firstOf(e.MatchType, defMatch); t {
		case "glob":
			if !globRE.MatchString(e.Match) {
				return nil, fmt.Errorf("%s: not a glob (dot-separated names or *)", where)
			}
			parts := strings.Split(e.Match, ".")
			for j, p := range parts {
				if p == "*" {
					parts[j] = `([^.]*)`
				} else {
					parts[j] = regexp.QuoteMeta(p)
				}
			}
			mp.re = regexp.MustCompile(`^` + strings.Join(parts, `\.`) + `$`)
			mp.glob = true
			m.globs = append(m.globs, mp)
		case "regex":
			re, err := regexp.Compile(e.Match)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			mp.re = re
			m.regexes = append(m.regexes, mp)
		default:
			return nil, fmt.Errorf("%s: match_type %q: want glob or regex", where, t)
		}
	}
	return m, nil
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstBuckets(b ...[]float64) []float64 {
	for _, v := range b {
		if v != nil {
			return v
		}
	}
	return nil
}

func checkObserver(t string) error {
	if t != "summary" && t != "histogram" {
		return fmt.Errorf("observer type %q: want summary or histogram", t)
	}
	return nil
}

// mapped is what a statsd name becomes.
type mapped struct {
	name     string
	help     string
	labels   map[string]string
	drop     bool
	observer string
	buckets  []float64
	scale    *float64
}

// defaultHelp is statsd_exporter's help of a metric whose mapping has
// none.
const defaultHelp = "Metric autogenerated by statsd_exporter."

// lookup returns the Prometheus metric of the statsd name of kind (counter,
// gauge or observer).
func (m *Mapper) lookup(name, kind string) mapped {
	for _, group := range [2][]*mapping{m.globs, m.regexes} {
		for _, mp := range group {
			if mp.metricType != "" && mp.metricType != kind {
				continue
			}
			idx := mp.re.FindStringSubmatchIndex(name)
			if idx == nil {
				continue
			}
			expand := func(template string) string {
				if mp.glob {
					return expandGlob(template, name, idx)
				}
				return string(mp.re.ExpandString(nil, template, name, idx))
			}
			out := mapped{drop: mp.drop, help: firstOf(mp.help, defaultHelp), observer: mp.observer, buckets: mp.buckets, scale: mp.scale,
				name: EscapeName(expand(mp.name)), labels: make(map[string]string, len(mp.labels))}
			for k, v := range mp.labels {
				out.labels[k] = expand(v)
			}
			return out
		}
	}
	return mapped{name: EscapeName(name), help: defaultHelp, observer: m.observer, buckets: m.buckets}
}

// globReference is a reference in a glob mapping's template, as
// statsd_exporter reads one: '$', an optional '{', the longest run of
// letters, digits, '_' and '$', an optional '}'.
var globReference = regexp.MustCompile(`\$\{?([a-zA-Z0-9_$]+)\}?`)

// expandGlob expands a glob mapping's template as statsd_exporter does:
// a reference to the n-th '*' (from 1) is its component; any other
// reference ("$0", "$2_x", a number past the stars) is removed.
func expandGlob(template, name string, idx []int) string {
	stars := len(idx)/2 - 1
	return globReference.ReplaceAllStringFunc(template, func(ref string) string {
		sub := globReference.FindStringSubmatch(ref)
		n, err := strconv.Atoi(sub[1])
		if err != nil || n < 1 || n > stars {
			return ""
		}
		return name[idx[2*n]:idx[2*n+1]]
	})
}

// EscapeName makes a statsd name a Prometheus name as statsd_exporter
// does: a leading digit gets a '_' before it, and every character but
// ASCII letters, digits and '_' becomes '_' (but the second '-' of "--").
func EscapeName(s string) string {
	var b strings.Builder
	if s != "" && s[0] >= '0' && s[0] <= '9' {
		b.WriteByte('_')
	}
	var prev rune
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
			b.WriteRune(c)
		case c == '-' && prev == '-':
		default:
			b.WriteByte('_')
		}
		prev = c
	}
	return b.String()
}
