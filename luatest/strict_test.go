package luatest

import (
	"errors"
	"strings"
	"testing"
)

func TestStrictness(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		src   string
		keys  []string
		rule  string
		words []string // must appear in the message
	}{
		{"undeclared read", Options{}, `return redis.call('GET', 'other')`, []string{"k"}, RuleUndeclaredKey, []string{"GET", `"other"`}},
		{"undeclared write", Options{}, `return redis.call('DEL', KEYS[1], 'x')`, []string{"k"}, RuleUndeclaredKey, []string{"DEL", `"x"`}},
		{"undeclared via pcall", Options{}, `return redis.pcall('GET', 'other')`, []string{"k"}, RuleUndeclaredKey, nil},
		{"not catchable by pcall", Options{}, `pcall(redis.call, 'GET', 'other') return 1`, []string{"k"}, RuleUndeclaredKey, nil},
		{"cross slot", Options{}, `return 1`, []string{"a", "b"}, RuleCrossSlot, []string{`"a"`, `"b"`}},
		{"unknown command", Options{}, `return redis.call('LPUSH', KEYS[1], 'x')`, []string{"k"}, RuleUnknownCommand, []string{"LPUSH"}},
		{"key without ttl", Options{}, `redis.call('SET', KEYS[1], 'x') return 1`, []string{"k"}, RuleKeyWithoutTTL, []string{`"k"`}},
		{"hash without ttl", Options{}, `redis.call('HSET', KEYS[1], 'f', 'x') return 1`, []string{"k"}, RuleKeyWithoutTTL, nil},
		{"ttl removed by overwrite", Options{}, `redis.call('SET', KEYS[1], 'x', 'EX', 5) redis.call('SET', KEYS[1], 'y') return 1`, []string{"k"}, RuleKeyWithoutTTL, nil},
		{"allowed without ttl", Options{AllowKeylessTTL: true}, `redis.call('SET', KEYS[1], 'x') return 1`, []string{"k"}, "", nil},
		{"ttl set", Options{}, `redis.call('SET', KEYS[1], 'x') redis.call('EXPIRE', KEYS[1], 5) return 1`, []string{"k"}, "", nil},
		{"deleted key fine", Options{}, `redis.call('SET', KEYS[1], 'x') redis.call('DEL', KEYS[1]) return 1`, []string{"k"}, "", nil},
		{"same slot via tag", Options{}, `return 1`, []string{"{u}a", "{u}b"}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(tt.opts)
			res, err := e.Run(tt.src, tt.keys, nil)
			if res == nil {
				t.Fatal("nil result")
			}
			if tt.rule == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var v *Violation
			if !errors.As(err, &v) || v.Rule != tt.rule {
				t.Fatalf("err = %v (%T), want violation %s", err, err, tt.rule)
			}
			for _, w := range tt.words {
				if !strings.Contains(v.Error(), w) {
					t.Errorf("message %q lacks %q", v.Error(), w)
				}
			}
		})
	}
}

func TestViolationKeepsTrace(t *testing.T) {
	e := New(Options{})
	res, err := e.Run(`redis.call('GET', KEYS[1]) redis.call('GET', 'x')`, []string{"k"}, nil)
	if err == nil || len(res.Trace) != 2 {
		t.Fatalf("err=%v trace=%v", err, res.Trace)
	}
}

func TestDoIsNotStrict(t *testing.T) {
	e := New(Options{})
	if _, err := e.Do("SET", "anything", "v"); err != nil {
		t.Fatal(err)
	}
	_, err := e.Do("LPUSH", "k", "v")
	var er *ErrorReply
	if !errors.As(err, &er) || er.Msg != "ERR unknown command 'LPUSH', with args beginning with: 'k' 'v' " {
		t.Fatalf("err = %v", err)
	}
	_, err = e.Do("GET")
	if err == nil || err.Error() != "ERR wrong number of arguments for 'get' command" {
		t.Fatalf("err = %v", err)
	}
}
