package rls

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// File is one configuration file: the name its errors carry and its text.
type File struct {
	Name string
	Data []byte
}

// ConfigError is one error of a configuration, where it is written.
type ConfigError struct {
	File string
	Line int // 0 when the error is about the whole file
	Msg  string
}

// Error is "file:line: message".
func (e *ConfigError) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// ErrConfig is wrapped by every error of Parse and LoadConfig.
var ErrConfig = errors.New("rls: invalid configuration")

// ConfigErrors is every error Parse found, in file order.
type ConfigErrors []*ConfigError

// Error lists every error, one a line.
func (es ConfigErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Is reports whether target is ErrConfig.
func (es ConfigErrors) Is(target error) bool { return target == ErrConfig }

// ParseOptions configure Parse.
type ParseOptions struct {
	// MergeDomains lets several files add rules to one domain
	// (MERGE_DOMAIN_CONFIG); otherwise a repeated domain is an error.
	MergeDomains bool
}

// ReadDir reads every regular file under dir, recursively, ordered by path,
// as the reference's runtime loader does: names are paths relative to dir.
// With ignoreDotFiles, files and directories whose name starts with '.'
// are skipped (RUNTIME_IGNOREDOTFILES).
func ReadDir(dir string, ignoreDotFiles bool) ([]File, error) {
	var files []File
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ignoreDotFiles && path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		info, err := os.Stat(path) // follows symbolic links
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		data, err := readAtMost(path, MaxConfigFileBytes+1)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			rel = path
		}
		files = append(files, File{Name: rel, Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rls: reading the configuration directory: %w", err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// readAtMost reads the first n bytes of the file at path (Parse refuses a
// file longer than MaxConfigFileBytes without the rest).
func readAtMost(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// LoadConfig reads and parses every file under dir.
func LoadConfig(dir string, ignoreDotFiles bool, opts ParseOptions) (*Config, error) {
	files, err := ReadDir(dir, ignoreDotFiles)
	if err != nil {
		return nil, err
	}
	return Parse(files, opts)
}

// The keys the reference accepts anywhere in a file, and ours, which the
// reference refuses ("unknown key"), so that a file using them is never
// misread there.
var (
	referenceKeys = map[string]bool{
		"domain": true, "key": true, "value": true, "descriptors": true,
		"rate_limit": true, "unit": true, "requests_per_unit": true,
		"unlimited": true, "shadow_mode": true, "quota_mode": true,
		"name": true, "replaces": true, "detailed_metric": true,
		"value_to_metric": true, "share_threshold": true, "metadata": true,
	}
	extensionKeys = map[string]bool{"algorithm": true, "resolution": true, "limits": true}
	algorithms    = map[string]bool{"fixed_window": true, "sliding_window": true, "token_bucket": true, "zset_log": true, "ar1": true}
)

// parser collects the errors of one Parse.
type parser struct {
	errs ConfigErrors
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
	p.errs = append(p.errs, &ConfigError{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// Parse reads configuration files in the reference's YAML, with ratelua's
// extension fields, and builds the rules. It reports every error it finds,
// each with its file and line, as ConfigErrors.
func Parse(files []File, opts ParseOptions) (*Config, error) {
	c := &Config{domains: map[string]*node{}}
	p := &parser{}
	for _, f := range files {
		if p.b.full || p.tooMany() {
			break
		}
		p.file = f.Name
		p.b = bounds{descriptors: p.b.descriptors, open: map[*yaml.Node]bool{}}
		if len(f.Data) > MaxConfigFileBytes {
			p.fail(nil, "the file holds more than %d bytes, the most a configuration file may", MaxConfigFileBytes)
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
		if !referenceKeys[k.Value] && !extensionKeys[k.Value] {
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
	if n := p.deref(orig); n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!float" {
		var f float64
		if err := n.Decode(&f); err != nil || f != math.Trunc(f) {
			p.fail(n, "requests_per_unit %s is not a whole number", n.Value)
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
	if p.b.descriptors++; p.b.descriptors > MaxConfigDescriptors {
		p.stop(item, "the configuration holds more than %d descriptors", MaxConfigDescriptors)
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
		case "algorithm", "resolution", "limits":
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
			if r.Algorithm != "" && !algorithms[r.Algorithm] {
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
			if err := checkRule(r); err != nil {
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

// maxRequests is the largest requests_per_unit the scripts take (their max
// is at most 10^9, and a reference rule needs one more).
const maxRequests = 999_999_999

// checkRule refuses what the scripts cannot decide.
func checkRule(r *Rule) error {
	for _, l := range r.Limits {
		if l.RequestsPerUnit > maxRequests {
			return fmt.Errorf("requests_per_unit %d is above %d, the most ratelua-rls decides", l.RequestsPerUnit, maxRequests)
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
