package main

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// The minimum rows: per job, a script that sends only the commands a
// limiter doing that job cannot avoid, with no parsing of limits and no
// arithmetic beyond a counter, in the same run as the rows it explains.
// A ratelua row's "/ minimum" is its cost over its minimum's: what the
// script spends beyond the commands.

// getSetScript, the minimum of a one-key state held as one string (the
// token bucket, ar1): GET then SET ... PX. No limiter that reads its
// state and writes it back can be cheaper.
var getSetScript = rueidis.NewLuaScript(`
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
redis.call('SET', KEYS[1], v + 1, 'PX', ARGV[1])
return v + 1`)

// contractScript, the minimum of a one-key string state under ratelua's
// calling contract: GET then SET ... PX as getSetScript, but called with a
// one-limit ratelua call's seven arguments (ARGV) and replying five
// integers, as every ratelua script does; with TIME first when ARGV[3] is
// empty (the server clock). The arguments are copied into a table and the
// reply converted by the server on every call: what a ratelua row costs
// beyond it is the script's own work (checking the arguments, the
// arithmetic, the state's text).
var contractScript = rueidis.NewLuaScript(`
if ARGV[3] == '' then redis.call('TIME') end
local v = tonumber(redis.call('GET', KEYS[1]) or '0') + 1
redis.call('SET', KEYS[1], v, 'PX', ARGV[6])
return {1, v, 0, 0, 1}`)

// contractRunner runs contractScript with ar1's one-limit arguments
// (100 per minute, decay 2), on the bench clock or on the server's.
type contractRunner struct {
	client      rueidis.Client
	now         func() time.Time
	serverClock bool
}

func (c contractRunner) StateKeys(eventKey string) []string {
	return []string{"mincontract:" + eventKey}
}

func (c contractRunner) Decide(ctx context.Context, eventKey string) error {
	now := ""
	if !c.serverClock {
		now = strconv.FormatInt(c.now().UnixMilli(), 10)
	}
	return contractScript.Exec(ctx, c.client, c.StateKeys(eventKey), []string{
		"1", "ms", now, "0", "100", "2000", "60000",
	}).Error()
}

// zsetMinimumScript, the minimum of an exact log in a sorted set: count
// the events of the window (ZCOUNT), add one if under max (ZADD), and set
// the TTL (PEXPIRE). It never trims: entries older than the window stay
// until the key expires (under the main load a key holds a few dozen), so
// it is cheaper than any log that bounds its memory. ARGV: now (ms), the
// window (ms), max.
var zsetMinimumScript = rueidis.NewLuaScript(`
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local n = redis.call('ZCOUNT', KEYS[1], '(' .. (now - window), '+inf')
if n < limit then
  redis.call('ZADD', KEYS[1], now, now .. ':' .. n)
end
redis.call('PEXPIRE', KEYS[1], window)
return n`)

// hashMinimumScript, the minimum of a state kept in a hash whose decision
// reads and writes one field (sliding_window reads two short fields and
// writes one): HMGET the field, HSET it, PEXPIRE the key.
var hashMinimumScript = rueidis.NewLuaScript(`
local v = tonumber(redis.call('HMGET', KEYS[1], 'm')[1] or '0')
redis.call('HSET', KEYS[1], 'm', v + 1)
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return v + 1`)

// zsetMinimumRunner runs zsetMinimumScript: 100 per minute, like the
// zset_log row.
type zsetMinimumRunner struct {
	client rueidis.Client
	now    func() time.Time
}

func (z zsetMinimumRunner) StateKeys(eventKey string) []string {
	return []string{"minzset:" + eventKey}
}

func (z zsetMinimumRunner) Decide(ctx context.Context, eventKey string) error {
	return zsetMinimumScript.Exec(ctx, z.client, z.StateKeys(eventKey), []string{
		strconv.FormatInt(z.now().UnixMilli(), 10), "60000", "100",
	}).Error()
}

func minimumContenders() []contender {
	return []contender{
		{
			name: minGetSet, group: groupMinimum, cmds: scriptCmds,
			make: func(e *env) (runner, error) {
				return scriptRunner{client: e.rc, script: getSetScript, prefix: "getset:"}, nil
			},
		},
		{
			name: minContract, group: groupMinimum, cmds: scriptCmds,
			make: func(e *env) (runner, error) { return contractRunner{client: e.rc, now: e.now}, nil },
		},
		{
			name: minContract + ", server clock (TIME)", group: groupMinimum, cmds: scriptCmds,
			make: func(e *env) (runner, error) { return contractRunner{client: e.rc, now: e.now, serverClock: true}, nil },
		},
		{
			name: minZSet, group: groupMinimum, cmds: scriptCmds,
			make: func(e *env) (runner, error) { return zsetMinimumRunner{client: e.rc, now: e.now}, nil },
		},
		{
			name: minHash, group: groupMinimum, cmds: scriptCmds,
			make: func(e *env) (runner, error) {
				return scriptRunner{client: e.rc, script: hashMinimumScript, prefix: "minhash:"}, nil
			},
		},
	}
}
