package luatest

import (
	"math"
	"strconv"
	"strings"
)

func init() {
	register(
		&cmdSpec{name: "zadd", arity: -4, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdZAdd},
		&cmdSpec{name: "zcard", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdZCard},
		&cmdSpec{name: "zcount", arity: 4, firstKey: 1, lastKey: 1, step: 1, fn: cmdZCount},
		&cmdSpec{name: "zscore", arity: 3, firstKey: 1, lastKey: 1, step: 1, fn: cmdZScore},
		&cmdSpec{name: "zmscore", arity: -3, firstKey: 1, lastKey: 1, step: 1, fn: cmdZMScore},
		&cmdSpec{name: "zincrby", arity: 4, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdZIncrBy},
		&cmdSpec{name: "zrem", arity: -3, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdZRem},
		&cmdSpec{name: "zrange", arity: -4, firstKey: 1, lastKey: 1, step: 1, fn: cmdZRange},
		&cmdSpec{name: "zrangebyscore", arity: -4, firstKey: 1, lastKey: 1, step: 1, fn: cmdZRange},
		&cmdSpec{name: "zrevrangebyscore", arity: -4, firstKey: 1, lastKey: 1, step: 1, fn: cmdZRange},
		&cmdSpec{name: "zremrangebyscore", arity: 4, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdZRemRangeByScore},
		&cmdSpec{name: "zremrangebyrank", arity: 4, firstKey: 1, lastKey: 1, step: 1, write: true, fn: cmdZRemRangeByRank},
	)
}

