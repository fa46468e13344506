package luatest

import (
	"fmt"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// chunkName is the name Redis gives EVAL scripts; errors read
// "user_script:LINE: ...".
const chunkName = "user_script"

func compileLua(src string) (*lua.FunctionProto, error) {
	chunk, err := parse.Parse(strings.NewReader(src), chunkName)
	if err != nil {
		return nil, err
	}
	return lua.Compile(chunk, chunkName)
}

// initLua builds the single LState reused by every run.
func (e *Engine) initLua() {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
	} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	e.L = L
	e.globals = g
	for _, name := range []string{"dofile", "loadfile", "require", "module", "_printregs", "newproxy", "_GOPHER_LUA_VERSION", "collectgarbage", "print"} {
		g.RawSetString(name, lua.LNil)
	}
	g.RawSetString("print", L.NewFunction(func(L *lua.LState) int { return 0 }))

	// C Lua compatible number formatting.
	strlib := g.RawGetString("string").(*lua.LTable)
	strlib.RawSetString("format", L.NewFunction(strFormat))
	origToString := g.RawGetString("tostring").(*lua.LFunction)
	g.RawSetString("tostring", L.NewFunction(func(L *lua.LState) int {
		if n, ok := L.Get(1).(lua.LNumber); ok {
			L.Push(lua.LString(numberToString(n)))
			return 1
		}
		L.Push(origToString)
		L.Push(L.CheckAny(1))
		L.Call(1, 1)
		return 1
	}))

	// Redis 7 pcall: a table error with an "err" field yields its string.
	g.RawSetString("pcall", L.NewFunction(e.luaPcall))

	g.RawSetString("redis", e.redisTable(L))

	// Read-only globals and libraries.
	e.unproxy = map[*lua.LTable]*lua.LTable{}
	readonly := L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	})
	for _, name := range []string{"string", "table", "math", "redis"} {
		lib := g.RawGetString(name).(*lua.LTable)
		g.RawSetString(name, e.makeProxy(L, lib, readonly))
	}
	gm := L.NewTable()
	gm.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.ToString(2))
		return 0
	}))
	L.SetMetatable(g, gm)
	e.proxy = e.makeProxy(L, g, readonly)
	g.RawSetString("_G", e.proxy)

	next := g.RawGetString("next")
	g.RawSetString("pairs", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		L.Push(next)
		L.Push(e.realTable(t))
		L.Push(lua.LNil)
		return 3
	}))
	g.RawSetString("next", L.NewFunction(func(L *lua.LState) int {
		t := e.realTable(L.CheckTable(1))
		k, v := t.Next(L.Get(2))
		if k == lua.LNil {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(k)
		L.Push(v)
		return 2
	}))
	g.RawSetString("rawget", L.NewFunction(func(L *lua.LState) int {
		t := e.realTable(L.CheckTable(1))
		L.Push(t.RawGet(L.CheckAny(2)))
		return 1
	}))
	g.RawSetString("rawset", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		if _, ok := e.unproxy[t]; ok {
			L.RaiseError("Attempt to modify a readonly table")
		}
		t.RawSet(L.CheckAny(2), L.CheckAny(3))
		L.Push(t)
		return 1
	}))

	e.errFn = L.NewFunction(e.errorHandler)
}

// makeProxy returns an empty table whose reads go to t and whose writes fail.
func (e *Engine) makeProxy(L *lua.LState, t *lua.LTable, readonly *lua.LFunction) *lua.LTable {
	p := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", readonly)
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(p, mt)
	e.unproxy[p] = t
	return p
}

func (e *Engine) realTable(t *lua.LTable) *lua.LTable {
	if r, ok := e.unproxy[t]; ok {
		return r
	}
	return t
}

// scriptLine returns the current line of the innermost Lua (not Go)
// function on the call stack, or 0.
func scriptLine(L *lua.LState) int {
	for lvl := 0; lvl < 50; lvl++ {
		dbg, ok := L.GetStack(lvl)
		if !ok {
			return 0
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			continue
		}
		if dbg.What != "G" && dbg.CurrentLine > 0 {
			return dbg.CurrentLine
		}
	}
	return 0
}

// errorHandler plays the role of Redis's __redis__err__handler: it records
// the line where the error was raised.
func (e *Engine) errorHandler(L *lua.LState) int {
	e.errLine = scriptLine(L)
	L.Push(L.Get(1))
	return 1
}

