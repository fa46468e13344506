package config

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// rule loads a rate_limit.
func (p *parser) rule(orig *yaml.Node, path string) *Rule {
	n := p.deref(orig)
	defer p.leave(orig)
	if n == nil {
		return nil
	}
	r := &Rule{File: p.file, Line: n.Line, Key: path}
	var unit, resolution string
	var unitNode, rpuNode, limitsNode *yaml.Node
	var rpu uint32
	ok := true
	for _, kv := range p.mapping(n, "rate_limit") {
		v := kv[1]
		switch kv[0].Value {
		case "requests_per_unit":
			rpuNode = v
			ok = p.requests(v, &rpu) && ok
		case "unit":
			unitNode = v
			ok = p.scalar(v, &unit) && ok
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
		if unit != "" {
			if _, err := parseUnit(unit); err == nil {
				p.fail(unitNode, "should not specify rate limit unit when unlimited")
				return nil
			}
		}
		if r.Algorithm != "" || limitsNode != nil || r.Resolution != 0 {
			p.fail(n, "an unlimited rate_limit takes no algorithm, resolution or limits")
			return nil
		}
	} else {
		u, err := parseUnit(unit)
		if err != nil {
			p.fail(orNode(unitNode, n), "%v", err)
			return nil
		}
		r.Limits = append(r.Limits, Limit{RequestsPerUnit: rpu, Unit: u})
		if limitsNode != nil {
			ok = p.limits(r, limitsNode) && ok
		}
		if r.Algorithm == "" && len(r.Limits) > 1 {
			r.Algorithm = "fixed_window"
		}
		if r.Resolution != 0 && r.Algorithm != "sliding_window" {
			p.fail(n, "resolution applies to algorithm sliding_window only")
			ok = false
		}
		if ok {
			if err := CheckRule(r); err != nil {
				p.fail(orNode(rpuNode, n), "%v", err)
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

// limits loads rate_limit.limits: further {requests_per_unit, unit}.
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
		var unit string
		var rpu uint32
		var unitNode *yaml.Node
		pairs := p.mapping(item, "a limit")
		for _, kv := range pairs {
			switch kv[0].Value {
			case "requests_per_unit":
				ok = p.requests(kv[1], &rpu) && ok
			case "unit":
				unitNode = kv[1]
				ok = p.scalar(kv[1], &unit) && ok
			default:
				p.fail(kv[0], "a limit takes requests_per_unit and unit only, not %s", kv[0].Value)
				ok = false
			}
		}
		p.leave(orig)
		u, err := parseUnit(unit)
		if err != nil {
			p.fail(orNode(unitNode, item), "%v", err)
			ok = false
			continue
		}
		r.Limits = append(r.Limits, Limit{RequestsPerUnit: rpu, Unit: u})
	}
	if len(r.Limits) > 16 {
		p.fail(n, "a rule holds at most 16 limits, got %d", len(r.Limits))
		ok = false
	}
	return ok
}

// MaxRequests is the largest requests_per_unit the scripts take (their max
// is at most 10^9, and a reference rule needs one more).
const MaxRequests = 999_999_999

// CheckRule refuses a rule the scripts cannot decide: a requests_per_unit
// above MaxRequests, 0 in an extension rule, a sliding window of more than
// 10000 buckets.
func CheckRule(r *Rule) error {
	for _, l := range r.Limits {
		if l.RequestsPerUnit > MaxRequests {
			return fmt.Errorf("requests_per_unit %d is above %d, the most ratelua-rls decides", l.RequestsPerUnit, MaxRequests)
		}
		if !r.Reference() && l.RequestsPerUnit == 0 {
			return fmt.Errorf("requests_per_unit 0 is allowed in a reference rule only (one limit, no algorithm)")
		}
	}
	if r.Algorithm == "sliding_window" && r.Resolution > 0 {
		for _, l := range r.Limits {
			if d := l.Duration(); (d+r.Resolution-1)/r.Resolution > 10000 {
				return fmt.Errorf("resolution %v cuts a %v window into more than 10000 buckets", r.Resolution, d)
			}
		}
	}
	return nil
}
