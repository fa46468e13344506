package ratelua

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/internal/model"
	"github.com/ratelua/ratelua/luatest"
)

// fuzzTarget describes one script to fuzzScript.
type fuzzTarget struct {
	name  string
	group int    // integers per limit
	login string // the login case's limits, comma-separated
	// extra are script-specific seeds: limit strings, valid or not.
	extra []string
	// newModel builds the reference model from the parsed limits.
	newModel func(limits [][]int64) model.Model
	// tooSlow, if set, reports an accepted ARGV whose call would take
	// luatest too long; such inputs are skipped.
	tooSlow func(argv []string) bool
	// accepts is the contract's rule for the version under test (set by
	// fuzzScript).
	accepts func(name string, keys, argv []string) bool
	// modelOf, if set, builds the model from an accepted ARGV instead of
	// newModel (a script whose ARGV is not limits alone).
	modelOf func(argv []string) model.Model
	// shape, if set, checks an accepted call's reply instead of the
	// limits' rules (allowed, remaining, retry_after, reset_after,
	// limit_index): a problem, or "".
	shape func(argv []string, reply []int64) string
}

// fuzzInput is one fuzz input: the first call's ARGV pieces, the second
// call's eventCount and the step from the first call's now to the second's.
type fuzzInput struct {
	count1, unit, now, mode, limits, count2 string
	step                                    int64
	key                                     string // the state key
}

func (in fuzzInput) String() string {
	return fmt.Sprintf("count1=%q unit=%q now=%q mode=%q limits=%q count2=%q step=%d key=%q",
		in.count1, in.unit, in.now, in.mode, in.limits, in.count2, in.step, in.key)
}

// fuzzSplitLimits splits the raw limit string on commas; "" is no argument.
func fuzzSplitLimits(raw string) []string {
	if raw == "" {
		return nil
	}
	return strings.Split(raw, ",")
}

