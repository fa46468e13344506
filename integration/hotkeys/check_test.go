package hotkeys

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
)

// workerLog is what one worker's log holds.
type workerLog struct {
	admits   []span // the admissions, each as the Allow that made it
	reserves []batchLine
	settles  []batchLine
	ended    bool // the worker wrote its end line (it closed)
	end      endLine
}

// span is an admission: the Allow that made it began at start and
// returned at end (unix ns), so the admission happened in [start, end]:
// a batch's Take, or the script's run for an ordinary call (the server's
// TIME reads the same clock).
type span struct{ start, end int64 }

// batchLine is a reserve or a settle of a batch.
type batchLine struct {
	at, units, latency int64
}

// endLine is a worker's totals, written after Close.
type endLine struct {
	decisions, admitted, calls, maxAllow, local int64
	// pacedDecisions and pacedCalls are those of the paced phase (the
	// decisions and calls that began in it).
	pacedDecisions, pacedCalls int64
}

// readLog reads the log at path.
func readLog(path string) (workerLog, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return workerLog{}, fmt.Errorf("read the log: %w", err)
	}
	// A line is whole once its newline is in the file: a log read while its
	// worker writes (TestHotKeysSIGKILL polls the victim's) may end in part
	// of a line, whose write is in flight (a reader can see a write's first
	// bytes before its last), which is left out, not parsed ("A <begin>
	// <end>" cut inside <end> read as an admission that ended before it
	// began).
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	var w workerLog
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		nums := make([]int64, 0, len(fields))
		for _, f := range fields[min(1, len(fields)):] {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return w, fmt.Errorf("%s:%d: %q: %w", path, line, sc.Text(), err)
			}
			nums = append(nums, n)
		}
		want := map[string]int{"A": 2, "R": 3, "S": 2, "E": 7}
		if len(fields) == 0 || want[fields[0]] != len(nums) {
			return w, fmt.Errorf("%s:%d: a malformed line %q", path, line, sc.Text())
		}
		switch fields[0][0] {
		case lineAdmit:
			if nums[1] < nums[0] {
				return w, fmt.Errorf("%s:%d: an admission that ended before it began: %q", path, line, sc.Text())
			}
			w.admits = append(w.admits, span{nums[0], nums[1]})
		case lineReserve:
			w.reserves = append(w.reserves, batchLine{nums[0], nums[1], nums[2]})
		case lineSettle:
			w.settles = append(w.settles, batchLine{at: nums[0], units: nums[1]})
		case lineEnd:
			w.ended = true
			w.end = endLine{nums[0], nums[1], nums[2], nums[3], nums[4], nums[5], nums[6]}
		}
	}
	if err := sc.Err(); err != nil {
		return w, fmt.Errorf("read %s: %w", path, err)
	}
	return w, nil
}

// maxInWindow is the most of the sorted times that fall in any window
// [t, t+w) (the windows that start at a time are enough: any other holds
// no more than the one starting at its first time).
func maxInWindow(times []int64, w time.Duration) int64 {
	best, j := 0, 0
	for i := range times {
		for j < len(times) && times[j] < times[i]+w.Nanoseconds() {
			j++
		}
		best = max(best, j-i)
	}
	return int64(best)
}

// admissions are the spans of every admission, their starts and their
// ends each sorted.
type admissions struct{ starts, ends []int64 }

// sortedAdmits is every admission of logs.
func sortedAdmits(logs []workerLog) admissions {
	var a admissions
	for _, w := range logs {
		for _, s := range w.admits {
			a.starts = append(a.starts, s.start)
			a.ends = append(a.ends, s.end)
		}
	}
	slices.Sort(a.starts)
	slices.Sort(a.ends)
	return a
}

// below is how many of the sorted times are below t.
func below(times []int64, t int64) int64 {
	n, _ := slices.BinarySearch(times, t)
	return int64(n)
}

// surelyInWindow is the most admissions that certainly happened in one
// window [x, x+w): for x each admission's start, the spans that ended in
// the window less every span begun before x that had not ended at x.
// Only spans that lie inside the window are left, so it is never more
// than the admissions the window truly held (and equal to the count of
// spans inside it when no Allow took w or longer).
func surelyInWindow(a admissions, w time.Duration) int64 {
	best := int64(0)
	for _, x := range a.starts {
		best = max(best, surelyBetween(a, x, x+w.Nanoseconds()))
	}
	return best
}

// bucketBound is the most a token bucket b (full at the start) debits in
// any span of length span: its capacity plus its refill over span.
func bucketBound(b ratelua.Bucket, span time.Duration) float64 {
	return float64(b.Capacity) + float64(b.RefillAmount)*span.Seconds()/b.RefillInterval.Seconds()
}

// windowFinding is the check of one limit over one window length.
type windowFinding struct {
	bucket int
	window time.Duration
	surely int64   // the most admissions certainly in one window of that length
	atEnd  int64   // the most in one window, each admission at its Allow's return
	bound  float64 // the bucket's bound over the window (and one unit)
}

// String says how close the admissions came to the bound.
func (f windowFinding) String() string {
	return fmt.Sprintf("bucket %d, window %v: %d admitted for sure (%d timed at return); bound %.0f (%+.0f)",
		f.bucket, f.window, f.surely, f.atEnd, f.bound, float64(f.surely)-f.bound)
}

