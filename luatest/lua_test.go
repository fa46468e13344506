package luatest

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestLuaEnvironment(t *testing.T) {
	tests := []struct {
		src  string
		want any    // reply when err is ""
		err  string // regexp the ErrorReply must match
	}{
		{`return type(io)`, nil, `^ERR user_script:1: Script attempted to access nonexistent global variable 'io' script: [0-9a-f]{40}, on @user_script:1\.$`},
		{`return os.time()`, nil, `nonexistent global variable 'os'`},
		{`return debug`, nil, `nonexistent global variable 'debug'`},
		{`return loadfile`, nil, `nonexistent global variable 'loadfile'`},
		{`return dofile`, nil, `nonexistent global variable 'dofile'`},
		{`return require`, nil, `nonexistent global variable 'require'`},
		{`x = 1`, nil, `^ERR user_script:1: Attempt to modify a readonly table script: `},
		{"\n\nfunction f() end", nil, `readonly table script: [0-9a-f]+, on @user_script:3\.$`},
		{`_G.x = 1`, nil, `readonly table`},
		{`rawset(_G, 'x', 1)`, nil, `readonly table`},
		{`redis.call = nil`, nil, `readonly table`},
		{`string.len = nil`, nil, `readonly table`},
		{`return rawget(_G, 'nope') == nil and 1 or 0`, int64(1), ""},
		{`return type(string.rep) .. type(table.concat) .. type(math.floor)`, "functionfunctionfunction", ""},
		{`local t = {} table.insert(t, 'a') return table.concat(t, ',')`, "a", ""},
		{`local n = 0 for _ in pairs(redis) do n = n + 1 end return n > 5 and 1 or 0`, int64(1), ""},
		{`return redis.sha1hex('')`, "da39a3ee5e6b4b0d3255bfef95601890afd80709", ""},
		{`return redis.replicate_commands()`, int64(1), ""},
		{`redis.set_repl(redis.REPL_ALL) redis.setresp(2) return 1`, int64(1), ""},
		{`return redis.LOG_WARNING`, int64(3), ""},
		{`error('boom')`, nil, `^ERR user_script:1: boom script: [0-9a-f]{40}, on @user_script:1\.$`},
		{"local a = 1\nlocal b = nil + 1", nil, `^ERR user_script:2: .* on @user_script:2\.$`},
		{"\nreturn redis.call('INCR', KEYS[1])", nil, `^ERR value is not an integer or out of range script: [0-9a-f]{40}, on @user_script:2\.$`},
		{`local ok, e = pcall(error, {err='E x'}) return e`, "E x", ""},
		{`local ok, e = pcall(function() return 7 end) return {tostring(ok), e}`, []any{"true", int64(7)}, ""},
		{`error({err='CUSTOM thing'})`, nil, `^CUSTOM thing`},
	}
	for _, tt := range tests {
		e := New(Options{})
		e.Do("SET", "k", "notint")
		res, err := e.Run(tt.src, []string{"k"}, nil)
		if tt.err != "" {
			var er *ErrorReply
			if !errors.As(err, &er) || !regexp.MustCompile(tt.err).MatchString(er.Msg) {
				t.Errorf("%q: err = %v, want match %q", tt.src, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.src, err)
			continue
		}
		if !equalReply(res.Reply, tt.want) {
			t.Errorf("%q: reply %#v, want %#v", tt.src, res.Reply, tt.want)
		}
	}
}

func TestRedisLog(t *testing.T) {
	e := New(Options{})
	if _, err := e.Run(`redis.log(redis.LOG_WARNING, 'hello', 42) return 1`, nil, nil); err != nil {
		t.Fatal(err)
	}
	if l := e.Log(); len(l) != 1 || l[0] != "WARNING hello 42" {
		t.Fatalf("log = %q", l)
	}
	_, err := e.Run(`redis.log(99, 'x')`, nil, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "ERR Invalid debug level.") {
		t.Fatalf("err = %v", err)
	}
}
