package main

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// seedBucketScript is "the seeds' token bucket", re-implemented from seed
// 000 (../shared/seeds/000_*.txt, "Token Bucket": the hash option
// recommended there), which seeds 003 and 004 describe the same way: one
// hash per client with the tokens (a float) and the last refill time in
// milliseconds; HMGET both, refill elapsed seconds x rate up to the bucket
// size, take one token if at least one is left, and in either case HMSET
// both fields and EXPIRE the key; a denied reply carries the seconds until
// one token. A missing hash is a full bucket.
var seedBucketScript = rueidis.NewLuaScript(`
local key = KEYS[1]
local size = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local state = redis.call('HMGET', key, 'tokens', 'last_refill')
local tokens = tonumber(state[1]) or size
local last = tonumber(state[2]) or now
tokens = math.min(size, tokens + (now - last) / 1000 * rate)
if tokens >= 1 then
  tokens = tokens - 1
  redis.call('HMSET', key, 'tokens', tokens, 'last_refill', now)
  redis.call('EXPIRE', key, ttl)
  return { 1, math.floor(tokens), size }
end
redis.call('HMSET', key, 'tokens', tokens, 'last_refill', now)
redis.call('EXPIRE', key, ttl)
return { 0, math.floor(tokens), size, math.ceil((1 - tokens) / rate) }`)

// seedBucketRunner: a bucket of 100 refilled at 100 per minute, TTL the
// time to refill it (60 s), the same limit as ratelua's 1-limit bucket.
type seedBucketRunner struct {
	client rueidis.Client
	now    func() time.Time
}

// The seed names the key "rate_limit:bucket:{clientId}".
func (s seedBucketRunner) StateKeys(eventKey string) []string {
	return []string{"rate_limit:bucket:{" + eventKey + "}"}
}

func (s seedBucketRunner) Decide(ctx context.Context, eventKey string) error {
	return seedBucketScript.Exec(ctx, s.client, s.StateKeys(eventKey), []string{
		"100", strconv.FormatFloat(100.0/60, 'g', -1, 64), strconv.FormatInt(s.now().UnixMilli(), 10), "60",
	}).Error()
}

func seedBucketContender() contender {
	return contender{
		name: "baseline: the seeds' token bucket (seed 000)", group: groupBaseline, cmds: scriptCmds, job: jobTokenBucket1, short: "seeds' token bucket",
		make: func(e *env) (runner, error) { return seedBucketRunner{client: e.rc, now: e.now}, nil },
	}
}
