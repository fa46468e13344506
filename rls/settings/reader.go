package settings

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// logLevel is a LOG_LEVEL (logrus's levels, as the reference's) as
// slog's level.
func logLevel(name string) (slog.Level, bool) {
	switch strings.ToLower(name) {
	case "trace":
		return slog.LevelDebug - 4, true
	case "debug":
		return slog.LevelDebug, true
	case "info":
		return slog.LevelInfo, true
	case "warn", "warning":
		return slog.LevelWarn, true
	case "error":
		return slog.LevelError, true
	case "fatal":
		return slog.LevelError + 4, true
	case "panic":
		return slog.LevelError + 8, true
	}
	return 0, false
}

// envReader reads typed variables by the table's names and defaults,
// remembering the first error.
type envReader struct {
	getenv func(string) string
	table  map[string]Setting
	read   map[string]bool // by the typed readers
	err    error
}

// def is the table's default of name; a name not in the table is an
// error of the program, reported as the first error.
func (r *envReader) def(name string) string {
	t, ok := r.table[name]
	if !ok {
		r.fail(name, "", "not in the table of settings (settings.Table)")
	}
	return t.Default
}

// checkTable parses every setting given by its parser, refuses each
// Refused one set to other than its Off value, and returns the Unused
// ones given.
func (r *envReader) checkTable() []UnusedSetting {
	var unused []UnusedSetting
	for _, t := range Table() {
		v := r.getenv(t.Name)
		if v == "" {
			continue
		}
		p, ok := parseSetting(t.Parser, v)
		if !ok {
			r.fail(t.Name, v, "not a value of type "+string(t.Parser)+" (the reference refuses it too)")
			continue
		}
		switch t.Status {
		case Refused:
			off, _ := parseSetting(t.Parser, t.Off)
			if p != off {
				r.fail(t.Name, v, t.Why)
			}
		case Unused:
			unused = append(unused, UnusedSetting{Name: t.Name, Value: v, Why: t.Why})
		}
	}
	for _, name := range []string{"REDIS_POOL_ON_EMPTY_BEHAVIOR", "REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR"} {
		if on, _ := strconv.ParseBool(r.getenv("REDIS_PERSECOND")); perSecondOnly(name) && !on {
			continue // the reference reads it only with a per-second pool
		}
		if v := strings.ToUpper(r.getenv(name)); v != "" && v != "WAIT" {
			r.fail(name, r.getenv(name), "must be WAIT (the reference refuses CREATE and ERROR too)")
		}
	}
	return unused
}

// parseSetting parses v as a value of p, in a form that compares: a
// string, int64, bool, float64 or time.Duration.
func parseSetting(p Parser, v string) (any, bool) {
	switch p {
	case kindInt:
		n, err := strconv.ParseInt(v, 0, 64)
		return n, err == nil
	case kindBool:
		b, err := strconv.ParseBool(v)
		return b, err == nil
	case kindFloat:
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	case kindDuration:
		d, err := time.ParseDuration(v)
		return d, err == nil
	case kindMap:
		for _, pair := range strings.Split(v, ",") {
			if _, _, ok := strings.Cut(pair, ":"); !ok {
				return v, false
			}
		}
	}
	return v, true
}

func (r *envReader) fail(name, value, why string) {
	if r.err == nil {
		r.err = fmt.Errorf("rls: %s=%q: %s", name, value, why)
	}
}

func (r *envReader) str(name string) string {
	r.read[name] = true
	if v := r.getenv(name); v != "" {
		return v
	}
	return r.def(name)
}

func (r *envReader) int(name string) int {
	v := r.str(name)
	n, err := strconv.Atoi(v)
	if err != nil {
		r.fail(name, v, "not an integer")
	}
	return n
}

func (r *envReader) bool(name string) bool {
	v := r.str(name)
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(name, v, "not true or false")
	}
	return b
}

func (r *envReader) float(name string) float64 {
	v := r.str(name)
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		r.fail(name, v, "not a number")
	}
	return f
}

func (r *envReader) duration(name string) time.Duration {
	v := r.str(name)
	d, err := time.ParseDuration(v)
	if err != nil {
		r.fail(name, v, "not a duration such as 1s")
	}
	return d
}
