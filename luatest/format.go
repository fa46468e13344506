package luatest

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// fmtSpec is one parsed C printf conversion specification.
type fmtSpec struct {
	minus, plus, space, hash, zero bool
	width                          int
	prec                           int // -1 when absent
	verb                           byte
}

// pad applies sign, width and the '-'/'0' flags to a formatted body.
// zeroOK reports whether the '0' flag may pad with zeros (not for inf/nan,
// strings, or integers with an explicit precision).
func (s *fmtSpec) pad(sign, prefix, body string, zeroOK bool) string {
	n := len(sign) + len(prefix) + len(body)
	if n >= s.width {
		return sign + prefix + body
	}
	fill := s.width - n
	switch {
	case s.minus:
		return sign + prefix + body + strings.Repeat(" ", fill)
	case s.zero && zeroOK:
		return sign + prefix + strings.Repeat("0", fill) + body
	default:
		return strings.Repeat(" ", fill) + sign + prefix + body
	}
}

func (s *fmtSpec) signOf(neg bool) string {
	switch {
	case neg:
		return "-"
	case s.plus:
		return "+"
	case s.space:
		return " "
	}
	return ""
}

// formatInt formats an integer conversion (%d %i %u %o %x %X).
func (s *fmtSpec) formatInt(n float64) string {
	var neg bool
	var mag uint64
	switch s.verb {
	case 'd', 'i':
		v := int64(n)
		if v < 0 {
			neg = true
			mag = uint64(-v)
		} else {
			mag = uint64(v)
		}
	default:
		// C casts the double to unsigned long; for negative values in the
		// long range this yields the two's complement.
		if n < 0 {
			mag = uint64(int64(n))
		} else if n >= 18446744073709551615.0 {
			mag = math.MaxUint64
		} else {
			mag = uint64(n)
		}
	}
	base := 10
	switch s.verb {
	case 'o':
		base = 8
	case 'x', 'X':
		base = 16
	}
	body := strconv.FormatUint(mag, base)
	if s.verb == 'X' {
		body = strings.ToUpper(body)
	}
	if s.prec >= 0 {
		if s.prec == 0 && mag == 0 {
			body = ""
		}
		if len(body) < s.prec {
			body = strings.Repeat("0", s.prec-len(body)) + body
		}
	}
	prefix := ""
	if s.hash {
		switch s.verb {
		case 'o':
			if !strings.HasPrefix(body, "0") {
				body = "0" + body
			}
		case 'x':
			if mag != 0 {
				prefix = "0x"
			}
		case 'X':
			if mag != 0 {
				prefix = "0X"
			}
		}
	}
	sign := ""
	if s.verb == 'd' || s.verb == 'i' {
		sign = s.signOf(neg)
	}
	return s.pad(sign, prefix, body, s.prec < 0)
}

// formatFloat formats a floating point conversion (%e %E %f %F %g %G).
func (s *fmtSpec) formatFloat(v float64) string {
	neg := math.Signbit(v)
	if neg {
		v = -v
	}
	upper := s.verb == 'E' || s.verb == 'G' || s.verb == 'F'
	if math.IsInf(v, 0) || math.IsNaN(v) {
		body := "inf"
		if math.IsNaN(v) {
			body = "nan"
		}
		if upper {
			body = strings.ToUpper(body)
		}
		return s.pad(s.signOf(neg), "", body, false)
	}
	prec := s.prec
	if prec < 0 {
		prec = 6
	}
	var body string
	switch s.verb {
	case 'f', 'F':
		body = strconv.FormatFloat(v, 'f', prec, 64)
		if s.hash && prec == 0 {
			body += "."
		}
	case 'e', 'E':
		body = cExp(v, prec, s.hash)
	case 'g', 'G':
		body = cG(v, prec, s.hash)
	}
	if upper {
		body = strings.ToUpper(body)
	}
	return s.pad(s.signOf(neg), "", body, true)
}

// cExp formats v (non-negative, finite) like C's %.<prec>e.
func cExp(v float64, prec int, hash bool) string {
	b := strconv.FormatFloat(v, 'e', prec, 64)
	if hash && prec == 0 {
		i := strings.IndexByte(b, 'e')
		b = b[:i] + "." + b[i:]
	}
	return b
}

