package luatest

import (
	"testing"
	"time"
)

func TestKeyCommands(t *testing.T) {
	runSteps(t, "del exists type", []step{
		{cmd: "SET a 1", want: Status("OK")},
		{cmd: "HSET b f v", want: int64(1)},
		{cmd: "ZADD c 1 m", want: int64(1)},
		{cmd: "EXISTS a b c d a", want: int64(4)},
		{cmd: "TYPE a", want: Status("string")},
		{cmd: "TYPE b", want: Status("hash")},
		{cmd: "TYPE c", want: Status("zset")},
		{cmd: "TYPE d", want: Status("none")},
		{cmd: "DEL a b d", want: int64(2)},
		{cmd: "UNLINK c c", want: int64(1)},
		{cmd: "EXISTS a b c", want: int64(0)},
	})
	runSteps(t, "expire family", []step{
		{cmd: "EXPIRE k 10", want: int64(0)},
		{cmd: "SET k v", want: Status("OK")},
		{cmd: "TTL k", want: int64(-1)},
		{cmd: "PTTL nokey", want: int64(-2)},
		{cmd: "TTL nokey", want: int64(-2)},
		{cmd: "EXPIRE k 10 XX", want: int64(0)},
		{cmd: "EXPIRE k 10 GT", want: int64(0)},
		{cmd: "EXPIRE k 10 NX", want: int64(1)},
		{cmd: "EXPIRE k 20 NX", want: int64(0)},
		{cmd: "EXPIRE k 5 GT", want: int64(0)},
		{cmd: "EXPIRE k 20 GT", want: int64(1)},
		{cmd: "EXPIRE k 30 LT", want: int64(0)},
		{cmd: "PEXPIRE k 1500 LT", want: int64(1)},
		{cmd: "PTTL k", want: int64(1500)},
		{cmd: "TTL k", want: int64(2)},
		{cmd: "PERSIST k", want: int64(1)},
		{cmd: "PERSIST k", want: int64(0)},
		{cmd: "EXPIRE k 5 LT", want: int64(1)},
		{cmd: "EXPIREAT k 1700000100", want: int64(1)},
		{cmd: "PTTL k", want: int64(100000)},
		{cmd: "PEXPIREAT k 1700000050000", want: int64(1)},
		{cmd: "TTL k", want: int64(50)},
		{cmd: "EXPIRE k 10 NX XX", err: "ERR NX and XX, GT or LT options at the same time are not compatible"},
		{cmd: "EXPIRE k 10 GT LT", err: "ERR GT and LT options at the same time are not compatible"},
		{cmd: "EXPIRE k 10 FOO", err: "ERR Unsupported option FOO"},
		{cmd: "EXPIRE k ten", err: notInt},
		{cmd: "EXPIRE k 9223372036854775807", err: "ERR invalid expire time in 'expire' command"},
		{cmd: "EXPIRE k 0", want: int64(1)},
		{cmd: "EXISTS k", want: int64(0)},
		{cmd: "SET k v", want: Status("OK")},
		{cmd: "PEXPIRE k -1", want: int64(1)},
		{cmd: "EXISTS k", want: int64(0)},
		{cmd: "SET k v", want: Status("OK")},
		{cmd: "EXPIREAT k 1", want: int64(1)},
		{cmd: "GET k", want: nil},
	})
	runSteps(t, "lazy expiry", []step{
		{cmd: "SET k v PX 100", want: Status("OK")},
		{cmd: "PTTL k", want: int64(0), advance: 100 * time.Millisecond},
		{cmd: "PTTL k", want: int64(-2), advance: time.Millisecond},
		{cmd: "INCR k", want: int64(1)},
		{cmd: "PTTL k", want: int64(-1)},
	})
}

func TestClockBackwards(t *testing.T) {
	e := New(Options{})
	mustDo(t, e, "SET", "k", "v", "EX", "10")
	e.Advance(5 * time.Second)
	e.SetNow(e.Now().Add(-20 * time.Second))
	if got := e.PTTL("k"); got != 25000 {
		t.Fatalf("PTTL after going back = %d", got)
	}
}
