package main

import (
	"context"

	"github.com/redis/rueidis"
)

// The floor: the cheapest scripted decision there is, one counter with a
// TTL (INCR, PEXPIRE on first use). Every ratio in the report divides by
// it, measured just before and just after each contender.
var floorScript = rueidis.NewLuaScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`)

// The bare read-modify-write: GET then SET ... PX in one script. No
// stateful limiter that reads its state and writes it back can be cheaper.
var getSetScript = rueidis.NewLuaScript(`
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
redis.call('SET', KEYS[1], v + 1, 'PX', ARGV[1])
return v + 1`)

const floorTTL = "60000" // ms

// scriptRunner calls one rueidis.Lua script with the event key as KEYS[1].
type scriptRunner struct {
	client rueidis.Client
	script *rueidis.Lua
	prefix string
}

func (s scriptRunner) key(eventKey string) string { return s.prefix + eventKey }

func (s scriptRunner) Decide(ctx context.Context, eventKey string) error {
	return s.script.Exec(ctx, s.client, []string{s.key(eventKey)}, []string{floorTTL}).Error()
}

func (s scriptRunner) StateKeys(eventKey string) []string { return []string{s.key(eventKey)} }

func floorContender() contender {
	return contender{
		name: "floor: INCR + PEXPIRE (1st use)", group: groupFloor, cmds: scriptCmds,
		make: func(e *env) (runner, error) {
			return scriptRunner{client: e.rc, script: floorScript, prefix: "floor:"}, nil
		},
	}
}

func getSetContender() contender {
	return contender{
		name: "bare GET + SET PX", group: groupFloor, cmds: scriptCmds, limit: true,
		make: func(e *env) (runner, error) {
			return scriptRunner{client: e.rc, script: getSetScript, prefix: "getset:"}, nil
		},
	}
}