// checkWindows checks the admissions against every bucket over windows
// of one second, of the bucket's fill time and of the whole run: in any
// window of length W, the admissions are at most what the bucket debits
// over W (issue 32: no window admits more than its limit), and one unit
// of the limiter's clock more (the script counts time in whole units:
// the refill between two calls is of the time between their floors).
func checkWindows(a admissions, buckets []ratelua.Bucket, unit time.Duration) []windowFinding {
	var out []windowFinding
	run := time.Duration(0)
	if len(a.ends) > 0 {
		run = time.Duration(a.ends[len(a.ends)-1]-a.starts[0]) + 1
	}
	for i, b := range buckets {
		fill := float64(b.RefillInterval) * float64(b.Capacity) / float64(b.RefillAmount)
		windows := []time.Duration{time.Second}
		if fill < float64(run) && time.Duration(fill) != time.Second {
			windows = append(windows, time.Duration(fill))
		}
		windows = append(windows, run)
		for _, w := range windows {
			out = append(out, windowFinding{
				bucket: i, window: w,
				surely: surelyInWindow(a, w),
				atEnd:  maxInWindow(a.ends, w),
				bound:  bucketBound(b, w+unit),
			})
		}
	}
	return out
}

// consumed reads the units bucket i of l's state of eventKey has taken
// (the server's state: capacity less its tokens), for a bucket that
// refills less than one unit over the test. The state of two or more
// buckets is "<unit> <limits...>|<time> <tokens_1 x interval_1> ...", in
// a hash's field s when reservations are open, else a string.
func consumed(ctx context.Context, client rueidis.Client, l *ratelua.Limiter, eventKey string, i int, b ratelua.Bucket) (int64, error) {
	key := l.Key(eventKey)
	kind, err := client.Do(ctx, client.B().Type().Key(key).Build()).ToString()
	if err != nil {
		return 0, fmt.Errorf("TYPE %s: %w", key, err)
	}
	var state string
	switch kind {
	case "hash":
		state, err = client.Do(ctx, client.B().Hget().Key(key).Field("s").Build()).ToString()
	case "string":
		state, err = client.Do(ctx, client.B().Get().Key(key).Build()).ToString()
	default:
		return 0, fmt.Errorf("the state %s is a %q, want a hash or a string", key, kind)
	}
	if err != nil {
		return 0, fmt.Errorf("read the state %s: %w", key, err)
	}
	head, body, ok := strings.Cut(state, "|")
	limits, values := strings.Fields(head), strings.Fields(body)
	if !ok || len(limits) < 1+3*(i+1) || len(values) < 2+i {
		return 0, fmt.Errorf("the state %s is %q: no bucket %d in it", key, state, i)
	}
	interval, err1 := strconv.ParseInt(limits[1+3*i+2], 10, 64)
	scaled, err2 := strconv.ParseInt(values[1+i], 10, 64)
	capacity, err3 := strconv.ParseInt(limits[1+3*i], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || interval <= 0 {
		return 0, fmt.Errorf("the state %s is %q: bucket %d unreadable", key, state, i)
	}
	if capacity != b.Capacity {
		return 0, fmt.Errorf("the state %s is %q: bucket %d has capacity %d, want %d", key, state, i, capacity, b.Capacity)
	}
	return capacity - scaled/interval, nil
}

// surelyBetween is how many admissions certainly happened in [lo, hi):
// the spans that ended in it less those begun before lo and not ended
// at lo (as surelyInWindow).
func surelyBetween(a admissions, lo, hi int64) int64 {
	ended := below(a.ends, hi) - below(a.ends, lo)
	open := below(a.starts, lo) - below(a.ends, lo)
	return ended - open
}

// checkSlidingWindows checks the admissions against every window of a
// sliding_window limiter: the script counts a window as its ceil(duration
// / resolution) buckets up to the current one, each bucket a resolution
// of the server's clock (its unit: whole units since the epoch), so every
// run of that many buckets holds at most Max admissions.
func checkSlidingWindows(a admissions, windows []ratelua.Window) []windowFinding {
	var out []windowFinding
	if len(a.starts) == 0 {
		return nil
	}
	for i, w := range windows {
		r := w.Resolution.Nanoseconds()
		n := (w.Duration.Nanoseconds() + r - 1) / r
		f := windowFinding{bucket: i, window: time.Duration(n * r), bound: float64(w.Max)}
		for b := a.starts[0] / r; b <= a.ends[len(a.ends)-1]/r; b++ {
			lo, hi := (b-n+1)*r, (b+1)*r
			f.surely = max(f.surely, surelyBetween(a, lo, hi))
			f.atEnd = max(f.atEnd, below(a.ends, hi)-below(a.ends, lo))
		}
		out = append(out, f)
	}
	return out
}

// checkLogs checks the admissions against every log of a zset_log
// limiter: an event at t counts in (t - window, t] of the server's clock
// in whole units, so any span shorter than the window by one unit holds
// at most Max admissions.
func checkLogs(a admissions, logs []ratelua.Log, unit time.Duration) []windowFinding {
	var out []windowFinding
	for i, l := range logs {
		w := l.Window - unit
		out = append(out, windowFinding{bucket: i, window: w, surely: surelyInWindow(a, w), atEnd: maxInWindow(a.ends, w), bound: float64(l.Max)})
	}
	return out
}
