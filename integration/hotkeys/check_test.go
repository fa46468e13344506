package hotkeys

import (
	"bufio"
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
	admits   []int64 // the admissions' times, unix ns
	reserves []batchLine
	settles  []batchLine
	ended    bool // the worker wrote its end line (it closed)
	end      endLine
}

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
	f, err := os.Open(path)
	if err != nil {
		return workerLog{}, fmt.Errorf("open the log: %w", err)
	}
	defer f.Close()
	var w workerLog
	sc := bufio.NewScanner(f)
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
		want := map[string]int{"A": 1, "R": 3, "S": 2, "E": 7}
		if len(fields) == 0 || want[fields[0]] != len(nums) {
			return w, fmt.Errorf("%s:%d: a malformed line %q", path, line, sc.Text())
		}
		switch fields[0][0] {
		case lineAdmit:
			w.admits = append(w.admits, nums[0])
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

// bucketBound is the most a token bucket b (full at the start) debits in
// any span of length span: its capacity plus its refill over span.
func bucketBound(b ratelua.Bucket, span time.Duration) float64 {
	return float64(b.Capacity) + float64(b.RefillAmount)*span.Seconds()/b.RefillInterval.Seconds()
}

// windowFinding is the check of one bucket over one window length.
type windowFinding struct {
	bucket  int
	window  time.Duration
	most    int64   // the most admissions in any window of that length
	strict  float64 // the bucket's bound over the window itself
	widened float64 // its bound over the window widened by Lifetime and the slack
}

// String says how close the admissions came to each bound.
func (f windowFinding) String() string {
	return fmt.Sprintf("bucket %d, window %v: at most %d admitted; strict bound %.0f (%+.0f), widened bound %.0f (%+.0f)",
		f.bucket, f.window, f.most, f.strict, float64(f.most)-f.strict, f.widened, float64(f.most)-f.widened)
}

// checkWindows checks the sorted admissions against every bucket over
// windows of one second, of the bucket's fill time and of the whole run:
// in a window of length W, the admissions are at most what the bucket
// debits over W + lifetime + slack (the rule of the package doc, "Hot
// keys", with slack for the time between an admission and its logged
// time and for a reserve's round trip).
func checkWindows(admits []int64, buckets []ratelua.Bucket, lifetime, slack time.Duration) []windowFinding {
	var out []windowFinding
	run := time.Duration(0)
	if len(admits) > 0 {
		run = time.Duration(admits[len(admits)-1]-admits[0]) + 1
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
				bucket: i, window: w, most: maxInWindow(admits, w),
				strict:  bucketBound(b, w),
				widened: bucketBound(b, w+lifetime+slack),
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

// sortedAdmits is every admission of logs, sorted.
func sortedAdmits(logs []workerLog) []int64 {
	var all []int64
	for _, w := range logs {
		all = append(all, w.admits...)
	}
	slices.Sort(all)
	return all
}