// luaPcall is pcall as patched by Redis 7: an error table with a string
// "err" field is returned as that string. Strictness violations are not
// catchable.
func (e *Engine) luaPcall(L *lua.LState) int {
	top := L.GetTop()
	if top < 1 {
		L.ArgError(1, "value expected")
	}
	err := L.PCall(top-1, lua.MultRet, nil)
	if e.violation != nil {
		L.RaiseError("%s", e.violation.Error())
	}
	if err != nil {
		obj := err.(*lua.ApiError).Object
		if t, ok := obj.(*lua.LTable); ok {
			if s, ok := t.RawGetString("err").(lua.LString); ok {
				obj = s
			}
		}
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(obj)
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// errTable builds the {err=msg} table used for error replies.
func errTable(L *lua.LState, msg string) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString(msg))
	return t
}

// pushErrorBuff mirrors luaPushErrorBuff: "-CODE msg" keeps its code
// (without '-'), a plain "msg" gets the ERR code.
func pushErrorBuff(s string) string {
	var code, msg string
	if strings.HasPrefix(s, "-") {
		if i := strings.IndexByte(s, ' '); i >= 0 {
			code, msg = s[1:i], s[i+1:]
		} else {
			code, msg = "ERR", s[1:]
		}
	} else {
		code, msg = "ERR", s
	}
	msg = strings.Trim(msg, "\r\n")
	return code + " " + msg
}

var logLevels = []string{"DEBUG", "VERBOSE", "NOTICE", "WARNING"}

func (e *Engine) redisTable(L *lua.LState) *lua.LTable {
	r := L.NewTable()
	r.RawSetString("call", L.NewFunction(func(L *lua.LState) int { return e.redisCall(L, true) }))
	r.RawSetString("pcall", L.NewFunction(func(L *lua.LState) int { return e.redisCall(L, false) }))
	r.RawSetString("error_reply", L.NewFunction(func(L *lua.LState) int {
		s, ok := L.Get(1).(lua.LString)
		if L.GetTop() != 1 || !ok {
			L.Push(errTable(L, "ERR wrong number or type of arguments"))
			return 1
		}
		str := string(s)
		if !strings.HasPrefix(str, "-") {
			str = "-" + str
		}
		L.Push(errTable(L, pushErrorBuff(str)))
		return 1
	}))
	r.RawSetString("status_reply", L.NewFunction(func(L *lua.LState) int {
		s, ok := L.Get(1).(lua.LString)
		if L.GetTop() != 1 || !ok {
			L.Push(errTable(L, "ERR wrong number or type of arguments"))
			return 1
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", s)
		L.Push(t)
		return 1
	}))
	r.RawSetString("sha1hex", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.Error(errTable(L, "ERR wrong number of arguments"), 0)
		}
		L.Push(lua.LString(sha1hex(L.ToString(1))))
		return 1
	}))
	r.RawSetString("log", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() < 2 {
			L.Error(errTable(L, "ERR redis.log() requires two arguments or more."), 0)
		}
		lv, ok := L.Get(1).(lua.LNumber)
		if !ok {
			L.Error(errTable(L, "ERR First argument must be a number (log level)."), 0)
		}
		if lv < 0 || int(lv) >= len(logLevels) {
			L.Error(errTable(L, "ERR Invalid debug level."), 0)
		}
		parts := make([]string, 0, L.GetTop()-1)
		for i := 2; i <= L.GetTop(); i++ {
			switch v := L.Get(i).(type) {
			case lua.LString:
				parts = append(parts, string(v))
			case lua.LNumber:
				parts = append(parts, numberToString(v))
			}
		}
		e.log = append(e.log, logLevels[int(lv)]+" "+strings.Join(parts, " "))
		return 0
	}))
	for i, name := range logLevels {
		r.RawSetString("LOG_"+name, lua.LNumber(i))
	}
	r.RawSetString("setresp", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.Error(errTable(L, "ERR redis.setresp() requires one argument."), 0)
		}
		if v := L.ToInt(1); v != 2 && v != 3 {
			L.Error(errTable(L, "ERR RESP version must be 2 or 3."), 0)
		}
		return 0
	}))
	r.RawSetString("set_repl", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.Error(errTable(L, "ERR redis.set_repl() requires two arguments."), 0)
		}
		if v := L.ToInt(1); v < 0 || v > 3 {
			L.Error(errTable(L, "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE."), 0)
		}
		return 0
	}))
	for name, v := range map[string]int{"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		r.RawSetString(name, lua.LNumber(v))
	}
	r.RawSetString("replicate_commands", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LTrue)
		return 1
	}))
	r.RawSetString("breakpoint", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LFalse)
		return 1
	}))
	r.RawSetString("debug", L.NewFunction(func(L *lua.LState) int { return 0 }))
	return r
}

