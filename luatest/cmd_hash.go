package luatest

import (
	"strings"
)

func init() {
	register(
		&cmdSpec{name: "hget", arity: 3, firstKey: 1, lastKey: 1, step: 1, fn: cmdHGet},
		&cmdSpec{name: "hset", arity: -4, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdHSet},
		&cmdSpec{name: "hmset", arity: -4, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdHSet},
		&cmdSpec{name: "hmget", arity: -3, firstKey: 1, lastKey: 1, step: 1, fn: cmdHMGet},
		&cmdSpec{name: "hdel", arity: -3, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdHDel},
		&cmdSpec{name: "hgetall", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdHGetAll},
		&cmdSpec{name: "hincrby", arity: 4, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdHIncrBy},
		&cmdSpec{name: "hincrbyfloat", arity: 4, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdHIncrByFloat},
		&cmdSpec{name: "hlen", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdHLen},
		&cmdSpec{name: "hexists", arity: 3, firstKey: 1, lastKey: 1, step: 1, fn: cmdHExists},
	)
}

// hashFor returns the hash at key, creating it when create is set.
func (e *Engine) hashFor(key string, create bool) (*entry, *ErrorReply) {
	ent, err := e.lookupKind(key, kindHash)
	if err != nil {
		return nil, err
	}
	if ent == nil && create {
		ent = &entry{kind: kindHash, hash: map[string]string{}}
		e.ks.m[key] = ent
	}
	return ent, nil
}

func (ent *entry) hset(field, value string) bool {
	if _, ok := ent.hash[field]; ok {
		ent.hash[field] = value
		return false
	}
	ent.hash[field] = value
	ent.order = append(ent.order, field)
	return true
}

func (ent *entry) hdel(field string) bool {
	if _, ok := ent.hash[field]; !ok {
		return false
	}
	delete(ent.hash, field)
	for i, f := range ent.order {
		if f == field {
			ent.order = append(ent.order[:i], ent.order[i+1:]...)
			break
		}
	}
	return true
}

func cmdHGet(e *Engine, args []string) any {
	ent, err := e.hashFor(args[1], false)
	if err != nil {
		return err
	}
	if ent == nil {
		return nil
	}
	if v, ok := ent.hash[args[2]]; ok {
		return v
	}
	return nil
}

func cmdHSet(e *Engine, args []string) any {
	name := strings.ToLower(args[0])
	if len(args)%2 == 1 {
		return errArity(name)
	}
	ent, err := e.hashFor(args[1], true)
	if err != nil {
		return err
	}
	var n int64
	for i := 2; i < len(args); i += 2 {
		if ent.hset(args[i], args[i+1]) {
			n++
		}
	}
	if name == "hmset" {
		return Status("OK")
	}
	return n
}

func cmdHMGet(e *Engine, args []string) any {
	ent, err := e.hashFor(args[1], false)
	if err != nil {
		return err
	}
	out := make([]any, 0, len(args)-2)
	for _, f := range args[2:] {
		if ent != nil {
			if v, ok := ent.hash[f]; ok {
				out = append(out, v)
				continue
			}
		}
		out = append(out, nil)
	}
	return out
}

func cmdHDel(e *Engine, args []string) any {
	ent, err := e.hashFor(args[1], false)
	if err != nil {
		return err
	}
	if ent == nil {
		return int64(0)
	}
	var n int64
	for _, f := range args[2:] {
		if ent.hdel(f) {
			n++
		}
	}
	if len(ent.hash) == 0 {
		delete(e.ks.m, args[1])
	}
	return n
}

func cmdHGetAll(e *Engine, args []string) any {
	ent, err := e.hashFor(args[1], false)
	if err != nil {
		return err
	}
	out := []any{}
	if ent != nil {
		for _, f := range ent.order {
			out = append(out, f, ent.hash[f])
		}
	}
	return out
}

func cmdHIncrBy(e *Engine, args []string) any {
	by, ok := parseInt(args[3])
	if !ok {
		return errNotInt
	}
	ent, err := e.hashFor(args[1], true)
	if err != nil {
		return err
	}
	var cur int64
	if v, exists := ent.hash[args[2]]; exists {
		cur, ok = parseInt(v)
		if !ok {
			return &ErrorReply{Msg: "ERR hash value is not an integer"}
		}
	}
	if (by < 0 && cur < 0 && by < minInt64-cur) || (by > 0 && cur > 0 && by > maxInt64-cur) {
		return errOverflow
	}
	cur += by
	ent.hset(args[2], formatInt(cur))
	return cur
}

func cmdHIncrByFloat(e *Engine, args []string) any {
	incr, ok := parseLongDouble(args[3])
	if !ok {
		return errNotFloat
	}
	if incr.IsInf() {
		return &ErrorReply{Msg: "ERR value is NaN or Infinity"}
	}
	ent, err := e.hashFor(args[1], false)
	if err != nil {
		return err
	}
	var cur = incr
	var base *entry = ent
	if ent != nil {
		if v, exists := ent.hash[args[2]]; exists {
			c, ok := parseLongDouble(v)
			if !ok {
				return &ErrorReply{Msg: "ERR hash value is not a float"}
			}
			r, ok := addLongDouble(c, incr)
			if !ok {
				return &ErrorReply{Msg: "ERR increment would produce NaN or Infinity"}
			}
			cur = r
		}
	}
	if base == nil {
		base, _ = e.hashFor(args[1], true)
	}
	s := formatLongDouble(cur)
	base.hset(args[2], s)
	return s
}

func cmdHLen(e *Engine, args []string) any {
	ent, err := e.hashFor(args[1], false)
	if err != nil {
		return err
	}
	if ent == nil {
		return int64(0)
	}
	return int64(len(ent.hash))
}

func cmdHExists(e *Engine, args []string) any {
	ent, err := e.hashFor(args[1], false)
	if err != nil {
		return err
	}
	if ent == nil {
		return int64(0)
	}
	if _, ok := ent.hash[args[2]]; ok {
		return int64(1)
	}
	return int64(0)
}
