package ratehttp

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The fields follow draft-ietf-httpapi-ratelimit-headers-11: both are
// RFC 9651 Lists of Items whose value is the policy name as a String.
//
//	RateLimit-Policy: "login-5s";q=1;w=5, "login-1h";q=5;w=3600
//	RateLimit: "login-1h";r=0;t=3574
//
// q is the quota, w the window in seconds (a non-zero Integer), r the
// available quota and t the effective window: the seconds within which
// the client can use no more than r.

// maxSFInteger is the largest RFC 9651 Integer (15 digits).
const maxSFInteger = 999_999_999_999_999

// checkName reports why name cannot be a policy name: the fields carry it
// as an sf-string (printable ASCII and space), and an empty name names
// nothing.
func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("is empty")
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("has byte %#02x at %d: an sf-string holds printable ASCII only", c, i)
		}
	}
	return nil
}

// sfString serializes s, checked by checkName, as an sf-string.
func sfString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// policyItem is p as a member of RateLimit-Policy.
func policyItem(p policy) string {
	return p.item + ";q=" + strconv.FormatInt(p.quota, 10) + ";w=" + strconv.FormatInt(max(1, ceilSeconds(p.window)), 10)
}

// joinList serializes List members.
func joinList(items []string) string { return strings.Join(items, ", ") }

// ceilSeconds is d in whole seconds, rounded up, at most maxSFInteger.
func ceilSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return min(s, maxSFInteger)
}

// setHeaders sets the rate-limit fields of a response: the policies, the
// reported limit and, on a denial, Retry-After (t, never earlier).
func (m *Middleware) setHeaders(h http.Header, rep *report, denied bool) {
	if m.headers == HeadersNone {
		return
	}
	if rep.p == nil {
		if m.policy != "" { // every limit a dry run: nothing to show
			h["Ratelimit-Policy"] = []string{m.policy}
		}
		return
	}
	values := make([]string, 3) // one allocation for the fields' slices
	values[0] = m.policy
	h["Ratelimit-Policy"] = values[0:1:1]
	var buf [96]byte
	b := append(buf[:0], rep.p.item...)
	b = append(b, ";r="...)
	b = strconv.AppendInt(b, min(rep.res.Remaining, maxSFInteger), 10)
	t := -1
	if rep.wait >= 0 {
		b = append(b, ";t="...)
		t = len(b)
		b = strconv.AppendInt(b, ceilSeconds(rep.wait), 10)
	}
	values[1] = string(b)
	h["Ratelimit"] = values[1:2:2]
	if denied && t >= 0 {
		values[2] = values[1][t:] // Retry-After: t, the same seconds
		h["Retry-After"] = values[2:3:3]
	}
	if m.headers == HeadersIETFAndLegacy {
		h["X-Ratelimit-Limit"] = []string{strconv.FormatInt(rep.p.quota, 10)}
		h["X-Ratelimit-Remaining"] = []string{strconv.FormatInt(min(rep.res.Remaining, maxSFInteger), 10)}
		if rep.wait >= 0 {
			end := m.clock().Add(rep.wait)
			reset := end.Unix()
			if end.Nanosecond() > 0 {
				reset++
			}
			h["X-Ratelimit-Reset"] = []string{strconv.FormatInt(reset, 10)}
		}
	}
}

// quote writes s in an error message, bounded and escaped.
func quote(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}
