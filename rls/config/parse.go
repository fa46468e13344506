package config

import (
	"fmt"
	"math"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ParseOptions configure Parse.
type ParseOptions struct {
	// MergeDomains lets several files add rules to one domain
	// (MERGE_DOMAIN_CONFIG); otherwise a repeated domain is an error.
	MergeDomains bool
}

// knownKey reports whether k is a key the reference accepts anywhere in a
// file, or one of ours, which the reference refuses ("unknown key"), so
// that a file using them is never misread there.
func knownKey(k string) bool {
	switch k {
	case "domain", "key", "value", "descriptors",
		"rate_limit", "unit", "requests_per_unit",
		"unlimited", "shadow_mode", "quota_mode",
		"name", "replaces", "detailed_metric",
		"value_to_metric", "share_threshold", "metadata":
		return true
	case "algorithm", "resolution", "limits", "duration", "burst": // ours
		return true
	}
	return false
}

// knownAlgorithm reports whether a is an algorithm of rate_limit.
func knownAlgorithm(a string) bool {
	switch a {
	case "fixed_window", "sliding_window", "token_bucket", "zset_log", "ar1":
		return true
	}
	return false
}

// parser collects the errors of one Parse.
type parser struct {
	errs Errors
	file string
	b    bounds
}

func (p *parser) fail(n *yaml.Node, format string, args ...any) {
	if p.b.stopped || p.tooMany() {
		return
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// Parse reads configuration files in the reference's YAML, with ratelua's
// extension fields, and builds the rules. It reports every error it finds,
// each with its file and line, as Errors.
func Parse(files []File, opts ParseOptions) (*Config, error) {
	c := &Config{domains: map[string]*node{}}
	p := &parser{}
	for _, f := range files {
		if p.b.full || p.tooMany() {
			break
		}
		p.file = f.Name
		p.b = bounds{descriptors: p.b.descriptors, open: map[*yaml.Node]bool{}}
		if len(f.Data) > MaxFileBytes {
			p.fail(nil, "the file holds more than %d bytes, the most a configuration file may", MaxFileBytes)
			continue
		}
		p.parseFile(c, f.Data, opts)
	}
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return c, nil
}

// mapping returns the key/value pairs of a mapping node (already through
// deref), checking every key against the keys the format knows.
func (p *parser) mapping(n *yaml.Node, what string) [][2]*yaml.Node {
	if n == nil || !p.count(n, 1+len(n.Content)) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.fail(n, "%s must be a mapping", what)
		return nil
	}
	var pairs [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			p.fail(k, "config error, key is not of type string: %s", k.Value)
			continue
		}
		if !knownKey(k.Value) {
			p.fail(k, "config error, unknown key '%s'", k.Value)
			continue
		}
		pairs = append(pairs, [2]*yaml.Node{k, v})
	}
	return pairs
}

func (p *parser) parseFile(c *Config, data []byte, opts ParseOptions) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p.fail(nil, "error loading config file: %v", err)
		return
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null" {
		p.fail(nil, "config file cannot have empty domain")
		return
	}
	root := p.deref(doc.Content[0])
	defer p.leave(doc.Content[0])
	var domain string
	var domainNode, descriptors *yaml.Node
	domainOK := true
	for _, kv := range p.mapping(root, "the file") {
		switch kv[0].Value {
		case "domain":
			domainNode = kv[1]
			domainOK = p.scalar(kv[1], &domain)
		case "descriptors":
			descriptors = kv[1]
		}
	}
	if domain == "" {
		if domainOK {
			p.fail(domainNode, "config file cannot have empty domain")
		}
		return
	}
	top, present := c.domains[domain]
	if present && !opts.MergeDomains {
		p.fail(domainNode, "duplicate domain '%s' in config file", domain)
		return
	}
	if !present {
		top = &node{children: map[string]*node{}}
		c.domains[domain] = top
	}
	if descriptors != nil {
		p.descriptors(c, top, domain+".", descriptors, 1)
	}
}

// scalar decodes a scalar node into v, reporting a wrong type.
func (p *parser) scalar(orig *yaml.Node, v any) bool {
	n := p.deref(orig)
	defer p.leave(orig)
	if n == nil || !p.count(n, 1) {
		return false
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return true
	}
	if n.Kind != yaml.ScalarNode {
		p.fail(n, "expected a single value")
		return false
	}
	if err := n.Decode(v); err != nil {
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		p.fail(n, "%s", msg)
		return false
	}
	return true
}