// parseFloat parses like Redis's strtod-based getDoubleFromObject: no
// leading space, the whole string consumed, NaN rejected, overflow
// rejected; "inf", "+inf", "-inf" accepted.
func parseFloat(s string) (float64, bool) {
	if s == "" || strings.IndexAny(s[:1], " \t\r\n\v\f") == 0 || strings.Contains(s, "_") {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// scoreBound is one end of a score range.
type scoreBound struct {
	v    float64
	excl bool
}

func parseBound(s string) (scoreBound, bool) {
	var b scoreBound
	if strings.HasPrefix(s, "(") {
		b.excl = true
		s = s[1:]
	}
	v, ok := parseFloat(s)
	b.v = v
	return b, ok
}

func (b scoreBound) geMin(v float64) bool {
	if b.excl {
		return v > b.v
	}
	return v >= b.v
}

func (b scoreBound) leMax(v float64) bool {
	if b.excl {
		return v < b.v
	}
	return v <= b.v
}

func (e *Engine) zsetFor(key string) (*entry, *ErrorReply) {
	return e.lookupKind(key, kindZset)
}

// cmdZAdd implements ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member ...
func cmdZAdd(e *Engine, args []string) any {
	var nx, xx, gt, lt, ch, incr bool
	i := 2
loop:
	for ; i < len(args); i++ {
		switch strings.ToLower(args[i]) {
		case "nx":
			nx = true
		case "xx":
			xx = true
		case "gt":
			gt = true
		case "lt":
			lt = true
		case "ch":
			ch = true
		case "incr":
			incr = true
		default:
			break loop
		}
	}
	elements := len(args) - i
	if elements%2 != 0 || elements == 0 {
		return errSyntax
	}
	if nx && xx {
		return &ErrorReply{Msg: "ERR XX and NX options at the same time are not compatible"}
	}
	if (gt && nx) || (lt && nx) || (gt && lt) {
		return &ErrorReply{Msg: "ERR GT, LT, and/or NX options at the same time are not compatible"}
	}
	if incr && elements > 2 {
		return &ErrorReply{Msg: "ERR INCR option supports a single increment-element pair"}
	}
	scores := make([]float64, 0, elements/2)
	for j := i; j < len(args); j += 2 {
		f, ok := parseFloat(args[j])
		if !ok {
			return errNotFloat
		}
		scores = append(scores, f)
	}
	ent, err := e.zsetFor(args[1])
	if err != nil {
		return err
	}
	var added, updated, processed int64
	var last float64
	if ent == nil {
		if xx {
			if incr {
				return nil
			}
			return int64(0)
		}
		ent = &entry{kind: kindZset, zset: newZset()}
		e.ks.m[args[1]] = ent
	}
	z := ent.zset
	for k, score := range scores {
		member := args[i+1+2*k]
		cur, exists := z.scores[member]
		if exists {
			if nx {
				continue
			}
			if incr {
				score += cur
				if math.IsNaN(score) {
					if z.len() == 0 {
						delete(e.ks.m, args[1])
					}
					return &ErrorReply{Msg: "ERR resulting score is not a number (NaN)"}
				}
			}
			if (lt && score >= cur) || (gt && score <= cur) {
				continue
			}
			last = score
			processed++
			if score != cur {
				z.set(member, score)
				updated++
			}
		} else {
			if xx {
				continue
			}
			z.set(member, score)
			last = score
			added++
			processed++
		}
	}
	if z.len() == 0 {
		delete(e.ks.m, args[1])
	}
	if incr {
		if processed == 0 {
			return nil
		}
		return e.score(last)
	}
	if ch {
		return added + updated
	}
	return added
}

func cmdZCard(e *Engine, args []string) any {
	ent, err := e.zsetFor(args[1])
	if err != nil {
		return err
	}
	if ent == nil {
		return int64(0)
	}
	return int64(ent.zset.len())
}

func cmdZCount(e *Engine, args []string) any {
	min, ok1 := parseBound(args[2])
	max, ok2 := parseBound(args[3])
	if !ok1 || !ok2 {
		return errMinMaxFloat
	}
	ent, err := e.zsetFor(args[1])
	if err != nil {
		return err
	}
	if ent == nil {
		return int64(0)
	}
	var n int64
	for _, m := range ent.zset.sorted {
		if min.geMin(m.Score) && max.leMax(m.Score) {
			n++
		}
	}
	return n
}

func cmdZScore(e *Engine, args []string) any {
	ent, err := e.zsetFor(args[1])
	if err != nil {
		return err
	}
	if ent == nil {
		return nil
	}
	if s, ok := ent.zset.scores[args[2]]; ok {
		return e.score(s)
	}
	return nil
}

// cmdZMScore implements ZMSCORE key member [member ...]: each member's
// score, nil for a member (or key) that does not exist.
func cmdZMScore(e *Engine, args []string) any {
	ent, err := e.zsetFor(args[1])
	if err != nil {
		return err
	}
	out := make([]any, len(args)-2)
	if ent == nil {
		return out
	}
	for i, m := range args[2:] {
		if s, ok := ent.zset.scores[m]; ok {
			out[i] = e.score(s)
		}
	}
	return out
}

// cmdZIncrBy implements ZINCRBY key increment member, as ZADD key INCR.
func cmdZIncrBy(e *Engine, args []string) any {
	return cmdZAdd(e, []string{"zadd", args[1], "incr", args[2], args[3]})
}

func cmdZRem(e *Engine, args []string) any {
	ent, err := e.zsetFor(args[1])
	if err != nil {
		return err
	}
	if ent == nil {
		return int64(0)
	}
	var n int64
	for _, m := range args[2:] {
		if ent.zset.remove(m) {
			n++
		}
	}
	if ent.zset.len() == 0 {
		delete(e.ks.m, args[1])
	}
	return n
}

// cmdZRange implements ZRANGE (index, BYSCORE, REV, LIMIT, WITHSCORES),
// ZRANGEBYSCORE and ZREVRANGEBYSCORE, following zrangeGenericCommand.
func cmdZRange(e *Engine, args []string) any {
	name := strings.ToLower(args[0])
	byScore, rev, auto := false, false, true
	switch name {
	case "zrangebyscore":
		byScore, auto = true, false
	case "zrevrangebyscore":
		byScore, rev, auto = true, true, false
	}
	var withScores, limitSet, byLex bool
	var offset, count int64 = 0, -1
	dirAuto, typeAuto := auto, auto
	for j := 4; j < len(args); j++ {
		o := strings.ToLower(args[j])
		left := len(args) - j - 1
		switch {
		case o == "withscores":
			withScores = true
		case o == "limit" && left >= 2:
			var ok bool
			if offset, ok = parseInt(args[j+1]); !ok {
				return errNotInt
			}
			if count, ok = parseInt(args[j+2]); !ok {
				return errNotInt
			}
			limitSet = true
			j += 2
		case dirAuto && o == "rev":
			rev, dirAuto = true, false
		case typeAuto && o == "bylex":
			byLex, typeAuto = true, false
		case typeAuto && o == "byscore":
			byScore, typeAuto = true, false
		default:
			return errSyntax
		}
	}
	if limitSet && !byScore && !byLex {
		return &ErrorReply{Msg: "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"}
	}
	if withScores && byLex {
		return &ErrorReply{Msg: "ERR syntax error, WITHSCORES not supported in combination with BYLEX"}
	}
	if byLex {
		return &ErrorReply{Msg: "ERR luatest does not support BYLEX"}
	}
	minArg, maxArg := args[2], args[3]
	if rev && byScore {
		minArg, maxArg = maxArg, minArg
	}
	var out []any
	emit := func(m ZMember) {
		out = append(out, m.Member)
		if withScores {
			out = append(out, e.score(m.Score))
		}
	}
	if !byScore {
		start, ok1 := parseInt(minArg)
		end, ok2 := parseInt(maxArg)
		if !ok1 || !ok2 {
			return errNotInt
		}
		ent, err := e.zsetFor(args[1])
		if err != nil {
			return err
		}
		out = []any{}
		if ent == nil {
			return out
		}
		s := ent.zset.sorted
		n := int64(len(s))
		if start < 0 {
			start += n
		}
		if end < 0 {
			end += n
		}
		if start < 0 {
			start = 0
		}
		if start > end || start >= n {
			return out
		}
		if end >= n {
			end = n - 1
		}
		for r := start; r <= end; r++ {
			if rev {
				emit(s[n-1-r])
			} else {
				emit(s[r])
			}
		}
		return out
	}
	min, ok1 := parseBound(minArg)
	max, ok2 := parseBound(maxArg)
	if !ok1 || !ok2 {
		return errMinMaxFloat
	}
	ent, err := e.zsetFor(args[1])
	if err != nil {
		return err
	}
	out = []any{}
	if ent == nil || offset < 0 {
		return out
	}
	s := ent.zset.sorted
	for k := range s {
		m := s[k]
		if rev {
			m = s[len(s)-1-k]
		}
		if !min.geMin(m.Score) || !max.leMax(m.Score) {
			continue
		}
		if offset > 0 {
			offset--
			continue
		}
		if count == 0 {
			break
		}
		emit(m)
		if count > 0 {
			count--
		}
	}
	return out
}

func cmdZRemRangeByScore(e *Engine, args []string) any {
	min, ok1 := parseBound(args[2])
	max, ok2 := parseBound(args[3])
	if !ok1 || !ok2 {
		return errMinMaxFloat
	}
	ent, err := e.zsetFor(args[1])
	if err != nil {
		return err
	}
	if ent == nil {
		return int64(0)
	}
	removed := ent.zset.removeWhere(func(_ int, m ZMember) bool {
		return min.geMin(m.Score) && max.leMax(m.Score)
	})
	if ent.zset.len() == 0 {
		delete(e.ks.m, args[1])
	}
	return int64(removed)
}

func cmdZRemRangeByRank(e *Engine, args []string) any {
	start, ok1 := parseInt(args[2])
	end, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		return errNotInt
	}
	ent, err := e.zsetFor(args[1])
	if err != nil {
		return err
	}
	if ent == nil {
		return int64(0)
	}
	z := ent.zset
	n := int64(z.len())
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if start > end || start >= n {
		return int64(0)
	}
	if end >= n {
		end = n - 1
	}
	removed := z.removeWhere(func(i int, _ ZMember) bool {
		return int64(i) >= start && int64(i) <= end
	})
	if z.len() == 0 {
		delete(e.ks.m, args[1])
	}
	return int64(removed)
}