// seeds returns the seed corpus of a target: valid calls of the login case
// and invalid ones.
func (ft fuzzTarget) seeds() []fuzzInput {
	l := ft.login
	one := strings.Join(strings.Split(l, ",")[:ft.group], ",")
	repeat := func(n int) string { return strings.TrimSuffix(strings.Repeat(one+",", n), ",") }
	s := []fuzzInput{
		// Valid calls.
		{"1", "s", "1000", "0", l, "1", 1, testKey},
		{"1", "s", "1000", "1", l, "1", 0, testKey},
		{"1", "s", "1000", "0", l, "1", 5, testKey},
		{"3", "ms", "1000000", "0", l, "2", 5000, testKey},
		{"1", "us", "0", "1", l, "7", 1, testKey},
		{"0", "s", "1000", "0", l, "1", 0, testKey},
		{"2", "s", "1000", "1", l, "0", 3, testKey},
		{"-1", "s", "1000", "0", l, "1", 1, testKey},
		{"1", "s", "1000", "0", l, "-5", 1, testKey},
		{"1", "s", "", "0", l, "1", 0, testKey},  // server clock twice
		{"1", "ms", "", "1", l, "1", 7, testKey}, // server clock, then an explicit now
		{"4503599627370496", "s", "4503599627370496", "1", l, "1", -1, testKey},
		{"-4503599627370496", "s", "0", "0", l, "4503599627370496", 0, testKey},
		{"-0", "s", "-0", "0", l, "00001", 3, testKey},
		{"1", "s", "1000", "0", repeat(16), "1", 1, testKey}, // 16 limits
		// Invalid first calls (each on a state written by a valid call).
		{"1", "sec", "1000", "0", l, "1", 1, testKey},
		{"1", "S", "1000", "0", l, "1", 1, testKey},
		{"1", "", "1000", "0", l, "1", 1, testKey},
		{"1.5", "s", "1000", "0", l, "1", 1, testKey},
		{"0x10", "s", "1000", "0", l, "1", 1, testKey},
		{" 1", "s", "1000", "0", l, "1", 1, testKey},
		{"", "s", "1000", "0", l, "1", 1, testKey},
		{"+1", "s", "1000", "0", l, "1", 1, testKey},
		{"1e3", "s", "1000", "0", l, "1", 1, testKey},
		{"4503599627370497", "s", "1000", "0", l, "1", 1, testKey},
		{"-4503599627370497", "s", "1000", "0", l, "1", 1, testKey},
		{"1", "s", "4503599627370497", "0", l, "1", 1, testKey},
		{"1", "s", "-1", "0", l, "1", 1, testKey},
		{"1", "s", " 1000", "0", l, "1", 1, testKey},
		{"1", "s", "1000", "2", l, "1", 1, testKey},
		{"1", "s", "1000", "", l, "1", 1, testKey},
		{"1", "s", "1000", "0", "", "1", 1, testKey},                            // no limits
		{"1", "s", "1000", "0", repeat(17), "1", 1, testKey},                    // 17 limits
		{"1", "s", "1000", "0", l[:strings.LastIndex(l, ",")], "1", 1, testKey}, // a missing field
		{"1", "s", "1000", "0", l + ",", "1", 1, testKey},                       // an empty extra argument
		{"1", "s", "1000", "0", "-0" + l[strings.Index(l, ","):], "1", 1, testKey},
		{"1", "s", "1000", "0", "1.5" + l[strings.Index(l, ","):], "1", 1, testKey},
		{"-1", "s", "1000", "0", "x" + l[strings.Index(l, ","):], "1", 1, testKey},
		// Valid first calls, invalid second calls (on the state written).
		{"1", "s", "1000", "0", l, "x", 1, testKey},
		{"1", "s", "1000", "1", l, "4503599627370497", 1, testKey},
		{"1", "s", "1000", "0", l, "1", -2000, testKey},
		{"1", "s", "4503599627370496", "0", l, "1", 1, testKey},
	}
	// State keys of other lengths and bytes.
	for i, key := range []string{"", "{", "}{", "%", "a\x00b", "é{ü}%7B", strings.Repeat("k", 41), strings.Repeat("{x}\x00é", 60)} {
		s = append(s, fuzzInput{"1", "s", "1000", strconv.Itoa(i % 2), l, "1", int64(i), key})
	}
	if model.Reservable[ft.name] {
		// Reserves, each settled by the second call (secondMode).
		for _, m := range []string{"reserve:7:60", "reserve:4503599627370496:1", "reserve:1:4503599627370496"} {
			s = append(s,
				fuzzInput{"1", "s", "1000", m, l, "0", 1, testKey},  // a cancel
				fuzzInput{"3", "s", "1000", m, l, "1", 5, testKey},  // a refund
				fuzzInput{"1", "s", "1000", m, l, "9", 0, testKey},  // a charge
				fuzzInput{"1", "ms", "", m, l, "2", 0, testKey},     // the server clock
				fuzzInput{"1", "s", "1000", m, l, "1", 61, testKey}, // expired
				fuzzInput{"9", "s", "1000", m, l, "0", 1, testKey})  // denied, nothing to settle
		}
		for _, m := range []string{"reserve:0:60", "reserve:01:60", "reserve:1:0", "reserve:1", "reserve:1:2:3",
			"settle:", "settle:-1", "settle:4503599627370497", "Reserve:1:1", "reserve:1:60 ", "cancel:1"} {
			s = append(s, fuzzInput{"1", "s", "1000", m, l, "1", 1, testKey})
		}
		s = append(s,
			fuzzInput{"0", "s", "1000", "reserve:1:60", l, "1", 1, testKey},  // an estimate of 0
			fuzzInput{"-1", "s", "1000", "reserve:1:60", l, "1", 1, testKey}, // a negative one
			fuzzInput{"1", "s", "1000", "reserve:1:60", l, "-1", 1, testKey}) // a negative actual cost
	}
	for _, lim := range ft.extra {
		s = append(s,
			fuzzInput{"1", "s", "1000", "1", lim, "1", 1, testKey},
			fuzzInput{"5", "s", "1000", "0", lim, "1", 1, testKey}, // denied second calls
			fuzzInput{"2", "ms", "1000", "1", lim, "3", 2, testKey},
			fuzzInput{"1", "s", "1000", "0", lim, "-1", 0, testKey})
	}
	return s
}

