package stats

import (
	"regexp"
	"strings"
)

// MaxStatNamesPerRule bounds the statistics names of one rule: with
// detailed_metric (or value_to_metric) each descriptor value is a name of
// its own, so that a client sending new values would grow the statistics
// without end. The first MaxStatNamesPerRule names a rule counts keep
// their own counters; the hits of every later name count under one name,
// the rule's with OverflowSuffix ("app.ip.(other)"), so a rule's totals
// stay whole. Descriptors carrying their own limit are bounded the same
// way per domain, under "<domain>.(override).(other)".
const MaxStatNamesPerRule = 1000

// OverflowSuffix ends the statistics name that counts a rule's names past
// MaxStatNamesPerRule.
const OverflowSuffix = ".(other)"

// ipv4 is an IPv4 address as the reference's statistics names rewrite it.
var ipv4 = regexp.MustCompile(`\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}`)

// sanitizeStatName makes a statistics name as the reference does: ':'
// and '|' become '_', and so do the dots of an IPv4 address.
func sanitizeStatName(s string) string {
	if strings.ContainsAny(s, ":|") {
		s = strings.NewReplacer(":", "_", "|", "_").Replace(s)
	}
	if !strings.Contains(s, ".") {
		return s
	}
	return ipv4.ReplaceAllStringFunc(s, func(ip string) string { return strings.ReplaceAll(ip, ".", "_") })
}
