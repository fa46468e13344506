package luatest

import (
	"math/big"
	"strconv"
	"strings"
)

func init() {
	register(
		&cmdSpec{name: "get", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdGet},
		&cmdSpec{name: "set", arity: -3, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdSet},
		&cmdSpec{name: "incr", arity: 2, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdIncr},
		&cmdSpec{name: "decr", arity: 2, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdIncr},
		&cmdSpec{name: "incrby", arity: 3, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdIncr},
		&cmdSpec{name: "decrby", arity: 3, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdIncr},
		&cmdSpec{name: "incrbyfloat", arity: 3, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdIncrByFloat},
	)
}

func cmdGet(e *Engine, args []string) any {
	ent, err := e.lookupKind(args[1], kindString)
	if err != nil {
		return err
	}
	if ent == nil {
		return nil
	}
	return ent.str
}

// cmdSet implements SET key value [NX|XX] [GET] [EX|PX|EXAT|PXAT t|KEEPTTL].
func cmdSet(e *Engine, args []string) any {
	var nx, xx, get, keepttl bool
	unit := "" // ex, px, exat, pxat
	var expArg string
	for j := 3; j < len(args); j++ {
		o := strings.ToLower(args[j])
		next := j+1 < len(args)
		switch {
		case o == "nx" && !xx:
			nx = true
		case o == "xx" && !nx:
			xx = true
		case o == "get":
			get = true
		case o == "keepttl" && unit == "":
			keepttl = true
		case (o == "ex" || o == "px" || o == "exat" || o == "pxat") && unit == "" && !keepttl && next:
			unit = o
			expArg = args[j+1]
			j++
		default:
			return errSyntax
		}
	}
	var expireAt int64
	if unit != "" {
		v, ok := parseInt(expArg)
		if !ok {
			return errNotInt
		}
		invalid := &ErrorReply{Msg: "ERR invalid expire time in 'set' command"}
		if v <= 0 {
			return invalid
		}
		if unit == "ex" || unit == "exat" {
			if v > maxInt64/1000 {
				return invalid
			}
			v *= 1000
		}
		if unit == "ex" || unit == "px" {
			now := e.nowMs()
			if v > maxInt64-now {
				return invalid
			}
			v += now
		}
		expireAt = v
	}
	key := args[1]
	ent := e.lookup(key)
	var old any
	if get {
		if ent != nil && ent.kind != kindString {
			return errWrongType
		}
		if ent != nil {
			old = ent.str
		}
	}
	if (nx && ent != nil) || (xx && ent == nil) {
		if get {
			return old
		}
		return nil
	}
	ne := &entry{kind: kindString, str: args[2]}
	if keepttl && ent != nil {
		ne.expireAt = ent.expireAt
	}
	if unit != "" {
		ne.expireAt = expireAt
	}
	e.ks.m[key] = ne
	if ne.expireAt != 0 && ne.expireAt <= e.nowMs() {
		delete(e.ks.m, key)
	}
	if get {
		return old
	}
	return Status("OK")
}

// cmdIncr implements INCR, DECR, INCRBY and DECRBY.
func cmdIncr(e *Engine, args []string) any {
	name := strings.ToLower(args[0])
	var by int64 = 1
	switch name {
	case "decr":
		by = -1
	case "incrby", "decrby":
		v, ok := parseInt(args[2])
		if !ok {
			return errNotInt
		}
		if name == "decrby" {
			if v == minInt64 {
				return &ErrorReply{Msg: "ERR decrement would overflow"}
			}
			v = -v
		}
		by = v
	}
	ent, err := e.lookupKind(args[1], kindString)
	if err != nil {
		return err
	}
	var cur int64
	if ent != nil {
		v, ok := parseInt(ent.str)
		if !ok {
			return errNotInt
		}
		cur = v
	}
	if (by < 0 && cur < 0 && by < minInt64-cur) || (by > 0 && cur > 0 && by > maxInt64-cur) {
		return errOverflow
	}
	cur += by
	s := formatInt(cur)
	if ent == nil {
		e.ks.m[args[1]] = &entry{kind: kindString, str: s}
	} else {
		ent.str = s
	}
	return cur
}

// parseLongDouble parses s like Redis's string2ld (strtold): the value is
// rounded to a 64-bit mantissa like an x87 long double.
func parseLongDouble(s string) (*big.Float, bool) {
	if s == "" || strings.IndexAny(s[:1], " \t\r\n\v\f") == 0 {
		return nil, false
	}
	ls := strings.ToLower(s)
	if strings.Contains(ls, "nan") || strings.Contains(s, "_") {
		return nil, false
	}
	f, _, err := big.ParseFloat(s, 10, 64, big.ToNearestEven)
	if err != nil {
		return nil, false
	}
	if f.IsInf() && !strings.Contains(ls, "inf") {
		return nil, false
	}
	return f, true
}

// formatLongDouble formats like Redis's ld2string(LD_STR_HUMAN): "%.17Lf"
// with trailing zeros (and a trailing '.') removed.
func formatLongDouble(f *big.Float) string {
	s := f.Text('f', 17)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// addLongDouble adds two long doubles, reporting false when the result is
// not finite (beyond the long double range).
func addLongDouble(a, b *big.Float) (*big.Float, bool) {
	if a.IsInf() || b.IsInf() {
		return nil, false
	}
	r := new(big.Float).SetPrec(64).SetMode(big.ToNearestEven).Add(a, b)
	if r.MantExp(nil) > 16384 {
		return nil, false
	}
	return r, true
}

func cmdIncrByFloat(e *Engine, args []string) any {
	ent, err := e.lookupKind(args[1], kindString)
	if err != nil {
		return err
	}
	cur := new(big.Float).SetPrec(64)
	if ent != nil {
		v, ok := parseLongDouble(ent.str)
		if !ok {
			return errNotFloat
		}
		cur = v
	}
	incr, ok := parseLongDouble(args[2])
	if !ok {
		return errNotFloat
	}
	r, ok := addLongDouble(cur, incr)
	if !ok {
		return &ErrorReply{Msg: "ERR increment would produce NaN or Infinity"}
	}
	s := formatLongDouble(r)
	if ent == nil {
		e.ks.m[args[1]] = &entry{kind: kindString, str: s}
	} else {
		ent.str = s
	}
	return s
}

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }
