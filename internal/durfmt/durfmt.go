// Package durfmt writes durations the short way people read them in policy
// names and timelines: 5s, 1h, 1h30m, 59m34s; a duration that is not a
// whole number of seconds (1.5s, 1500µs) or not positive as
// time.Duration.String writes it.
package durfmt

import (
	"strconv"
	"strings"
	"time"
)

// Short writes d: whole hours, minutes and seconds, leaving out the zero
// ones.
func Short(d time.Duration) string {
	if d <= 0 || d%time.Second != 0 {
		return d.String()
	}
	var b strings.Builder
	h, m, s := int64(d/time.Hour), int64(d%time.Hour/time.Minute), int64(d%time.Minute/time.Second)
	if h > 0 {
		b.WriteString(strconv.FormatInt(h, 10) + "h")
	}
	if m > 0 {
		b.WriteString(strconv.FormatInt(m, 10) + "m")
	}
	if s > 0 {
		b.WriteString(strconv.FormatInt(s, 10) + "s")
	}
	return b.String()
}