// requests decodes a requests_per_unit into v: a whole number (yaml would
// truncate 0.5 to 0 and 5.9 to 5, the first denying every request).
func (p *parser) requests(orig *yaml.Node, v *uint32) bool {
	return p.whole("requests_per_unit", orig, v)
}

// whole decodes the integer field into v, refusing a number that is not
// whole (yaml would truncate it).
func (p *parser) whole(field string, orig *yaml.Node, v any) bool {
	if n := p.deref(orig); n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!float" {
		var f float64
		if err := n.Decode(&f); err != nil || f != math.Trunc(f) {
			p.fail(n, "%s %s is not a whole number", field, n.Value)
			p.leave(orig)
			return false
		}
	}
	p.leave(orig)
	return p.scalar(orig, v)
}

// descriptors loads a list of descriptors under parent, at depth (1 for a
// domain's).
func (p *parser) descriptors(c *Config, parent *node, parentKey string, orig *yaml.Node, depth int) {
	list := p.deref(orig)
	defer p.leave(orig)
	if list == nil || !p.count(list, 1+len(list.Content)) {
		return
	}
	if list.Kind == yaml.ScalarNode && list.Tag == "!!null" {
		return
	}
	if list.Kind != yaml.SequenceNode {
		p.fail(list, "descriptors must be a list")
		return
	}
	if depth > MaxDescriptorDepth {
		p.stop(list, "descriptors nest more than %d levels deep", MaxDescriptorDepth)
		return
	}
	p.b.open[list] = true
	defer delete(p.b.open, list)
	for _, item := range list.Content {
		if p.b.stopped || p.tooMany() {
			return
		}
		p.descriptor(c, parent, parentKey, item, depth)
	}
}

// descriptor loads one descriptor.
func (p *parser) descriptor(c *Config, parent *node, parentKey string, orig *yaml.Node, depth int) {
	item := p.deref(orig)
	defer p.leave(orig)
	if item == nil {
		return
	}
	if p.b.descriptors++; p.b.descriptors > MaxDescriptors {
		p.stop(item, "the configuration holds more than %d descriptors", MaxDescriptors)
		p.b.full = true
		return
	}
	p.b.open[item] = true
	defer delete(p.b.open, item)
	var key, value string
	var rateLimit, children *yaml.Node
	var shadow, quota, detailed, valueToMetric, share bool
	for _, kv := range p.mapping(item, "a descriptor") {
		v := kv[1]
		switch kv[0].Value {
		case "key":
			p.scalar(v, &key)
		case "value":
			p.scalar(v, &value)
		case "rate_limit":
			rateLimit = v
		case "descriptors":
			children = v
		case "shadow_mode":
			p.scalar(v, &shadow)
		case "quota_mode":
			p.scalar(v, &quota)
		case "detailed_metric":
			p.scalar(v, &detailed)
		case "value_to_metric":
			p.scalar(v, &valueToMetric)
		case "share_threshold":
			p.scalar(v, &share)
		case "algorithm", "resolution", "limits", "duration", "burst":
			p.fail(kv[0], "%s belongs in rate_limit", kv[0].Value)
		}
	}
	if key == "" {
		p.fail(item, "descriptor has empty key")
		return
	}
	final := key
	if value != "" {
		final += "_" + value
	}
	path := parentKey + final
	if _, dup := parent.children[final]; dup {
		p.fail(item, "duplicate descriptor composite key '%s'", path)
		return
	}
	n := &node{children: map[string]*node{}, valueToMetric: valueToMetric, shareThreshold: share}
	c.valueToMetric = c.valueToMetric || valueToMetric
	if share {
		if !strings.Contains(final, "*") {
			p.fail(item, "share_threshold can only be used with wildcard values (containing '*'), but found key '%s'", final)
		}
		n.pattern = final
	}
	if rateLimit != nil {
		if r := p.rule(rateLimit, path); r != nil {
			r.ShadowMode, r.QuotaMode, r.DetailedMetric = shadow, quota, detailed
			n.rule = r
			c.Rules = append(c.Rules, r)
		}
	}
	if strings.Contains(final, "*") {
		parent.wildcards = append(parent.wildcards, wildcard{key: final, parts: strings.Split(final, "*")})
	}
	parent.children[final] = n
	if children != nil {
		p.descriptors(c, n, path+".", children, depth+1)
	}
}
