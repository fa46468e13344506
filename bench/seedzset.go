package main

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// seedZSetScript is "the seeds' ZSET log", re-implemented from seed 000
// (../shared/seeds/000_*.txt, "Sliding Window Log"); seeds 001, 003 and
// 004 describe the same sorted set (score: the request time, member: a
// unique id). Followed: ZREMRANGEBYSCORE of everything up to now - window,
// ZCARD, and if under the limit ZADD now with the member "<now>-<random>"
// and EXPIRE; else EXPIRE and ZRANGE 0 0 WITHSCORES for the retry time.
// (Seed 001 pipelines the same commands without a script and always adds;
// seed 000's script, which adds only allowed events, is what is run.)
var seedZSetScript = rueidis.NewLuaScript(`
local key = KEYS[1]
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', key, 0, now - window)
local count = redis.call('ZCARD', key)
if count < limit then
  redis.call('ZADD', key, now, now .. '-' .. math.random(1000000))
  redis.call('EXPIRE', key, ttl)
  return { 1, limit - count - 1, limit }
end
redis.call('EXPIRE', key, ttl)
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
local retry = 0
if #oldest > 0 then
  retry = math.max(0, tonumber(oldest[2]) + window - now)
end
return { 0, 0, limit, math.ceil(retry / 1000) }`)

// seedZSetRunner: 100 per minute, TTL 60 s, like ratelua's zset_log max 100.
type seedZSetRunner struct {
	client rueidis.Client
	now    func() time.Time
}

// The seed names the key "rate_limit:{clientId}".
func (s seedZSetRunner) StateKeys(eventKey string) []string {
	return []string{"rate_limit:{" + eventKey + "}"}
}

func (s seedZSetRunner) Decide(ctx context.Context, eventKey string) error {
	return seedZSetScript.Exec(ctx, s.client, s.StateKeys(eventKey), []string{
		"60000", "100", strconv.FormatInt(s.now().UnixMilli(), 10), "60",
	}).Error()
}

func seedZSetContender() contender {
	return contender{
		name: "baseline: the seeds' ZSET log (seed 000)", group: groupBaseline, cmds: scriptCmds, job: jobZSetLog100, short: "seeds' ZSET log",
		make: func(e *env) (runner, error) { return seedZSetRunner{client: e.rc, now: e.now}, nil },
	}
}