// fuzzScript runs the fuzz target of one script.
func fuzzScript(f *testing.F, name string) {
	ft := fuzzTargets[name]
	latest, err := NewRegistry().Latest(ft.name)
	if err != nil {
		f.Fatal(err)
	}
	ft.accepts = contractAccepts(latest)
	for _, s := range ft.seeds() {
		f.Add(s.count1, s.unit, s.now, s.mode, s.limits, s.count2, s.step, s.key)
	}
	f.Fuzz(func(t *testing.T, count1, unit, now, mode, limits, count2 string, step int64, key string) {
		checkFuzzInput(t, ft, latest.Source, fuzzInput{count1, unit, now, mode, limits, count2, step, key})
	})
}

// contractAccepts is the rule by which a script version accepts a call:
// v3 takes integers only in canonical form.
func contractAccepts(s Script) func(name string, keys, argv []string) bool {
	if s.Version >= 3 {
		return model.AcceptsCanonical
	}
	return model.Accepts
}

// checkFuzzInput makes two calls on a fresh frozen-clock engine and checks
// them against the contract and the model.
func checkFuzzInput(t *testing.T, ft fuzzTarget, src string, in fuzzInput) {
	t.Helper()
	fc := &fuzzCase{t: t, ft: ft, src: src, in: in, e: frozenEngine()}
	lim := fuzzSplitLimits(in.limits)
	argv1 := append([]string{in.count1, in.unit, in.now, in.mode}, lim...)
	argv2 := append([]string{in.count2, in.unit, fc.secondNow(), secondMode(in.mode)}, lim...)
	for _, argv := range [][]string{argv1, argv2} {
		if ft.tooSlow != nil && ft.accepts(ft.name, []string{in.key}, argv) && ft.tooSlow(argv) {
			t.Skipf("ARGV %q is too slow for luatest", argv)
		}
	}
	fc.call(1, argv1)
	fc.call(2, argv2)
}

// fuzzCase is the state of one fuzz input.
type fuzzCase struct {
	t   *testing.T
	ft  fuzzTarget
	src string
	in  fuzzInput
	e   *luatest.Engine
	m   model.Model // built at the first accepted call
}

func (fc *fuzzCase) fatalf(n int, argv []string, format string, args ...any) {
	fc.t.Helper()
	fc.t.Fatalf("%s call %d ARGV %q: %s\ninput: %v\nstate: %#v (PTTL %d)", fc.ft.name, n, argv,
		fmt.Sprintf(format, args...), fc.in, fc.e.Dump(fc.in.key), fc.e.PTTL(fc.in.key))
}

// unitNow is the engine clock in unit, as the scripts read it from TIME.
func (fc *fuzzCase) unitNow(unit string) (int64, bool) {
	switch unit {
	case "s":
		return fc.e.Now().Unix(), true
	case "ms":
		return fc.e.Now().UnixMilli(), true
	case "us":
		return fc.e.Now().UnixMicro(), true
	}
	return 0, false
}

// secondNow is the second call's now: the first call's now plus step
// (saturating), "" again after "" with a zero step, and the first call's
// text unchanged when that is not an integer.
func (fc *fuzzCase) secondNow() string {
	var base int64
	switch n, err := strconv.ParseInt(fc.in.now, 10, 64); {
	case fc.in.now == "":
		b, ok := fc.unitNow(fc.in.unit)
		if fc.in.step == 0 || !ok {
			return ""
		}
		base = b
	case err == nil && fuzzIsDecimal(fc.in.now):
		base = n
	default:
		return fc.in.now
	}
	next := base + fc.in.step
	if (fc.in.step > 0 && next < base) || (fc.in.step < 0 && next > base) {
		if fc.in.step > 0 {
			next = 1<<63 - 1
		} else {
			next = -1 << 63
		}
	}
	return strconv.FormatInt(next, 10)
}

// secondMode is the second call's mode: the settle of the first call's
// reservation when that is a reserve ('reserve:<id>:...' then
// 'settle:<id>'), else the first call's mode.
func secondMode(mode string) string {
	if rest, ok := strings.CutPrefix(mode, "reserve:"); ok {
		id, _, _ := strings.Cut(rest, ":")
		return "settle:" + id
	}
	return mode
}

