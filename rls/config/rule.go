package config

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// limitSpec is one limit as written: rate_limit's own fields, or an item
// of its limits.
type limitSpec struct {
	rpu            uint32
	unit, duration string
	burst          int64
	hasBurst       bool
	unitNode       *yaml.Node
	durationNode   *yaml.Node
	burstNode      *yaml.Node
}

// field reads one field of a limit into s; it reports whether the key is
// one, and whether it loaded.
func (p *parser) field(s *limitSpec, k, v *yaml.Node) (isLimit, ok bool) {
	switch k.Value {
	case "requests_per_unit":
		return true, p.requests(v, &s.rpu)
	case "unit":
		s.unitNode = v
		return true, p.scalar(v, &s.unit)
	case "duration":
		s.durationNode = v
		return true, p.scalar(v, &s.duration)
	case "burst":
		s.burstNode, s.hasBurst = v, true
		return true, p.whole("burst", v, &s.burst)
	}
	return false, true
}

// limit builds the Limit s describes, reporting its errors at at when no
// field's node is closer.
func (p *parser) limit(s *limitSpec, at *yaml.Node) (Limit, bool) {
	l := Limit{RequestsPerUnit: s.rpu}
	ok := true
	if s.hasBurst {
		switch {
		case s.burst < 1:
			p.fail(s.burstNode, "burst %d is below 1: a bucket must hold at least one token", s.burst)
			ok = false
		case s.burst > MaxRequests:
			p.fail(s.burstNode, "burst %d is above %d, the most algorithm token_bucket takes", s.burst, MaxRequests)
			ok = false
		default:
			l.Burst = uint32(s.burst)
		}
	}
	if s.duration == "" {
		u, err := parseUnit(s.unit)
		if err != nil {
			p.fail(orNode(s.unitNode, at), "%v", err)
			return l, false
		}
		l.Unit = u
		return l, ok
	}
	if s.unit != "" {
		p.fail(s.durationNode, "give unit or duration, not both (unit %s, duration %s)", s.unit, s.duration)
		return l, false
	}
	d, err := time.ParseDuration(s.duration)
	switch {
	case err != nil || d <= 0:
		p.fail(s.durationNode, "duration '%s' is not a positive duration such as 30s or 5m", s.duration)
		return l, false
	case d%time.Millisecond != 0:
		p.fail(s.durationNode, "duration %v is not a whole number of milliseconds, the scripts' time unit", d)
		return l, false
	}
	l.Window, l.Unit = d, unitOfLength(d)
	return l, ok
}

// rule loads a rate_limit.
func (p *parser) rule(orig *yaml.Node, path string) *Rule {
	n := p.deref(orig)
	defer p.leave(orig)
	if n == nil {
		return nil
	}
	r := &Rule{File: p.file, Line: n.Line, Key: path}
	var resolution string
	var own limitSpec
	var limitsNode *yaml.Node
	ok := true
	for _, kv := range p.mapping(n, "rate_limit") {
		v := kv[1]
		if isLimit, loaded := p.field(&own, kv[0], v); isLimit {
			ok = loaded && ok
			continue
		}
		switch kv[0].Value {
		case "unlimited":
			ok = p.scalar(v, &r.Unlimited) && ok
		case "name":
			ok = p.scalar(v, &r.Name) && ok
		case "replaces":
			ok = p.replaces(r, v) && ok
		case "algorithm":
			ok = p.scalar(v, &r.Algorithm) && ok
			if r.Algorithm != "" && !knownAlgorithm(r.Algorithm) {
				p.fail(v, "algorithm '%s' is not one of fixed_window, sliding_window, token_bucket, zset_log, ar1", r.Algorithm)
				ok = false
			}
		case "resolution":
			if p.scalar(v, &resolution) {
				d, err := time.ParseDuration(resolution)
				if err != nil || d <= 0 {
					p.fail(v, "resolution '%s' is not a positive duration such as 100ms or 1s", resolution)
					ok = false
				}
				r.Resolution = d
			} else {
				ok = false
			}
		case "limits":
			limitsNode = v
		}
	}
	if r.Unlimited {
		if own.unit != "" {
			if _, err := parseUnit(own.unit); err == nil {
				p.fail(own.unitNode, "should not specify rate limit unit when unlimited")
				return nil
			}
		}
		if r.Algorithm != "" || limitsNode != nil || r.Resolution != 0 || own.duration != "" || own.hasBurst {
			p.fail(n, "an unlimited rate_limit takes no algorithm, resolution, limits, duration or burst")
			return nil
		}
	} else {
		l, lok := p.limit(&own, n)
		if !lok && l.Unit == 0 && l.Window == 0 {
			return nil
		}
		ok = lok && ok
		r.Limits = append(r.Limits, l)
		if limitsNode != nil {
			ok = p.limits(r, limitsNode) && ok
		}
		if r.Algorithm == "" && (len(r.Limits) > 1 || own.duration != "" || own.hasBurst) {
			// limits, duration or burst make an extension rule.
			r.Algorithm = "fixed_window"
		}
		if r.Resolution != 0 && r.Algorithm != "sliding_window" {
			p.fail(n, "resolution applies to algorithm sliding_window only")
			ok = false
		}
		if ok {
			if err := CheckRule(r); err != nil {
				p.fail(n, "%v", err)
				ok = false
			}
		}
	}
	for _, name := range r.Replaces {
		if name == r.Name {
			p.fail(n, "replaces should not contain name of same descriptor")
			ok = false
		}
	}
	if !ok {
		return nil
	}
	return r
}

