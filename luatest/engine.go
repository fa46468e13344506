package luatest

import (
	"crypto/sha1"
	"encoding/hex"
	"sort"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Dialect selects the server whose version-specific behaviour is emulated
// where Redis 7.0 and Valkey 8.0 differ.
type Dialect int

const (
	// Redis70 emulates Redis 7.0: Lua numbers passed to redis.call and
	// scores in replies are formatted with "%.17g" (0.1 becomes
	// "0.10000000000000001"), and script call errors say "Redis command".
	Redis70 Dialect = iota
	// Valkey80 emulates Valkey 8.0 (and Redis 7.2+): integral numbers are
	// printed as integers and other numbers with the shortest
	// representation that round-trips (0.1 becomes "0.1").
	Valkey80
)

// Options configures an Engine.
type Options struct {
	// Now is the initial clock; the zero value means time.Unix(1_700_000_000, 0).
	Now time.Time
	// AllowKeylessTTL disables the rule that fails a run which leaves a key
	// it wrote without a TTL.
	AllowKeylessTTL bool
	// Dialect selects Redis 7.0 (default) or Valkey 8.0 number formatting.
	Dialect Dialect
}

// Engine runs Redis Lua scripts against an in-memory keyspace with a
// test-controlled clock. An Engine is not safe for concurrent use.
type Engine struct {
	opts    Options
	now     time.Time
	ks      keyspace
	L       *lua.LState
	globals *lua.LTable // the real globals table, behind a read-only proxy
	proxy   *lua.LTable // the read-only globals seen by scripts
	unproxy map[*lua.LTable]*lua.LTable
	errFn   *lua.LFunction

	bySrc map[string]*script
	bySHA map[string]*script
	log   []string

	// State of the current run.
	running   bool
	res       *Result
	runKeys   []string
	written   []string
	violation *Violation
	errLine   int
}

type script struct {
	sha   string
	proto *lua.FunctionProto
}

// Result is the outcome of one script run.
type Result struct {
	// Reply is the script's return value converted by Redis's Lua to RESP
	// rules: int64, string (bulk), nil, []any, Status, or *ErrorReply for
	// error elements nested in an array.
	Reply any
	// Trace lists every redis.call/redis.pcall made, in order.
	Trace []Call
}

// Call is one redis.call or redis.pcall made by a script.
type Call struct {
	// Name is the command name in upper case.
	Name string
	// Args are the arguments after conversion to strings, without the name.
	Args []string
}

// Count returns how many calls of the named command (case-insensitive)
// the run made; "" counts all calls.
func (r *Result) Count(name string) int {
	if name == "" {
		return len(r.Trace)
	}
	n := 0
	for _, c := range r.Trace {
		if strings.EqualFold(c.Name, name) {
			n++
		}
	}
	return n
}

// Status is a RESP simple string reply such as "OK".
type Status string

// ErrorReply is a RESP error reply. Msg is the full message as the server
// would send it (without the leading '-'), e.g. "ERR ratelua: bad unit".
type ErrorReply struct {
	Msg string
}

// Error returns Msg.
func (e *ErrorReply) Error() string { return e.Msg }

// Code returns the error code: the first word of Msg, e.g. "ERR".
func (e *ErrorReply) Code() string {
	if i := strings.IndexByte(e.Msg, ' '); i >= 0 {
		return e.Msg[:i]
	}
	return e.Msg
}

// New returns an Engine with an empty keyspace.
func New(opts Options) *Engine {
	e := &Engine{
		opts:  opts,
		now:   opts.Now,
		ks:    keyspace{m: map[string]*entry{}},
		bySrc: map[string]*script{},
		bySHA: map[string]*script{},
	}
	if e.now.IsZero() {
		e.now = time.Unix(1_700_000_000, 0)
	}
	e.initLua()
	return e
}

// Now returns the engine clock.
func (e *Engine) Now() time.Time { return e.now }

// SetNow sets the engine clock; it may go backwards.
func (e *Engine) SetNow(t time.Time) { e.now = t }

// Advance moves the engine clock by d.
func (e *Engine) Advance(d time.Duration) { e.now = e.now.Add(d) }

// Log returns the messages recorded by redis.log, as "LEVEL message".
func (e *Engine) Log() []string { return append([]string(nil), e.log...) }

func (e *Engine) nowMs() int64 { return e.now.UnixMilli() }

// sha1hex returns the lower-case hex SHA1 of s.
func sha1hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// compile returns the cached compiled script for src.
func (e *Engine) compile(src string) (*script, *ErrorReply) {
	if s, ok := e.bySrc[src]; ok {
		return s, nil
	}
	sha := sha1hex(src)
	if s, ok := e.bySHA[sha]; ok {
		e.bySrc[src] = s
		return s, nil
	}
	proto, err := compileLua(src)
	if err != nil {
		return nil, &ErrorReply{Msg: "ERR Error compiling script (new function): " + err.Error()}
	}
	s := &script{sha: sha, proto: proto}
	e.bySrc[src] = s
	e.bySHA[sha] = s
	return s, nil
}

// Load compiles src and caches it like SCRIPT LOAD, returning its SHA1.
// A script that does not compile is still hashed; running it fails.
func (e *Engine) Load(src string) (sha string) {
	s, err := e.compile(src)
	if err != nil {
		return sha1hex(src)
	}
	return s.sha
}

// Run executes src (compiled once and cached by SHA1) with KEYS and ARGV.
// err is an *ErrorReply when the script replied with an error
// (redis.error_reply, {err=...}, a raised error, or a failed redis.call),
// and a *Violation when a strictness rule was broken. res, with its Trace,
// is non-nil in both cases.
func (e *Engine) Run(src string, keys []string, args []string) (*Result, error) {
	s, cerr := e.compile(src)
	if cerr != nil {
		return &Result{}, cerr
	}
	return e.run(s, keys, args)
}

// EvalSHA runs a script previously seen by Load or Run. An unknown sha
// gives the NOSCRIPT *ErrorReply.
func (e *Engine) EvalSHA(sha string, keys, args []string) (*Result, error) {
	s, ok := e.bySHA[strings.ToLower(sha)]
	if !ok {
		return &Result{}, &ErrorReply{Msg: "NOSCRIPT No matching script. Please use EVAL."}
	}
	return e.run(s, keys, args)
}

// Keys returns the live (unexpired) keys, sorted.
func (e *Engine) Keys() []string {
	now := e.nowMs()
	out := make([]string, 0, len(e.ks.m))
	for k := range e.ks.m {
		if e.ks.lookup(k, now) != nil {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Type returns "string", "hash", "zset" or "none".
func (e *Engine) Type(key string) string {
	ent := e.ks.lookup(key, e.nowMs())
	if ent == nil {
		return "none"
	}
	return ent.kind.String()
}

// PTTL returns the remaining time to live of key in milliseconds, -2 when
// the key does not exist and -1 when it has no TTL.
func (e *Engine) PTTL(key string) int64 {
	return e.pttl(key)
}

// Dump returns the value of key: string for strings, map[string]string for
// hashes, []ZMember sorted by score then member for sorted sets, and nil
// when the key does not exist.
func (e *Engine) Dump(key string) any {
	ent := e.ks.lookup(key, e.nowMs())
	if ent == nil {
		return nil
	}
	switch ent.kind {
	case kindString:
		return ent.str
	case kindHash:
		m := make(map[string]string, len(ent.hash))
		for k, v := range ent.hash {
			m[k] = v
		}
		return m
	case kindZset:
		return append([]ZMember(nil), ent.zset.sorted...)
	}
	return nil
}

// FlushAll deletes every key.
func (e *Engine) FlushAll() { e.ks.m = map[string]*entry{} }

// Do runs one command outside any script, without strictness checks. The
// reply has the same types as Result.Reply; error replies are returned as
// *ErrorReply.
func (e *Engine) Do(args ...string) (any, error) {
	if len(args) == 0 {
		return nil, &ErrorReply{Msg: "ERR empty command"}
	}
	spec := lookupCommand(args[0])
	if spec == nil {
		var b strings.Builder
		for _, a := range args[1:] {
			b.WriteString("'" + a + "' ")
		}
		return nil, &ErrorReply{Msg: "ERR unknown command '" + args[0] + "', with args beginning with: " + b.String()}
	}
	if !spec.arityOK(len(args)) {
		return nil, &ErrorReply{Msg: "ERR wrong number of arguments for '" + spec.name + "' command"}
	}
	r := spec.fn(e, args)
	if er, ok := r.(*ErrorReply); ok {
		return nil, er
	}
	return r, nil
}

// Ints converts an array reply of integers to []int64.
func Ints(reply any) ([]int64, error) {
	arr, ok := reply.([]any)
	if !ok {
		return nil, &typeError{want: "array of integers", got: reply}
	}
	out := make([]int64, len(arr))
	for i, v := range arr {
		n, ok := v.(int64)
		if !ok {
			return nil, &typeError{want: "integer element", got: v}
		}
		out[i] = n
	}
	return out, nil
}

// Strings converts an array reply of bulk strings to []string; nil
// elements become "".
func Strings(reply any) ([]string, error) {
	arr, ok := reply.([]any)
	if !ok {
		return nil, &typeError{want: "array of strings", got: reply}
	}
	out := make([]string, len(arr))
	for i, v := range arr {
		switch s := v.(type) {
		case string:
			out[i] = s
		case nil:
		default:
			return nil, &typeError{want: "string element", got: v}
		}
	}
	return out, nil
}