func fuzzIsDecimal(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// fuzzSnapshot is the observable keyspace.
type fuzzSnapshot struct {
	keys []string
	dump any
	pttl int64
}

func (fc *fuzzCase) snapshot() fuzzSnapshot {
	return fuzzSnapshot{fc.e.Keys(), fc.e.Dump(fc.in.key), fc.e.PTTL(fc.in.key)}
}

// call runs one call and checks it: rejected with an unchanged keyspace
// when the contract rejects it, else a well-formed reply equal to the
// model's, and the key's existence and TTL as the model says.
func (fc *fuzzCase) call(n int, argv []string) {
	t := fc.t
	t.Helper()
	key := fc.in.key
	if !fc.ft.accepts(fc.ft.name, []string{key}, argv) {
		fc.rejected(n, argv)
		return
	}
	got, _, err := runOn(t, fc.e, fc.src, key, argv)
	if err != nil {
		fc.fatalf(n, argv, "the contract accepts the call, the script answers %v", err)
	}
	count, _ := strconv.ParseInt(argv[0], 10, 64)
	nlimits := int64((len(argv) - 4) / fc.ft.group)

	// The reply's shape.
	if fc.ft.shape != nil {
		if problem := fc.ft.shape(argv, got); problem != "" {
			fc.fatalf(n, argv, "reply %v: %s", got, problem)
		}
	} else {
		fc.limitShape(n, argv, got)
	}
	if count < 0 && fc.e.Type(key) != "none" && fc.ft.modelOf == nil {
		fc.fatalf(n, argv, "a negative eventCount left the state key")
	}
	for _, k := range fc.e.Keys() {
		if k != key {
			fc.fatalf(n, argv, "key %q other than the state key exists", k)
		}
		if pttl := fc.e.PTTL(k); pttl <= 0 {
			fc.fatalf(n, argv, "key %q has PTTL %d", k, pttl)
		}
	}

	// The model. The engine clock is frozen, so a call on the server clock
	// ("" now) runs at the engine's TIME in the unit.
	if fc.m == nil && fc.ft.modelOf != nil {
		fc.m = fc.ft.modelOf(argv)
	}
	if fc.m == nil {
		vals := make([][]int64, 0, nlimits)
		for i := 4; i < len(argv); i += fc.ft.group {
			v := make([]int64, fc.ft.group)
			for j := range v {
				v[j], _ = strconv.ParseInt(argv[i+j], 10, 64)
			}
			vals = append(vals, v)
		}
		fc.m = fc.ft.newModel(vals)
	}
	c := model.Call{Count: count, Unit: argv[1]}
	switch argv[3] {
	case "0", "1":
		c.Mode = int(argv[3][0] - '0')
		if fc.ft.name == Concurrency && len(argv) == 7 {
			// A v6 acquire of the caller's lease id.
			c.Lease, _ = strconv.ParseInt(argv[6], 10, 64)
		}
	default:
		if op, id, lifetime, ok := model.ParseReservation(argv[3]); ok {
			// v7's reserve or settle.
			c.Op, c.ID, c.Lifetime = op, id, lifetime
			break
		}
		// The concurrency script's renew or release of lease ARGV[7].
		c.Op = argv[3]
		c.Lease, _ = strconv.ParseInt(argv[6], 10, 64)
	}
	if argv[2] == "" {
		c.Now, _ = fc.unitNow(argv[1])
	} else {
		c.Now, _ = strconv.ParseInt(argv[2], 10, 64)
	}
	want := fc.m.Do(c).Ints()
	if !equalInts(got, want) {
		fc.fatalf(n, argv, "reply %v, model %v (model now %d)", got, want, c.Now)
	}
	exists := fc.e.Type(key) != "none"
	if exists != fc.m.Exists() {
		fc.fatalf(n, argv, "key exists %v, model says %v", exists, fc.m.Exists())
	}
	if exists && fc.e.PTTL(key) != fc.m.TTLMillis() {
		fc.fatalf(n, argv, "PTTL %d, model %d", fc.e.PTTL(key), fc.m.TTLMillis())
	}
}

// limitShape checks the reply of a call of limits: allowed 0 or 1,
// remaining >= 0, retry_after -1 or more (0 when allowed), reset_after in
// [0, 2^52], limit_index 0 after a reset and a limit's index otherwise.
func (fc *fuzzCase) limitShape(n int, argv []string, got []int64) {
	fc.t.Helper()
	count, _ := strconv.ParseInt(argv[0], 10, 64)
	nlimits := int64((len(argv) - 4) / fc.ft.group)
	allowed, remaining, retry, reset, index := got[0], got[1], got[2], got[3], got[4]
	if strings.HasPrefix(argv[3], "settle:") {
		if index == 0 && (allowed != 0 || retry != -1) {
			fc.fatalf(n, argv, "reply %v: a settle not applied must answer allowed 0, retry_after -1", got)
		}
		if index == 0 {
			index = 1 // the rest as a peek's
		}
		count = 0
	}
	switch {
	case allowed != 0 && allowed != 1:
		fc.fatalf(n, argv, "reply %v: allowed not 0 or 1", got)
	case remaining < 0:
		fc.fatalf(n, argv, "reply %v: remaining < 0", got)
	case retry < -1 || (allowed == 1 && retry != 0):
		fc.fatalf(n, argv, "reply %v: retry_after < -1, or not 0 when allowed", got)
	case reset < 0 || reset > model.MaxTime:
		fc.fatalf(n, argv, "reply %v: reset_after outside [0, 2^52]", got)
	case count < 0 && index != 0:
		fc.fatalf(n, argv, "reply %v: limit_index not 0 after a negative eventCount", got)
	case count >= 0 && (index < 1 || index > nlimits):
		fc.fatalf(n, argv, "reply %v: limit_index outside [1, %d]", got, nlimits)
	}
}

// rejected checks a call the contract rejects: an "ERR ratelua:" error
// reply and an unchanged keyspace. With no state yet, a valid login-case
// call writes one first, and the keyspace is emptied again afterwards so
// that the model still describes it.
func (fc *fuzzCase) rejected(n int, argv []string) {
	t := fc.t
	t.Helper()
	primed := false
	if len(fc.e.Keys()) == 0 {
		prime := append([]string{"1", "s", "1000", "0"}, fuzzSplitLimits(fc.ft.login)...)
		if _, _, err := runOn(t, fc.e, fc.src, fc.in.key, prime); err != nil {
			t.Fatalf("priming call %q: %v", prime, err)
		}
		if len(fc.e.Keys()) == 0 {
			t.Fatalf("priming call %q wrote no state", prime)
		}
		primed = true
	}
	before := fc.snapshot()
	res, err := fc.e.Run(fc.src, []string{fc.in.key}, argv)
	var v *luatest.Violation
	var er *luatest.ErrorReply
	switch {
	case errors.As(err, &v):
		fc.fatalf(n, argv, "strictness violation: %v", err)
	case err == nil:
		fc.fatalf(n, argv, "the contract rejects the call, the script answers %#v", res.Reply)
	case !errors.As(err, &er):
		fc.fatalf(n, argv, "error %T %v is not an error reply", err, err)
	case !strings.HasPrefix(er.Msg, "ERR ratelua:"):
		fc.fatalf(n, argv, "error reply %q does not start with \"ERR ratelua:\"", er.Msg)
	}
	if after := fc.snapshot(); !reflect.DeepEqual(before, after) {
		fc.fatalf(n, argv, "a rejected call changed the keyspace from %#v to %#v", before, after)
	}
	if primed {
		fc.e.FlushAll()
	}
}

// fuzzTargets are the scripts' targets, by script name.
var fuzzTargets = map[string]fuzzTarget{
	SlidingWindow: {
		name: SlidingWindow, group: 3, login: "1,5,1,5,3600,600",
		extra: []string{
			"1,5,6",        // resolution > duration
			"1,10001,1",    // 10001 buckets
			"1,10000,1",    // 10000 buckets
			"1,7,2,3,20,3", // partial buckets
			"1000000000,4503599627370496,4503599627370496",
			"1000000001,5,1",
			"1,0,1",
		},
		newModel: func(ls [][]int64) model.Model {
			m := &model.SlidingWindow{}
			for _, v := range ls {
				m.Limits = append(m.Limits, model.SlidingWindowLimit{Max: v[0], Duration: v[1], Resolution: v[2]})
			}
			return m
		},
	},
	AR1: {
		name: AR1, group: 3, login: "1,2000,1,5,2000,600",
		extra: []string{
			"1,1000,1", // decay too small
			"3,1001,1", // the slowest decay
			"3,1000000000,1",
			"1000000000,1000000001,1",
			"2,2718,4503599627370496",
			"1,2000,0",
		},
		newModel: func(ls [][]int64) model.Model {
			m := &model.AR1{}
			for _, v := range ls {
				m.Limits = append(m.Limits, model.AR1Limit{Max: v[0], Decay: v[1], Resolution: v[2]})
			}
			return m
		},
	},
	ZSetLog: {
		name: ZSetLog, group: 2, login: "1,5,5,3600",
		extra: []string{
			"1000001,5", // max too large
			"3,4503599627370496",
			"2,1,3,2,4,3",
			"1,0",
		},
		newModel: func(ls [][]int64) model.Model {
			m := &model.ZSetLog{}
			for _, v := range ls {
				m.Limits = append(m.Limits, model.ZSetLogLimit{Max: v[0], Window: v[1]})
			}
			return m
		},
		// A call adds min(eventCount, largest max + 1) members, up to
		// 10^6 + 1, one sorted insert (and removal) each in luatest.
		tooSlow: func(argv []string) bool {
			count, _ := strconv.ParseInt(argv[0], 10, 64)
			var largest int64
			for i := 4; i < len(argv); i += 2 {
				m, _ := strconv.ParseInt(argv[i], 10, 64)
				largest = max(largest, m)
			}
			return min(count, largest+1) > 2000
		},
	},
	TokenBucket: {
		name: TokenBucket, group: 3, login: "5,1,720",
		extra: []string{
			"1000000000,1,1125900", // capacity * refill_interval > 2^50
			"1024,1,1099511627776", // capacity * refill_interval = 2^50
			"1024,1,1099511627777", // just over
			"3,1000000000,1",       // a large refill
			"5,1,720,2,3,7",
			"5,3,7",
			"5,0,720",
		},
		newModel: func(ls [][]int64) model.Model {
			// The newest version's rule (the fuzz targets run the newest).
			m := &model.TokenBucket{BehindCounts: true}
			for _, v := range ls {
				m.Limits = append(m.Limits, model.TokenBucketLimit{Capacity: v[0], RefillAmount: v[1], RefillInterval: v[2]})
			}
			return m
		},
	},
	FixedWindow: {
		name: FixedWindow, group: 3, login: "5,3600,3600",
		extra: []string{
			"0,60,60", // max 0: every event denied
			"4503599627370496,1,1",
			"4503599627370497,60,60", // max too large
			"3,0,60",                 // window 0
			"3,60,0",                 // expire 0
			"3,60,60,3,60,60",        // two limits
		},
		newModel: func(ls [][]int64) model.Model {
			if len(ls) != 1 {
				return nil
			}
			return &model.FixedWindow{Max: ls[0][0], Window: ls[0][1], Expire: ls[0][2]}
		},
		shape: func(argv []string, r []int64) string {
			max, _ := strconv.ParseInt(argv[4], 10, 64)
			window, _ := strconv.ParseInt(argv[5], 10, 64)
			switch {
			case r[0] != 0 && r[0] != 1:
				return "allowed is neither 0 nor 1"
			case r[1] < 0 || r[1] > max:
				return "remaining outside [0, max]"
			case r[0] == 1 && r[2] != 0 || r[0] == 0 && r[2] != -1 && (r[2] < 1 || r[2] > window):
				return "retry_after is not 0 (allowed), -1 or within the window (denied)"
			case r[3] < 0 || r[3] > window:
				return "reset_after outside [0, window]"
			case r[4] != 0 && r[4] != 1:
				return "limit_index is neither 0 nor 1"
			}
			return ""
		},
	},
}

func FuzzSlidingWindow(f *testing.F) { fuzzScript(f, SlidingWindow) }

func FuzzAR1(f *testing.F) { fuzzScript(f, AR1) }

func FuzzZSetLog(f *testing.F) { fuzzScript(f, ZSetLog) }

func FuzzTokenBucket(f *testing.F) { fuzzScript(f, TokenBucket) }

func FuzzFixedWindow(f *testing.F) { fuzzScript(f, FixedWindow) }
