package luatest

import (
	"testing"
	"time"
)

const (
	wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	notInt    = "ERR value is not an integer or out of range"
)

func TestStringCommands(t *testing.T) {
	runSteps(t, "get set", []step{
		{cmd: "GET k", want: nil},
		{cmd: "SET k v", want: Status("OK")},
		{cmd: "GET k", want: "v"},
		{cmd: "SET k w NX", want: nil},
		{cmd: "SET k w XX", want: Status("OK")},
		{cmd: "SET n w XX", want: nil},
		{cmd: "SET k x GET", want: "w"},
		{cmd: "SET k2 x NX GET", want: nil},
		{cmd: "SET k y NX GET", want: "x"},
		{cmd: "GET k", want: "x"},
		{cmd: "SET k v NX XX", err: "ERR syntax error"},
		{cmd: "SET k v EX 1 PX 1", err: "ERR syntax error"},
		{cmd: "SET k v EX 1 KEEPTTL", err: "ERR syntax error"},
		{cmd: "SET k v EX", err: "ERR syntax error"},
		{cmd: "SET k v FOO", err: "ERR syntax error"},
		{cmd: "SET k v EX 0", err: "ERR invalid expire time in 'set' command"},
		{cmd: "SET k v PX -5", err: "ERR invalid expire time in 'set' command"},
		{cmd: "SET k v EX 1.5", err: notInt},
		{cmd: "SET k v EX 9223372036854775", err: "ERR invalid expire time in 'set' command"},
		{cmd: "SET", err: "ERR wrong number of arguments for 'set' command"},
	})
	runSteps(t, "set ttl", []step{
		{cmd: "SET k v EX 10", want: Status("OK")},
		{cmd: "PTTL k", want: int64(10000)},
		{cmd: "SET k v2 KEEPTTL", want: Status("OK"), advance: time.Second},
		{cmd: "PTTL k", want: int64(9000)},
		{cmd: "SET k v3", want: Status("OK")},
		{cmd: "PTTL k", want: int64(-1)},
		{cmd: "SET k v PX 1500", want: Status("OK")},
		{cmd: "TTL k", want: int64(2)},
		{cmd: "TTL k", want: int64(1), advance: 600 * time.Millisecond},
		{cmd: "GET k", want: nil, advance: time.Second},
		{cmd: "SET k v EXAT 1700000100", want: Status("OK")},
		{cmd: "PTTL k", want: int64(100000 - 2600)},
		{cmd: "SET k v PXAT 1700000000000", want: Status("OK")},
		{cmd: "EXISTS k", want: int64(0)},
	})
	runSteps(t, "incr", []step{
		{cmd: "INCR c", want: int64(1)},
		{cmd: "INCRBY c 10", want: int64(11)},
		{cmd: "DECR c", want: int64(10)},
		{cmd: "DECRBY c 20", want: int64(-10)},
		{cmd: "GET c", want: "-10"},
		{cmd: "INCRBY c 1.5", err: notInt},
		{cmd: "INCRBY c +1", err: notInt},
		{cmd: "INCRBY c 01", err: notInt},
		{cmd: "SET c 9223372036854775807", want: Status("OK")},
		{cmd: "INCR c", err: "ERR increment or decrement would overflow"},
		{cmd: "DECRBY c -9223372036854775808", err: "ERR decrement would overflow"},
		{cmd: "SET s abc", want: Status("OK")},
		{cmd: "INCR s", err: notInt},
		{cmd: "SET c 5 EX 100", want: Status("OK")},
		{cmd: "INCR c", want: int64(6)},
		{cmd: "PTTL c", want: int64(100000)},
		{cmd: "HSET h f v", want: int64(1)},
		{cmd: "INCR h", err: wrongType},
		{cmd: "GET h", err: wrongType},
	})
	runSteps(t, "incrbyfloat", []step{
		{cmd: "INCRBYFLOAT f 10.5", want: "10.5"},
		{cmd: "INCRBYFLOAT f 0.1", want: "10.6"},
		{cmd: "INCRBYFLOAT f -5", want: "5.6"},
		{cmd: "SET g 0.1", want: Status("OK")},
		{cmd: "INCRBYFLOAT g 0.2", want: "0.3"},
		// long double arithmetic printed with %.17Lf, exactly like Redis 7.0
		{cmd: "INCRBYFLOAT g 5.0e3", want: "5000.29999999999999982"},
		{cmd: "SET i 3", want: Status("OK")},
		{cmd: "INCRBYFLOAT i 2", want: "5"},
		{cmd: "INCRBYFLOAT i x", err: "ERR value is not a valid float"},
		{cmd: "INCRBYFLOAT i inf", err: "ERR increment would produce NaN or Infinity"},
		{cmd: "SET s abc", want: Status("OK")},
		{cmd: "INCRBYFLOAT s 1", err: "ERR value is not a valid float"},
	})
}
