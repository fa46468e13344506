package luatest

import (
	"fmt"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// toLua converts a command reply to a Lua value like Redis's RESP2 → Lua
// rules: integer → number, bulk → string, nil bulk → false, array → table
// (nil elements become false), status → {ok=...}, error → {err=...}.
func toLua(L *lua.LState, reply any) lua.LValue {
	switch r := reply.(type) {
	case int64:
		return lua.LNumber(r)
	case string:
		return lua.LString(r)
	case nil:
		return lua.LFalse
	case Status:
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(r))
		return t
	case *ErrorReply:
		return errTable(L, r.Msg)
	case []any:
		t := L.CreateTable(len(r), 0)
		for i, v := range r {
			t.RawSetInt(i+1, toLua(L, v))
		}
		return t
	case []string:
		t := L.CreateTable(len(r), 0)
		for i, v := range r {
			t.RawSetInt(i+1, lua.LString(v))
		}
		return t
	}
	panic(fmt.Sprintf("luatest: unexpected reply type %T", reply))
}

// fromLua converts a script's return value like Redis's Lua → RESP2 rules:
// number → integer (truncated toward zero), string → bulk, true → 1,
// false/nil → nil, {err=...} → error, {ok=...} → status, other tables →
// array up to (not including) the first nil.
func fromLua(v lua.LValue, depth int) any {
	switch x := v.(type) {
	case lua.LString:
		return string(x)
	case lua.LNumber:
		return numberToInt64(float64(x))
	case lua.LBool:
		if x {
			return int64(1)
		}
		return nil
	case *lua.LTable:
		if s, ok := x.RawGetString("err").(lua.LString); ok {
			return &ErrorReply{Msg: sanitize(string(s))}
		}
		if s, ok := x.RawGetString("ok").(lua.LString); ok {
			return Status(sanitize(string(s)))
		}
		if n, ok := x.RawGetString("double").(lua.LNumber); ok {
			// RESP2 clients receive a double as a bulk string.
			return formatDouble(float64(n), Redis70)
		}
		out := []any{}
		if depth > 1000 {
			return out
		}
		for i := 1; ; i++ {
			el := x.RawGetInt(i)
			if el == lua.LNil {
				break
			}
			out = append(out, fromLua(el, depth+1))
		}
		return out
	}
	return nil
}

// numberToInt64 mirrors C's (long long) cast of a double on x86-64.
func numberToInt64(f float64) int64 {
	if math.IsNaN(f) || f >= 9223372036854775808.0 || f < -9223372036854775808.0 {
		return math.MinInt64
	}
	return int64(f)
}

// formatArgNumber converts a Lua number passed to redis.call to the
// command argument string.
func (e *Engine) formatArgNumber(f float64) string {
	if e.opts.Dialect == Valkey80 {
		if f == math.Trunc(f) && math.Abs(f) < 1<<63 && !(f == 0 && math.Signbit(f)) {
			return strconv.FormatInt(int64(f), 10)
		}
		return shortest(f)
	}
	return fmtG(f, 17)
}

// shortest formats f with the fewest digits that round-trip, in the style
// of fpconv_dtoa (%g-like exponent switch).
func shortest(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	return s
}

// formatDouble formats a score in a reply.
func formatDouble(f float64, d Dialect) string {
	if math.IsInf(f, 1) {
		return "inf"
	}
	if math.IsInf(f, -1) {
		return "-inf"
	}
	if d == Valkey80 {
		return shortest(f)
	}
	return fmtG(f, 17)
}

// score formats a score for a reply of this engine.
func (e *Engine) score(f float64) string { return formatDouble(f, e.opts.Dialect) }

// typeError reports a reply of an unexpected shape.
type typeError struct {
	want string
	got  any
}

func (t *typeError) Error() string {
	return fmt.Sprintf("luatest: want %s, got %T (%v)", t.want, t.got, t.got)
}
