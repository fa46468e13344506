package config

import "strings"

// wildcard is a child of a node whose "key_value" holds '*': each '*'
// matches any run of bytes.
type wildcard struct {
	key   string
	parts []string
}

// matches reports whether s matches the pattern w.
func (w wildcard) matches(s string) bool {
	p := w.parts
	if len(p) == 1 {
		return p[0] == s
	}
	if !strings.HasPrefix(s, p[0]) {
		return false
	}
	s = s[len(p[0]):]
	last := p[len(p)-1]
	if len(s) < len(last) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[:len(s)-len(last)]
	for _, mid := range p[1 : len(p)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return true
}
