package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// The bounds of a configuration, so that no file can take the service
// down (the reference refuses "excessive aliasing" the same way). Each is
// refused with the file and line that crossed it, by check and by a
// reload, which keeps the last good configuration.
const (
	// MaxFileBytes is the size of the largest configuration file.
	MaxFileBytes = 4 << 20
	// MaxAliasNodes is how many nodes the aliases of one file may add to
	// it when expanded (a billion-laughs file expands to millions).
	MaxAliasNodes = 100_000
	// MaxDescriptors is how many descriptors (and so rules) a
	// configuration holds, over all its files.
	MaxDescriptors = 100_000
	// MaxDescriptorDepth is how deep descriptors nest.
	MaxDescriptorDepth = 64
	// maxErrors is how many errors one Parse reports before it
	// stops.
	maxErrors = 100
)

// bounds is the walk of one Parse within the bounds above.
type bounds struct {
	aliasNodes  int                 // nodes reached through an alias in the file
	inAlias     int                 // how many aliases the walk is inside
	outer       *yaml.Node          // the outermost of those
	descriptors int                 // descriptors walked, every file
	open        map[*yaml.Node]bool // the descriptors being walked (a cycle)
	stopped     bool                // a bound was crossed: walk no further
	full        bool                // MaxDescriptors crossed: no more files
}

// deref follows an alias, counting what it adds to the file and refusing
// an alias to a node that contains it. It returns nil when the walk must
// stop. leave must be called when the caller is done with the node.
func (p *parser) deref(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		p.b.inAlias++ // leave takes it back, whatever deref returns
		if p.b.inAlias == 1 {
			p.b.outer = n
		}
	}
	if p.b.stopped {
		return nil
	}
	if n.Kind != yaml.AliasNode {
		return n
	}
	target := n.Alias
	for target != nil && target.Kind == yaml.AliasNode {
		target = target.Alias
	}
	switch {
	case target == nil:
		p.stop(n, "alias *%s names no anchor", n.Value)
		return nil
	case p.b.open[target]:
		p.stop(n, "alias *%s is inside the node it names: it would expand without end", n.Value)
		return nil
	}
	return target
}

// leave ends the walk of a node deref returned for orig.
func (p *parser) leave(orig *yaml.Node) {
	if orig != nil && orig.Kind == yaml.AliasNode {
		p.b.inAlias--
	}
}

// count counts the nodes the walk reaches, refusing a file whose aliases
// expand it by more than MaxAliasNodes. It reports whether the walk goes
// on.
func (p *parser) count(n *yaml.Node, nodes int) bool {
	if p.b.stopped {
		return false
	}
	if p.b.inAlias > 0 {
		p.b.aliasNodes += nodes
		if p.b.aliasNodes > MaxAliasNodes {
			p.stop(p.b.outer, "excessive aliasing: the aliases of the file expand it by more than %d nodes (expanding *%s)", MaxAliasNodes, p.b.outer.Value)
			return false
		}
	}
	return true
}

// stop reports an error and ends the walk of the file.
func (p *parser) stop(n *yaml.Node, format string, args ...any) {
	p.fail(n, format, args...)
	p.b.stopped = true
}

// tooMany reports whether Parse has found so many errors that it stops.
func (p *parser) tooMany() bool {
	if len(p.errs) < maxErrors {
		return false
	}
	if len(p.errs) == maxErrors {
		p.errs = append(p.errs, &Error{File: p.file, Msg: fmt.Sprintf("and more errors (stopped after %d)", maxErrors)})
	}
	return true
}
