package luatest

import (
	"errors"
	"reflect"
	"testing"
)

func TestLuaToRESP(t *testing.T) {
	tests := []struct {
		src  string
		want any
		err  string
	}{
		{`return 3.9`, int64(3), ""},
		{`return -3.9`, int64(-3), ""},
		{`return 'x'`, "x", ""},
		{`return true`, int64(1), ""},
		{`return false`, nil, ""},
		{`return nil`, nil, ""},
		{`return`, nil, ""},
		{`return {1, 'a', nil, 3}`, []any{int64(1), "a"}, ""},
		{`return {}`, []any{}, ""},
		{`return {1, {2, false, 3}, true}`, []any{int64(1), []any{int64(2), nil, int64(3)}, int64(1)}, ""},
		{`return {ok='PONG'}`, Status("PONG"), ""},
		{`return redis.status_reply('FINE')`, Status("FINE"), ""},
		{`return {1, redis.error_reply('ERR inner')}`, []any{int64(1), &ErrorReply{Msg: "ERR inner"}}, ""},
		{`return {err='ERR x'}`, nil, "ERR x"},
		{`return {err='x'}`, nil, "x"},
		{`return redis.error_reply('ERR ratelua: bad unit')`, nil, "ERR ratelua: bad unit"},
		{`return redis.error_reply('x')`, nil, "ERR x"},
		{`return redis.error_reply('-WRONG stuff')`, nil, "WRONG stuff"},
		{`return {a=1}`, []any{}, ""},
	}
	for _, tt := range tests {
		e := New(Options{})
		res, err := e.Run(tt.src, nil, nil)
		if tt.err != "" {
			var er *ErrorReply
			if !errors.As(err, &er) || er.Msg != tt.err {
				t.Errorf("%s: err = %v, want %q", tt.src, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if !reflect.DeepEqual(res.Reply, tt.want) {
			t.Errorf("%s: reply = %#v, want %#v", tt.src, res.Reply, tt.want)
		}
	}
}

func TestRESPToLua(t *testing.T) {
	e := New(Options{AllowKeylessTTL: true})
	tests := []struct {
		src  string
		want any
	}{
		{`return type(redis.call('INCR', KEYS[1]))`, "number"},
		{`return type(redis.call('GET', KEYS[1]))`, "string"},
		{`return redis.call('GET', 'nokey{k}') == false and 1 or 0`, int64(1)},
		{`return redis.call('SET', KEYS[1], 'v').ok`, "OK"},
		{`local r = redis.call('HMGET', KEYS[2], 'a', 'b'); return {type(r[1]), tostring(r[2])}`, []any{"boolean", "false"}},
		{`return redis.pcall('HGET', KEYS[1], 'f').err`, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{`local ok, e = pcall(redis.call, 'HGET', KEYS[1], 'f'); return {tostring(ok), e}`, []any{"false", "WRONGTYPE Operation against a key holding the wrong kind of value"}},
		{`return redis.call('TYPE', KEYS[1]).ok`, "string"},
	}
	keys := []string{"k", "h{k}", "nokey{k}"}
	for _, tt := range tests {
		res, err := e.Run(tt.src, keys, nil)
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if !reflect.DeepEqual(res.Reply, tt.want) {
			t.Errorf("%s: reply = %#v, want %#v", tt.src, res.Reply, tt.want)
		}
	}
}

func TestArgumentConversion(t *testing.T) {
	tests := []struct {
		dialect Dialect
		expr    string
		want    string
	}{
		{Redis70, `42`, "42"},
		{Redis70, `2^53`, "9007199254740992"},
		{Redis70, `0.1`, "0.10000000000000001"},
		{Redis70, `1.5`, "1.5"},
		{Redis70, `1e17`, "1e+17"},
		{Redis70, `-0`, "-0"},
		{Valkey80, `0.1`, "0.1"},
		{Valkey80, `1e17`, "100000000000000000"},
		{Valkey80, `2^53`, "9007199254740992"},
		{Redis70, `'abc'`, "abc"},
	}
	for _, tt := range tests {
		e := New(Options{Dialect: tt.dialect, AllowKeylessTTL: true})
		res, err := e.Run(`return redis.call('SET', KEYS[1], `+tt.expr+`)`, []string{"k"}, nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.expr, err)
		}
		if got := res.Trace[0].Args[1]; got != tt.want {
			t.Errorf("dialect %d %s: arg = %q, want %q", tt.dialect, tt.expr, got, tt.want)
		}
	}
}

func TestCallArgumentErrors(t *testing.T) {
	tests := []struct{ src, prefix string }{
		{`return redis.call('SET', KEYS[1], {})`, "ERR Lua redis lib command arguments must be strings or integers script: "},
		{`return redis.call('SET', KEYS[1], true)`, "ERR Lua redis lib command arguments must be strings or integers"},
		{`return redis.call()`, "ERR Please specify at least one argument for this redis lib call"},
		{`return redis.call('GET')`, "ERR Wrong number of args calling Redis command from script"},
		{`return redis.call('INCR', KEYS[1], 'x')`, "ERR Wrong number of args calling Redis command from script"},
	}
	for _, tt := range tests {
		e := New(Options{})
		_, err := e.Run(tt.src, []string{"k"}, nil)
		var er *ErrorReply
		if !errors.As(err, &er) || len(er.Msg) < len(tt.prefix) || er.Msg[:len(tt.prefix)] != tt.prefix {
			t.Errorf("%s: err = %v, want prefix %q", tt.src, err, tt.prefix)
		}
	}
	e := New(Options{})
	res, err := e.Run(`return redis.pcall('SET', KEYS[1], {})`, []string{"k"}, nil)
	if res == nil || err == nil || err.Error() != "ERR Lua redis lib command arguments must be strings or integers" {
		t.Fatalf("pcall bad arg: %v", err)
	}
}

func equalReply(a, b any) bool { return reflect.DeepEqual(a, b) }
