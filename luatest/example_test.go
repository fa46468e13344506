package luatest_test

import (
	"fmt"
	"time"

	"github.com/ratelua/ratelua/luatest"
)

// A fixed-window counter of your own, tested without a server: the reply,
// the commands it sent, and the key expiring on the engine's clock.
func ExampleEngine_Run() {
	e := luatest.New(luatest.Options{Now: time.Unix(1_700_000_000, 0)})
	const counter = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`
	for range 2 {
		res, err := e.Run(counter, []string{"rl:{user1}"}, []string{"60000"})
		if err != nil {
			panic(err) // a *luatest.ErrorReply, or a *luatest.Violation of the strict rules
		}
		fmt.Println(res.Reply, res.Count("PEXPIRE"), e.PTTL("rl:{user1}"))
	}
	e.Advance(time.Minute + time.Millisecond) // past the TTL (at exactly 60 s the key still lives, as on a server)
	fmt.Println(e.Keys())
	// Output:
	// 1 1 60000
	// 2 0 60000
	// []
}

// The strict rules: a key the script builds itself instead of receiving in
// KEYS is refused, as a cluster would refuse it.
func ExampleViolation() {
	e := luatest.New(luatest.Options{})
	_, err := e.Run(`return redis.call('GET', 'other')`, []string{"mine"}, nil)
	fmt.Println(err)
	// Output:
	// luatest: strictness violation (undeclared-key): GET accesses key "other", which is not in KEYS ["mine"]
}