func orNode(a, b *yaml.Node) *yaml.Node {
	if a != nil {
		return a
	}
	return b
}

// replaces loads rate_limit.replaces: a list of {name: ...}.
func (p *parser) replaces(r *Rule, orig *yaml.Node) bool {
	n := p.deref(orig)
	defer p.leave(orig)
	if n == nil || !p.count(n, 1+len(n.Content)) {
		return false
	}
	if n.Kind != yaml.SequenceNode {
		p.fail(n, "replaces must be a list of {name: ...}")
		return false
	}
	ok := true
	for _, orig := range n.Content {
		item := p.deref(orig)
		if item == nil {
			return false
		}
		var name string
		pairs := p.mapping(item, "a replaces entry")
		for _, kv := range pairs {
			if kv[0].Value == "name" {
				ok = p.scalar(kv[1], &name) && ok
			}
		}
		p.leave(orig)
		if name == "" {
			p.fail(item, "should not have an empty replaces entry")
			ok = false
			continue
		}
		r.Replaces = append(r.Replaces, name)
	}
	return ok
}

// limits loads rate_limit.limits: further {requests_per_unit, unit or
// duration, burst}.
func (p *parser) limits(r *Rule, orig *yaml.Node) bool {
	n := p.deref(orig)
	defer p.leave(orig)
	if n == nil || !p.count(n, 1+len(n.Content)) {
		return false
	}
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.fail(n, "limits must be a non-empty list of {requests_per_unit, unit}")
		return false
	}
	ok := true
	for _, orig := range n.Content {
		item := p.deref(orig)
		if item == nil {
			return false
		}
		var s limitSpec
		pairs := p.mapping(item, "a limit")
		for _, kv := range pairs {
			isLimit, loaded := p.field(&s, kv[0], kv[1])
			if !isLimit {
				p.fail(kv[0], "a limit takes requests_per_unit, unit or duration, and burst only, not %s", kv[0].Value)
				ok = false
			}
			ok = loaded && ok
		}
		p.leave(orig)
		l, lok := p.limit(&s, item)
		ok = lok && ok
		if lok {
			r.Limits = append(r.Limits, l)
		}
	}
	if len(r.Limits) > 16 {
		p.fail(n, "a rule holds at most 16 limits, got %d", len(r.Limits))
		ok = false
	}
	return ok
}

// MaxRequests is the largest requests_per_unit (and burst) of an extension
// rule's limit: the scripts' max is at most 10^9 (zset_log's
// MaxLogRequests). A reference rule takes any uint32, as the reference
// does: it is decided on a counter bounded at 2^52.
const MaxRequests = 1_000_000_000

// MaxLogRequests is the largest requests_per_unit of a zset_log limit
// (the script's max: a call adds or drops at most max + 1 members).
const MaxLogRequests = 10_000

// maxBucketProduct bounds a token_bucket limit's capacity times its
// window in milliseconds (the script's bound, 2^50).
const maxBucketProduct = 1 << 50

// CheckRule refuses a rule the scripts cannot decide. A reference rule
// takes any requests_per_unit. An extension rule's limits take 1 to
// MaxRequests (MaxLogRequests with zset_log), a burst with token_bucket
// only, a token_bucket's capacity times its window at most 2^50
// milliseconds, a window of whole milliseconds; a sliding window at most
// 10000 buckets, and a window set by duration a whole number of them.
func CheckRule(r *Rule) error {
	if r.Reference() {
		return nil
	}
	most := uint32(MaxRequests)
	if r.Algorithm == "zset_log" {
		most = MaxLogRequests
	}
	for _, l := range r.Limits {
		switch {
		case l.RequestsPerUnit == 0:
			return fmt.Errorf("requests_per_unit 0 is allowed in a reference rule only (one limit, no algorithm, duration or burst)")
		case l.RequestsPerUnit > most:
			return fmt.Errorf("requests_per_unit %d is above %d, the most algorithm %s takes", l.RequestsPerUnit, most, r.Algorithm)
		case l.Burst > 0 && r.Algorithm != "token_bucket":
			return fmt.Errorf("burst applies to algorithm token_bucket only, not %s", r.Algorithm)
		case l.Burst > MaxRequests:
			return fmt.Errorf("burst %d is above %d, the most algorithm token_bucket takes", l.Burst, MaxRequests)
		case l.Window < 0 || l.Window%time.Millisecond != 0:
			return fmt.Errorf("duration %v is not a positive whole number of milliseconds", l.Window)
		case l.Duration() <= 0:
			return fmt.Errorf("a limit needs a unit or a duration")
		}
		if r.Algorithm == "token_bucket" {
			if ms := uint64(l.Duration() / time.Millisecond); uint64(l.Capacity())*ms > maxBucketProduct {
				return fmt.Errorf("a token_bucket of %d tokens refilled over %v is beyond the script's bound: the tokens times the window in milliseconds must be at most 2^50", l.Capacity(), l.Duration())
			}
		}
	}
	if r.Algorithm == "sliding_window" && r.Resolution > 0 {
		for _, l := range r.Limits {
			d := l.Duration()
			if l.Window > 0 && d%r.Resolution != 0 {
				return fmt.Errorf("duration %v is not a whole number of resolution %v: the window would end past it", d, r.Resolution)
			}
			if (d+r.Resolution-1)/r.Resolution > 10000 {
				return fmt.Errorf("resolution %v cuts a %v window into more than 10000 buckets", r.Resolution, d)
			}
		}
	}
	return nil
}
