package luatest

import "testing"

func TestZsetCommands(t *testing.T) {
	runSteps(t, "zadd", []step{
		{cmd: "ZADD z 1 a 2 b 3 c", want: int64(3)},
		{cmd: "ZADD z 1 a 5 b", want: int64(0)},
		{cmd: "ZADD z CH 1 a 6 b 7 d", want: int64(2)},
		{cmd: "ZADD z NX 100 a 4 e", want: int64(1)},
		{cmd: "ZADD z XX 1.5 a 9 f", want: int64(0)},
		{cmd: "ZSCORE z a", want: "1.5"},
		{cmd: "ZSCORE z f", want: nil},
		{cmd: "ZADD z GT CH 1 a 2 a", want: int64(1)},
		{cmd: "ZADD z LT CH 10 a 0 b", want: int64(1)},
		{cmd: "ZSCORE z b", want: "0"},
		{cmd: "ZADD z INCR 2.5 a", want: "4.5"},
		{cmd: "ZADD z INCR NX 1 a", want: nil},
		{cmd: "ZADD z INCR GT -1 a", want: nil},
		{cmd: "ZADD nokey XX 1 a", want: int64(0)},
		{cmd: "EXISTS nokey", want: int64(0)},
		{cmd: "ZADD z NX XX 1 a", err: "ERR XX and NX options at the same time are not compatible"},
		{cmd: "ZADD z GT LT 1 a", err: "ERR GT, LT, and/or NX options at the same time are not compatible"},
		{cmd: "ZADD z NX GT 1 a", err: "ERR GT, LT, and/or NX options at the same time are not compatible"},
		{cmd: "ZADD z INCR 1 a 2 b", err: "ERR INCR option supports a single increment-element pair"},
		{cmd: "ZADD z 1 a 2", err: "ERR syntax error"},
		{cmd: "ZADD z x a", err: "ERR value is not a valid float"},
		{cmd: "ZADD z nan a", err: "ERR value is not a valid float"},
		{cmd: "ZADD z inf x -inf y", want: int64(2)},
		{cmd: "ZSCORE z x", want: "inf"},
		{cmd: "ZSCORE z y", want: "-inf"},
		{cmd: "ZADD z INCR -inf x", err: "ERR resulting score is not a number (NaN)"},
		{cmd: "ZCARD z", want: int64(7)},
		{cmd: "ZINCRBY z -1 n", want: "-1"},
		{cmd: "ZINCRBY z -2.5 n", want: "-3.5"},
		{cmd: "ZINCRBY z x n", err: "ERR value is not a valid float"},
		{cmd: "ZINCRBY z -inf x", err: "ERR resulting score is not a number (NaN)"},
		{cmd: "ZREM z n", want: int64(1)},
		{cmd: "ZINCRBY fresh 7 m", want: "7"},
		{cmd: "ZSCORE fresh m", want: "7"},
		{cmd: "ZCARD nokey", want: int64(0)},
		{cmd: "ZADD q 0.1 m", want: int64(1)},
		{cmd: "ZSCORE q m", want: "0.10000000000000001"},
		{cmd: "SET s v", want: Status("OK")},
		{cmd: "ZADD s 1 a", err: wrongType},
		{cmd: "ZSCORE s a", err: wrongType},
		{cmd: "ZINCRBY s 1 a", err: wrongType},
		{cmd: "ZMSCORE s a", err: wrongType},
	})
	base := []step{
		{cmd: "ZADD z 1 a 2 b 3 c 4 d 5 e", want: int64(5)},
	}
	ranges := []step{
		{cmd: "ZRANGE z 0 -1", want: arr("a", "b", "c", "d", "e")},
		{cmd: "ZRANGE z 1 2 WITHSCORES", want: arr("b", "2", "c", "3")},
		{cmd: "ZRANGE z -2 100", want: arr("d", "e")},
		{cmd: "ZRANGE z -100 0", want: arr("a")},
		{cmd: "ZRANGE z 3 1", want: arr()},
		{cmd: "ZRANGE z 5 10", want: arr()},
		{cmd: "ZRANGE z 0 1 REV", want: arr("e", "d")},
		{cmd: "ZRANGE nokey 0 -1", want: arr()},
		{cmd: "ZRANGE z 2 4 BYSCORE", want: arr("b", "c", "d")},
		{cmd: "ZRANGE z (2 (4 BYSCORE", want: arr("c")},
		{cmd: "ZRANGE z -inf +inf BYSCORE LIMIT 1 2", want: arr("b", "c")},
		{cmd: "ZRANGE z -inf +inf BYSCORE LIMIT 3 -1 WITHSCORES", want: arr("d", "4", "e", "5")},
		{cmd: "ZRANGE z -inf +inf BYSCORE LIMIT -1 2", want: arr()},
		{cmd: "ZRANGE z -inf +inf BYSCORE LIMIT 0 0", want: arr()},
		{cmd: "ZRANGE z +inf -inf BYSCORE REV LIMIT 0 2", want: arr("e", "d")},
		{cmd: "ZRANGE z (5 3 REV BYSCORE WITHSCORES", want: arr("d", "4", "c", "3")},
		{cmd: "ZRANGE z 0 1 LIMIT 0 1", err: "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"},
		{cmd: "ZRANGE z 0 1 REV REV", err: "ERR syntax error"},
		{cmd: "ZRANGE z 0 1 FOO", err: "ERR syntax error"},
		{cmd: "ZRANGE z a 1", err: notInt},
		{cmd: "ZRANGE z a 1 BYSCORE", err: "ERR min or max is not a float"},
		{cmd: "ZRANGE z 0 1 BYSCORE LIMIT x 1", err: notInt},
		{cmd: "ZRANGEBYSCORE z 2 (4", want: arr("b", "c")},
		{cmd: "ZRANGEBYSCORE z -inf 2 WITHSCORES", want: arr("a", "1", "b", "2")},
		{cmd: "ZRANGEBYSCORE z -inf +inf LIMIT 4 10", want: arr("e")},
		{cmd: "ZRANGEBYSCORE z 1 2 REV", err: "ERR syntax error"},
		{cmd: "ZRANGEBYSCORE z x 2", err: "ERR min or max is not a float"},
		{cmd: "ZREVRANGEBYSCORE z 4 2", want: arr("d", "c", "b")},
		{cmd: "ZREVRANGEBYSCORE z +inf (4 WITHSCORES", want: arr("e", "5")},
		{cmd: "ZREVRANGEBYSCORE z +inf -inf LIMIT 1 1", want: arr("d")},
		{cmd: "ZCOUNT z (1 3", want: int64(2)},
		{cmd: "ZCOUNT z -inf +inf", want: int64(5)},
		{cmd: "ZCOUNT z x 1", err: "ERR min or max is not a float"},
		{cmd: "ZCOUNT nokey 0 1", want: int64(0)},
		{cmd: "ZMSCORE z a x e", want: arr("1", nil, "5")},
		{cmd: "ZMSCORE nokey a b", want: arr(nil, nil)},
	}
	runSteps(t, "ranges", append(base, ranges...))
	runSteps(t, "removal", append(append([]step{}, base...), []step{
		{cmd: "ZREM z a zz", want: int64(1)},
		{cmd: "ZREMRANGEBYSCORE z (2 3", want: int64(1)},
		{cmd: "ZRANGE z 0 -1", want: arr("b", "d", "e")},
		{cmd: "ZREMRANGEBYSCORE z x 3", err: "ERR min or max is not a float"},
		{cmd: "ZREMRANGEBYRANK z -1 -1", want: int64(1)},
		{cmd: "ZREMRANGEBYRANK z 5 10", want: int64(0)},
		{cmd: "ZREMRANGEBYRANK z 0 100", want: int64(2)},
		{cmd: "EXISTS z", want: int64(0)},
		{cmd: "ZADD z 1 a", want: int64(1)},
		{cmd: "ZREM z a", want: int64(1)},
		{cmd: "EXISTS z", want: int64(0)},
		{cmd: "ZREMRANGEBYRANK z a 1", err: notInt},
	}...))
}

func TestZsetValkeyScores(t *testing.T) {
	e := New(Options{Dialect: Valkey80})
	mustDo(t, e, "ZADD", "z", "0.1", "m", "1e20", "n")
	if got := mustDo(t, e, "ZSCORE", "z", "m"); got != "0.1" {
		t.Fatalf("ZSCORE = %v", got)
	}
}
