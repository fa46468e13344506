package luatest

import (
	"strconv"
	"strings"
)

// cmdSpec describes one supported command, with a key spec like COMMAND
// INFO (first key, last key, step).
type cmdSpec struct {
	name     string // lower case, as in error messages
	arity    int    // > 0 exact, < 0 at least -arity
	firstKey int
	lastKey  int // -1 means the last argument
	step     int
	write    bool
	fn       func(e *Engine, args []string) any
}

func (c *cmdSpec) arityOK(n int) bool {
	if c.arity > 0 {
		return n == c.arity
	}
	return n >= -c.arity
}

func (c *cmdSpec) keyArgs(argv []string) []string {
	if c.firstKey == 0 {
		return nil
	}
	last := c.lastKey
	if last < 0 {
		last = len(argv) + last
	}
	var keys []string
	for i := c.firstKey; i <= last && i < len(argv); i += c.step {
		keys = append(keys, argv[i])
	}
	return keys
}

var commands = map[string]*cmdSpec{}

func register(specs ...*cmdSpec) {
	for _, s := range specs {
		commands[s.name] = s
	}
}

func lookupCommand(name string) *cmdSpec {
	if s, ok := commands[name]; ok {
		return s
	}
	return commands[strings.ToLower(name)]
}

// Shared error replies (texts as in Redis 7.0 server.c / object.c).
var (
	errWrongType   = &ErrorReply{Msg: "WRONGTYPE Operation against a key holding the wrong kind of value"}
	errSyntax      = &ErrorReply{Msg: "ERR syntax error"}
	errNotInt      = &ErrorReply{Msg: "ERR value is not an integer or out of range"}
	errNotFloat    = &ErrorReply{Msg: "ERR value is not a valid float"}
	errMinMaxFloat = &ErrorReply{Msg: "ERR min or max is not a float"}
	errOverflow    = &ErrorReply{Msg: "ERR increment or decrement would overflow"}
)

func errArity(name string) *ErrorReply {
	return &ErrorReply{Msg: "ERR wrong number of arguments for '" + name + "' command"}
}

func init() {
	register(
		&cmdSpec{name: "del", arity: -2, firstKey: 1, lastKey: -1, step: 1, write: true, fn: cmdDel},
		&cmdSpec{name: "unlink", arity: -2, firstKey: 1, lastKey: -1, step: 1, write: true, fn: cmdDel},
		&cmdSpec{name: "exists", arity: -2, firstKey: 1, lastKey: -1, step: 1, fn: cmdExists},
		&cmdSpec{name: "type", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdType},
		&cmdSpec{name: "expire", arity: -3, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdExpire},
		&cmdSpec{name: "pexpire", arity: -3, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdExpire},
		&cmdSpec{name: "expireat", arity: -3, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdExpire},
		&cmdSpec{name: "pexpireat", arity: -3, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdExpire},
		&cmdSpec{name: "ttl", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdTTL},
		&cmdSpec{name: "pttl", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdTTL},
		&cmdSpec{name: "persist", arity: 2, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdPersist},
	)
}

// parseInt parses like Redis's string2ll: optional '-', no '+', no
// leading zeros, no spaces, within int64.
func parseInt(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	if s == "0" {
		return 0, true
	}
	p := s
	if p[0] == '-' {
		p = p[1:]
	}
	if len(p) == 0 || p[0] < '1' || p[0] > '9' {
		return 0, false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// lookup returns the live entry for key or nil.
func (e *Engine) lookup(key string) *entry { return e.ks.lookup(key, e.nowMs()) }

// lookupKind returns the live entry for key, or errWrongType when it holds
// another type.
func (e *Engine) lookupKind(key string, k kind) (*entry, *ErrorReply) {
	ent := e.lookup(key)
	if ent != nil && ent.kind != k {
		return nil, errWrongType
	}
	return ent, nil
}

func (e *Engine) del(key string) bool {
	if e.lookup(key) == nil {
		return false
	}
	delete(e.ks.m, key)
	return true
}

func (e *Engine) pttl(key string) int64 {
	ent := e.lookup(key)
	if ent == nil {
		return -2
	}
	if ent.expireAt == 0 {
		return -1
	}
	ttl := ent.expireAt - e.nowMs()
	if ttl < 0 {
		ttl = 0
	}
	return ttl
}

func cmdDel(e *Engine, args []string) any {
	var n int64
	for _, k := range args[1:] {
		if e.del(k) {
			n++
		}
	}
	return n
}

func cmdExists(e *Engine, args []string) any {
	var n int64
	for _, k := range args[1:] {
		if e.lookup(k) != nil {
			n++
		}
	}
	return n
}

func cmdType(e *Engine, args []string) any {
	ent := e.lookup(args[1])
	if ent == nil {
		return Status("none")
	}
	return Status(ent.kind.String())
}

func cmdTTL(e *Engine, args []string) any {
	ms := e.pttl(args[1])
	if ms < 0 || strings.EqualFold(args[0], "pttl") {
		return ms
	}
	return (ms + 500) / 1000
}

func cmdPersist(e *Engine, args []string) any {
	ent := e.lookup(args[1])
	if ent == nil || ent.expireAt == 0 {
		return int64(0)
	}
	ent.expireAt = 0
	return int64(1)
}

// cmdExpire implements EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT with the
// Redis 7 NX/XX/GT/LT options.
func cmdExpire(e *Engine, args []string) any {
	name := strings.ToLower(args[0])
	var nx, xx, gt, lt bool
	for _, o := range args[3:] {
		switch strings.ToLower(o) {
		case "nx":
			nx = true
		case "xx":
			xx = true
		case "gt":
			gt = true
		case "lt":
			lt = true
		default:
			return &ErrorReply{Msg: "ERR Unsupported option " + o}
		}
	}
	if nx && (xx || gt || lt) {
		return &ErrorReply{Msg: "ERR NX and XX, GT or LT options at the same time are not compatible"}
	}
	if gt && lt {
		return &ErrorReply{Msg: "ERR GT and LT options at the same time are not compatible"}
	}
	when, ok := parseInt(args[2])
	if !ok {
		return errNotInt
	}
	invalid := &ErrorReply{Msg: "ERR invalid expire time in '" + name + "' command"}
	if name == "expire" || name == "expireat" {
		if when > maxInt64/1000 || when < minInt64/1000 {
			return invalid
		}
		when *= 1000
	}
	if name == "expire" || name == "pexpire" {
		now := e.nowMs()
		if when > maxInt64-now {
			return invalid
		}
		when += now
	}
	ent := e.lookup(args[1])
	if ent == nil {
		return int64(0)
	}
	cur := ent.expireAt
	switch {
	case nx && cur != 0, xx && cur == 0:
		return int64(0)
	case gt && (cur == 0 || when <= cur):
		return int64(0)
	case lt && cur != 0 && when >= cur:
		return int64(0)
	}
	if when <= e.nowMs() {
		delete(e.ks.m, args[1])
		return int64(1)
	}
	ent.expireAt = when
	return int64(1)
}

const (
	maxInt64 = int64(^uint64(0) >> 1)
	minInt64 = -maxInt64 - 1
)
