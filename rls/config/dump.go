package config

import (
	"fmt"
	"sort"
	"strings"
)

// Dump is the configuration as the reference's debug endpoint /rlconfig
// prints it: a line per rule, "<rule>: unit=<UNIT> requests_per_unit=<n>,
// shadow_mode: <bool>, quota_mode: <bool>" (an unlimited rule's unit
// UNKNOWN and 0, an extension rule's first limit), sorted (the
// reference's order is its maps').
func (c *Config) Dump() string {
	if c == nil {
		return ""
	}
	lines := make([]string, 0, len(c.Rules))
	for _, r := range c.Rules {
		var l Limit
		if len(r.Limits) > 0 {
			l = r.Limits[0]
		}
		lines = append(lines, fmt.Sprintf("%s: unit=%s requests_per_unit=%d, shadow_mode: %t, quota_mode: %t\n",
			r.Key, l.Unit, l.RequestsPerUnit, r.ShadowMode, r.QuotaMode))
	}
	sort.Strings(lines)
	return strings.Join(lines, "")
}
