package luatest

import "strconv"

func init() {
	register(&cmdSpec{name: "time", arity: 1, fn: cmdTime})
}

// cmdTime replies with the engine clock as [seconds, microseconds].
func cmdTime(e *Engine, args []string) any {
	us := e.now.UnixMicro()
	sec, micro := us/1_000_000, us%1_000_000
	if micro < 0 {
		sec--
		micro += 1_000_000
	}
	return []any{strconv.FormatInt(sec, 10), strconv.FormatInt(micro, 10)}
}