// cG formats v (non-negative, finite) like C's %.<prec>g.
func cG(v float64, prec int, hash bool) string {
	if prec == 0 {
		prec = 1
	}
	e := strconv.FormatFloat(v, 'e', prec-1, 64)
	i := strings.IndexByte(e, 'e')
	x, _ := strconv.Atoi(e[i+1:])
	var out string
	if x < prec && x >= -4 {
		out = strconv.FormatFloat(v, 'f', prec-1-x, 64)
		if !hash {
			out = trimFracZeros(out)
		} else if !strings.Contains(out, ".") {
			out += "."
		}
		return out
	}
	mant, exp := e[:i], e[i:]
	if !hash {
		mant = trimFracZeros(mant)
	} else if !strings.Contains(mant, ".") {
		mant += "."
	}
	return mant + exp
}

func trimFracZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// fmtG formats v like C's printf("%.<prec>g", v).
func fmtG(v float64, prec int) string {
	s := fmtSpec{prec: prec, verb: 'g'}
	return s.formatFloat(v)
}

// numberToString converts a Lua number to a string like C Lua 5.1
// (LUA_NUMBER_FMT "%.14g").
func numberToString(n lua.LNumber) string {
	f := float64(n)
	if f == math.Trunc(f) && math.Abs(f) < 1e14 {
		return strconv.FormatInt(int64(f), 10)
	}
	return fmtG(f, 14)
}

// quoteLua implements string.format's %q like Lua 5.1.
func quoteLua(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\', '\n':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\r':
			b.WriteString("\\r")
		case 0:
			b.WriteString("\\000")
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// luaToStringArg converts argument n to a string as luaL_checklstring does
// (numbers with %.14g).
func luaToStringArg(L *lua.LState, n int) string {
	switch v := L.Get(n).(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return numberToString(v)
	}
	L.TypeError(n, lua.LTString)
	return ""
}

// strFormat is a C-printf compatible replacement for string.format.
func strFormat(L *lua.LState) int {
	fs := L.CheckString(1)
	arg := 1
	top := L.GetTop()
	var b strings.Builder
	for i := 0; i < len(fs); i++ {
		c := fs[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(fs) {
			L.RaiseError("invalid option '%%' to 'format'")
		}
		if fs[i] == '%' {
			b.WriteByte('%')
			continue
		}
		arg++
		var sp fmtSpec
		sp.prec = -1
		start := i
		for i < len(fs) && strings.IndexByte("-+ #0", fs[i]) >= 0 {
			switch fs[i] {
			case '-':
				sp.minus = true
			case '+':
				sp.plus = true
			case ' ':
				sp.space = true
			case '#':
				sp.hash = true
			case '0':
				sp.zero = true
			}
			i++
		}
		if i-start > 5 {
			L.RaiseError("invalid format (repeated flags)")
		}
		digits := 0
		for i < len(fs) && fs[i] >= '0' && fs[i] <= '9' {
			sp.width = sp.width*10 + int(fs[i]-'0')
			i++
			digits++
		}
		if digits > 2 {
			L.RaiseError("invalid format (width or precision too long)")
		}
		if i < len(fs) && fs[i] == '.' {
			i++
			sp.prec = 0
			digits = 0
			for i < len(fs) && fs[i] >= '0' && fs[i] <= '9' {
				sp.prec = sp.prec*10 + int(fs[i]-'0')
				i++
				digits++
			}
			if digits > 2 {
				L.RaiseError("invalid format (width or precision too long)")
			}
		}
		if i >= len(fs) {
			L.RaiseError("invalid option '%%' to 'format'")
		}
		sp.verb = fs[i]
		if arg > top && (sp.verb == 's' || sp.verb == 'q') {
			L.ArgError(arg, "string expected, got no value")
		}
		switch sp.verb {
		case 'c':
			ch := byte(int64(L.CheckNumber(arg)))
			b.WriteString(sp.pad("", "", string([]byte{ch}), false))
		case 'd', 'i', 'o', 'u', 'x', 'X':
			b.WriteString(sp.formatInt(float64(L.CheckNumber(arg))))
		case 'e', 'E', 'f', 'g', 'G':
			b.WriteString(sp.formatFloat(float64(L.CheckNumber(arg))))
		case 'q':
			b.WriteString(quoteLua(luaToStringArg(L, arg)))
		case 's':
			s := luaToStringArg(L, arg)
			if sp.prec >= 0 && len(s) > sp.prec {
				s = s[:sp.prec]
			}
			b.WriteString(sp.pad("", "", s, false))
		default:
			L.RaiseError("invalid option '%%%c' to 'format'", sp.verb)
		}
	}
	L.Push(lua.LString(b.String()))
	return 1
}