// argToString converts one redis.call argument like the server does.
func (e *Engine) argToString(v lua.LValue) (string, bool) {
	switch a := v.(type) {
	case lua.LString:
		return string(a), true
	case lua.LNumber:
		return e.formatArgNumber(float64(a)), true
	}
	return "", false
}

// redisCall implements redis.call (raise=true) and redis.pcall.
func (e *Engine) redisCall(L *lua.LState, raise bool) int {
	n := L.GetTop()
	fail := func(msg string) int {
		t := errTable(L, msg)
		if raise {
			L.Error(t, 0)
		}
		L.Push(t)
		return 1
	}
	if n == 0 {
		return fail("ERR Please specify at least one argument for this redis lib call")
	}
	argv := make([]string, n)
	for i := 1; i <= n; i++ {
		s, ok := e.argToString(L.Get(i))
		if !ok {
			return fail("ERR Lua redis lib command arguments must be strings or integers")
		}
		argv[i-1] = s
	}
	L.SetTop(0)
	if e.res != nil {
		e.res.Trace = append(e.res.Trace, Call{Name: strings.ToUpper(argv[0]), Args: argv[1:]})
	}
	spec := lookupCommand(argv[0])
	if spec == nil {
		e.violate(L, RuleUnknownCommand, fmt.Sprintf("script called %q, which is unknown or not supported by luatest", argv[0]))
	}
	if !spec.arityOK(len(argv)) {
		if e.opts.Dialect == Valkey80 {
			return fail("ERR Wrong number of args calling command from script")
		}
		return fail("ERR Wrong number of args calling Redis command from script")
	}
	keys := spec.keyArgs(argv)
	e.checkKeys(L, argv[0], keys)
	reply := spec.fn(e, argv)
	if er, ok := reply.(*ErrorReply); ok {
		return fail(er.Msg)
	}
	if spec.write {
		e.written = append(e.written, keys...)
	}
	L.Push(toLua(L, reply))
	return 1
}

// run executes a compiled script.
func (e *Engine) run(s *script, keys, args []string) (*Result, error) {
	res := &Result{}
	if v := checkSlots(keys); v != nil {
		return res, v
	}
	L := e.L
	e.res, e.runKeys, e.written, e.violation, e.errLine = res, keys, e.written[:0], nil, 0
	e.running = true
	defer func() {
		e.running = false
		e.res = nil
		L.SetTop(0)
	}()
	g := e.globals
	g.RawSetString("KEYS", stringArray(L, keys))
	g.RawSetString("ARGV", stringArray(L, args))
	fn := L.NewFunctionFromProto(s.proto)
	fn.Env = e.proxy
	L.Push(fn)
	err := L.PCall(0, 1, e.errFn)
	var rerr error
	if err != nil {
		rerr = e.scriptError(s, err)
	} else {
		reply := fromLua(L.Get(-1), 0)
		if er, ok := reply.(*ErrorReply); ok {
			rerr = er
		} else {
			res.Reply = reply
		}
	}
	if e.violation != nil {
		return res, e.violation
	}
	if v := e.checkWritten(); v != nil {
		return res, v
	}
	return res, rerr
}

func stringArray(L *lua.LState, ss []string) *lua.LTable {
	t := L.CreateTable(len(ss), 0)
	for i, s := range ss {
		t.RawSetInt(i+1, lua.LString(s))
	}
	return t
}

// scriptError builds the error reply Redis 7 sends for a script that
// raised an error.
func (e *Engine) scriptError(s *script, err error) *ErrorReply {
	var msg string
	line := e.errLine
	ae, ok := err.(*lua.ApiError)
	if !ok {
		return &ErrorReply{Msg: "ERR " + err.Error()}
	}
	switch o := ae.Object.(type) {
	case *lua.LTable:
		if s, ok := o.RawGetString("err").(lua.LString); ok {
			msg = string(s)
		} else {
			msg = "ERR " + o.String()
		}
	case lua.LString:
		msg = "ERR " + string(o)
	case lua.LNumber:
		msg = "ERR " + numberToString(o)
	case nil:
		msg = "ERR " + ae.Error()
	default:
		msg = "ERR " + ae.Object.String()
	}
	if line > 0 {
		msg += " script: " + s.sha + ", on @" + chunkName + ":" + strconv.Itoa(line) + "."
	}
	return &ErrorReply{Msg: sanitize(msg)}
}

func sanitize(s string) string {
	if strings.ContainsAny(s, "\r\n") {
		s = strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	}
	return s
}
