package luatest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

const benchScript = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {n, redis.call('PTTL', KEYS[1])}
`

func BenchmarkRun(b *testing.B) {
	e := New(Options{})
	keys, args := []string{"rl:{u1}"}, []string{"60000"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if i%1000 == 0 {
			e.FlushAll()
		}
		if _, err := e.Run(benchScript, keys, args); err != nil {
			b.Fatal(err)
		}
	}
}

func run(t *testing.T, e *Engine, src string, keys []string, args ...string) (*Result, error) {
	t.Helper()
	res, err := e.Run(src, keys, args)
	if res == nil {
		t.Fatalf("Run(%q) returned nil Result", src)
	}
	return res, err
}

func TestRunTraceAndCount(t *testing.T) {
	e := New(Options{})
	res, err := run(t, e, benchScript, []string{"k"}, "1000")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Ints(res.Reply)
	if err != nil || !reflect.DeepEqual(got, []int64{1, 1000}) {
		t.Fatalf("reply = %v, %v", got, err)
	}
	want := []Call{{"INCR", []string{"k"}}, {"PEXPIRE", []string{"k", "1000"}}, {"PTTL", []string{"k"}}}
	if !reflect.DeepEqual(res.Trace, want) {
		t.Fatalf("trace = %#v", res.Trace)
	}
	if res.Count("") != 3 || res.Count("incr") != 1 || res.Count("GET") != 0 {
		t.Fatalf("Count wrong: %d %d %d", res.Count(""), res.Count("incr"), res.Count("GET"))
	}
	e.Advance(400 * time.Millisecond)
	res, _ = run(t, e, benchScript, []string{"k"}, "1000")
	if got, _ := Ints(res.Reply); !reflect.DeepEqual(got, []int64{2, 600}) {
		t.Fatalf("second run = %v", got)
	}
	if res.Count("PEXPIRE") != 0 {
		t.Fatal("PEXPIRE should not be called on second run")
	}
}

func TestClock(t *testing.T) {
	e := New(Options{})
	if !e.Now().Equal(time.Unix(1_700_000_000, 0)) {
		t.Fatalf("default Now = %v", e.Now())
	}
	e.SetNow(time.UnixMilli(5000))
	e.Advance(-time.Second)
	if e.Now().UnixMilli() != 4000 {
		t.Fatalf("Now = %v", e.Now())
	}
	e2 := New(Options{Now: time.Unix(10, 5000)})
	r, _ := e2.Do("TIME")
	if !reflect.DeepEqual(r, []any{"10", "5"}) {
		t.Fatalf("TIME = %#v", r)
	}
}

func TestLoadEvalSHA(t *testing.T) {
	e := New(Options{})
	src := `return ARGV[1]`
	sha := e.Load(src)
	if sha != sha1hex(src) || len(sha) != 40 {
		t.Fatalf("sha = %q", sha)
	}
	res, err := e.EvalSHA(strings.ToUpper(sha), nil, []string{"hi"})
	if err != nil || res.Reply != "hi" {
		t.Fatalf("EvalSHA = %#v, %v", res.Reply, err)
	}
	res, err = e.EvalSHA("0000000000000000000000000000000000000000", nil, nil)
	var er *ErrorReply
	if !errors.As(err, &er) || !strings.HasPrefix(er.Msg, "NOSCRIPT ") || res == nil {
		t.Fatalf("unknown sha: %v", err)
	}
	_, err = e.Run(`return (`, nil, nil)
	if !errors.As(err, &er) || !strings.HasPrefix(er.Msg, "ERR Error compiling script") {
		t.Fatalf("compile error: %v", err)
	}
}

func TestRunsAreIsolated(t *testing.T) {
	e := New(Options{})
	if _, err := e.Run(`local x = 1; return x`, nil, nil); err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(`return #KEYS .. ':' .. #ARGV`, []string{"a"}, nil)
	if err != nil || res.Reply != "1:0" {
		t.Fatalf("%#v %v", res.Reply, err)
	}
	res, err = e.Run(`return #KEYS`, nil, nil)
	if err != nil || res.Reply != int64(0) {
		t.Fatalf("%#v %v", res.Reply, err)
	}
}

func TestKeyspaceAccessors(t *testing.T) {
	e := New(Options{})
	mustDo(t, e, "SET", "s", "v", "PX", "1500")
	mustDo(t, e, "HSET", "h", "b", "2", "a", "1")
	mustDo(t, e, "ZADD", "z", "2", "b", "1", "c", "1", "a")
	if got := e.Keys(); !reflect.DeepEqual(got, []string{"h", "s", "z"}) {
		t.Fatalf("Keys = %v", got)
	}
	for k, want := range map[string]string{"s": "string", "h": "hash", "z": "zset", "x": "none"} {
		if got := e.Type(k); got != want {
			t.Errorf("Type(%s) = %s", k, got)
		}
	}
	if e.PTTL("s") != 1500 || e.PTTL("h") != -1 || e.PTTL("x") != -2 {
		t.Fatalf("PTTL = %d %d %d", e.PTTL("s"), e.PTTL("h"), e.PTTL("x"))
	}
	if got := e.Dump("h"); !reflect.DeepEqual(got, map[string]string{"a": "1", "b": "2"}) {
		t.Fatalf("Dump(h) = %#v", got)
	}
	if got := e.Dump("z"); !reflect.DeepEqual(got, []ZMember{{"a", 1}, {"c", 1}, {"b", 2}}) {
		t.Fatalf("Dump(z) = %#v", got)
	}
	if e.Dump("s") != "v" || e.Dump("x") != nil {
		t.Fatal("Dump string/missing")
	}
	e.Advance(1500 * time.Millisecond)
	if e.PTTL("s") != 0 || e.Type("s") != "string" {
		t.Fatalf("at expiry instant the key still exists with PTTL 0, got %d", e.PTTL("s"))
	}
	e.Advance(time.Millisecond)
	if e.PTTL("s") != -2 || e.Dump("s") != nil {
		t.Fatal("key should have expired")
	}
	e.FlushAll()
	if len(e.Keys()) != 0 {
		t.Fatal("FlushAll")
	}
}

func mustDo(t *testing.T, e *Engine, args ...string) any {
	t.Helper()
	r, err := e.Do(args...)
	if err != nil {
		t.Fatalf("Do(%q): %v", args, err)
	}
	return r
}

func TestIntsStrings(t *testing.T) {
	if _, err := Ints("x"); err == nil {
		t.Fatal("Ints(string) should fail")
	}
	if _, err := Ints([]any{int64(1), "2"}); err == nil {
		t.Fatal("Ints with string element should fail")
	}
	if got, err := Ints([]any{int64(1), int64(-2)}); err != nil || !reflect.DeepEqual(got, []int64{1, -2}) {
		t.Fatal(got, err)
	}
	if got, err := Strings([]any{"a", nil}); err != nil || !reflect.DeepEqual(got, []string{"a", ""}) {
		t.Fatal(got, err)
	}
}
