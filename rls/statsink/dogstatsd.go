package statsink

import (
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// DogStatsdSink sends statistics as the reference's USE_DOG_STATSD does
// (DataDog's client, over UDP): "name:delta|c|#tag:value,..." for a
// counter, "name:ms|ms|#..." for a timer, the tags of a name (EXTRA_TAGS)
// split from it, and a name that a mogrifier matches renamed and tagged.
type DogStatsdSink struct {
	*lineSink
	global     []string // DD_ENV, DD_SERVICE, DD_VERSION, DD_ENTITY_ID as the client adds them
	mogrifiers []Mogrifier
}

// Mogrifier renames the statistics whose name its Pattern matches, as the
// reference's USE_DOG_STATSD_MOGRIFIERS: Name and each value of Tags with
// $0, $1, ... replaced by the match and its groups.
type Mogrifier struct {
	Pattern *regexp.Regexp
	Name    string
	Tags    map[string]string
}

// NewDogStatsdSink returns a dogstatsd sink sending UDP datagrams to addr
// (host:port), every line tagged with global first; the first of
// mogrifiers that matches a name renames it.
func NewDogStatsdSink(addr string, global []string, mogrifiers []Mogrifier, log *slog.Logger) (*DogStatsdSink, error) {
	s, err := newLineSink("udp", addr, log)
	if err != nil {
		return nil, err
	}
	return &DogStatsdSink{lineSink: s, global: global, mogrifiers: mogrifiers}, nil
}

// mogrify is name's dogstatsd name and tags.
func (s *DogStatsdSink) mogrify(name string) (string, []string) {
	name, tags := splitTags(name)
	for _, m := range s.mogrifiers {
		match := m.Pattern.FindStringSubmatch(name)
		if match == nil {
			continue
		}
		keys := make([]string, 0, len(m.Tags))
		for k := range m.Tags {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			tags = append(tags, k+":"+expand(m.Tags[k], match))
		}
		return expand(m.Name, match), tags
	}
	return name, tags
}

// placeholder is $0, $1, ... in a mogrifier's name or tag.
var placeholder = regexp.MustCompile(`\$\d+`)

// expand replaces $N in pattern by match[N] (a placeholder past the
// groups stays as it is).
func expand(pattern string, match []string) string {
	return placeholder.ReplaceAllStringFunc(pattern, func(p string) string {
		i, err := strconv.Atoi(p[1:])
		if err != nil || i >= len(match) {
			return p
		}
		return match[i]
	})
}

// line is one dogstatsd line.
func (s *DogStatsdSink) line(name, value, kind string) []byte {
	name, tags := s.mogrify(name)
	b := make([]byte, 0, len(name)+len(value)+64)
	b = append(b, name...)
	b = append(b, ':')
	b = append(b, value...)
	b = append(b, '|')
	b = append(b, kind...)
	first := true
	for _, group := range [2][]string{s.global, tags} {
		for _, t := range group {
			if first {
				b = append(b, "|#"...)
				first = false
			} else {
				b = append(b, ',')
			}
			b = append(b, strings.ReplaceAll(t, "\n", "")...)
		}
	}
	return append(b, '\n')
}

// FlushCounter adds the counter's line.
func (s *DogStatsdSink) FlushCounter(name string, delta uint64) {
	s.add(s.line(name, strconv.FormatUint(min(delta, 1<<63-1), 10), "c"))
}

// FlushGauge adds the gauge's line.
func (s *DogStatsdSink) FlushGauge(name string, value uint64) {
	s.add(s.line(name, strconv.FormatFloat(float64(value), 'f', -1, 64), "g"))
}

// FlushTimer adds the timer's line, in milliseconds with six decimals
// as DataDog's client writes them.
func (s *DogStatsdSink) FlushTimer(name string, ms float64) {
	s.add(s.line(name, strconv.FormatFloat(ms, 'f', 6, 64), "ms"))
}

// MogrifiersFromEnv reads the mogrifiers names lists
// (USE_DOG_STATSD_MOGRIFIERS) as the reference does: for each NAME,
// DOG_STATSD_MOGRIFIER_NAME_PATTERN (a regular expression),
// DOG_STATSD_MOGRIFIER_NAME_NAME and DOG_STATSD_MOGRIFIER_NAME_TAGS
// ("key:value,..."). A missing pattern or name, a pattern that does not
// compile or a tag without a value is an error naming the variable.
func MogrifiersFromEnv(names []string, getenv func(string) string) ([]Mogrifier, error) {
	var out []Mogrifier
	for _, n := range names {
		prefix := "DOG_STATSD_MOGRIFIER_" + n + "_"
		pattern, name := getenv(prefix+"PATTERN"), getenv(prefix+"NAME")
		if pattern == "" {
			return nil, fmt.Errorf("%sPATTERN: not set (mogrifier %s of USE_DOG_STATSD_MOGRIFIERS)", prefix, n)
		}
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, fmt.Errorf("%sPATTERN=%q: %w", prefix, pattern, err)
		}
		if name == "" {
			return nil, fmt.Errorf("%sNAME: not set (mogrifier %s of USE_DOG_STATSD_MOGRIFIERS)", prefix, n)
		}
		tags, err := ParseTags(getenv(prefix + "TAGS"))
		if err != nil {
			return nil, fmt.Errorf("%sTAGS: %w", prefix, err)
		}
		for k, v := range tags {
			if v == "" {
				return nil, fmt.Errorf("%sTAGS: tag %q has no value", prefix, k)
			}
		}
		out = append(out, Mogrifier{Pattern: re, Name: name, Tags: tags})
	}
	return out, nil
}

// ParseTags reads "key:value,key:value" (EXTRA_TAGS, a mogrifier's TAGS)
// as the reference's settings library reads a map: an item without ':' is
// an error; empty is no tags.
func ParseTags(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("%q is not key:value", item)
		}
		out[k] = v
	}
	return out, nil
}
