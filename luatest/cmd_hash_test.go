package luatest

import "testing"

func TestHashCommands(t *testing.T) {
	runSteps(t, "basic", []step{
		{cmd: "HSET h b 2 a 1", want: int64(2)},
		{cmd: "HSET h a 10 c 3", want: int64(1)},
		{cmd: "HGET h a", want: "10"},
		{cmd: "HGET h zz", want: nil},
		{cmd: "HGET nokey a", want: nil},
		{cmd: "HMGET h a zz c", want: arr("10", nil, "3")},
		{cmd: "HMGET nokey a", want: arr(nil)},
		{cmd: "HGETALL h", want: arr("b", "2", "a", "10", "c", "3")},
		{cmd: "HGETALL nokey", want: arr()},
		{cmd: "HLEN h", want: int64(3)},
		{cmd: "HEXISTS h a", want: int64(1)},
		{cmd: "HEXISTS h zz", want: int64(0)},
		{cmd: "HMSET h d 4", want: Status("OK")},
		{cmd: "HDEL h a zz", want: int64(1)},
		{cmd: "HDEL h b c d", want: int64(3)},
		{cmd: "EXISTS h", want: int64(0)},
		{cmd: "HSET h a", err: "ERR wrong number of arguments for 'hset' command"},
		{cmd: "HSET h a 1 b", err: "ERR wrong number of arguments for 'hset' command"},
		{cmd: "HMSET h a 1 b", err: "ERR wrong number of arguments for 'hmset' command"},
		{cmd: "SET s v", want: Status("OK")},
		{cmd: "HGET s a", err: wrongType},
		{cmd: "HSET s a 1", err: wrongType},
		{cmd: "HGETALL s", err: wrongType},
	})
	runSteps(t, "incr", []step{
		{cmd: "HINCRBY h n 5", want: int64(5)},
		{cmd: "HINCRBY h n -7", want: int64(-2)},
		{cmd: "HINCRBY h n x", err: notInt},
		{cmd: "HSET h s abc", want: int64(1)},
		{cmd: "HINCRBY h s 1", err: "ERR hash value is not an integer"},
		{cmd: "HSET h big 9223372036854775807", want: int64(1)},
		{cmd: "HINCRBY h big 1", err: "ERR increment or decrement would overflow"},
		{cmd: "HINCRBYFLOAT h f 1.5", want: "1.5"},
		{cmd: "HINCRBYFLOAT h f 0.1", want: "1.6"},
		{cmd: "HINCRBYFLOAT h n 0.5", want: "-1.5"},
		{cmd: "HINCRBYFLOAT h s 1", err: "ERR hash value is not a float"},
		{cmd: "HINCRBYFLOAT h f x", err: "ERR value is not a valid float"},
		{cmd: "HINCRBYFLOAT h f inf", err: "ERR value is NaN or Infinity"},
		{cmd: "HGET h f", want: "1.6"},
	})
}
