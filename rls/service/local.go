package service

import (
	"time"

	"github.com/ratelua/ratelua"
)

// window is the index of the window of a reference job at now: the
// process's Unix time divided by the unit, as the script's single bucket.
func window(j *job, now time.Time) int64 {
	return now.Unix() / int64(j.d.span/time.Second)
}

// answerLocally answers a reference job from the deny cache, if it knows
// the descriptor over the job's limit in this window; otherwise the job
// takes the hits the cache kept for the descriptor, to send them.
func (s *Service) answerLocally(j *job, now time.Time) bool {
	key, w := j.d.limiter.Key(j.key), window(j, now)
	before, ok := s.deny.answer(key, w, uint64(j.limit), j.n)
	if !ok {
		j.kept = s.deny.take(key, w)
		return false
	}
	j.local = true
	after := min(before+j.n, uint64(j.d.top))
	j.out = ratelua.Result{Remaining: j.d.top - int64(after)}
	return true
}

// remember tells the deny cache what the server answered a reference job:
// the count after it, when over the job's limit; hits kept and not sent
// go back.
func (s *Service) remember(j *job, now time.Time) {
	if !j.d.reference || j.local {
		return
	}
	key, w := j.d.limiter.Key(j.key), window(j, now)
	if j.err != nil || j.open || j.fallback {
		if j.kept > 0 {
			s.deny.giveBack(key, w, j.kept)
		}
		return
	}
	if _, after, limit := j.counts(s.opts.Fallback); after > limit {
		s.deny.put(key, w, after)
	}
}
