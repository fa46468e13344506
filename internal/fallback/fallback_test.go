package fallback

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ratelua/ratelua/internal/model"
)

// TestFallbackEpisodes drives the fallback's state on its own clock: it
// decides only once calls have gone unanswered for After, only for slots
// that failed, probes once per After, and an answer on a failed slot ends
// it; a blip followed by answers is forgotten.
func TestFallbackEpisodes(t *testing.T) {
	f := New(2*time.Second, 0, nil)
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	if local, probe := f.Route(1, at(0)); local || probe {
		t.Fatal("routed before any failure")
	}
	if use, entered, _ := f.Fail(1, false, at(0), at(100)); use || entered {
		t.Fatal("fell back before After")
	}
	if use, _, _ := f.Fail(2, false, at(1000), at(1900)); use {
		t.Fatal("fell back before After")
	}
	use, entered, unanswered := f.Fail(1, false, at(2000), at(2100))
	if !use || !entered || unanswered != 2100*time.Millisecond {
		t.Fatalf("after 2.1 s unanswered: use %v entered %v after %v", use, entered, unanswered)
	}
	if local, _ := f.Route(3, at(2200)); local {
		t.Error("a slot that never failed is answered locally")
	}
	if local, probe := f.Route(1, at(2200)); !local || probe {
		t.Error("a down slot asks the server before the probe is due")
	}
	if local, probe := f.Route(2, at(4100)); local || !probe {
		t.Fatal("no probe after After")
	}
	if local, probe := f.Route(1, at(4200)); !local || probe {
		t.Error("a second probe while one is in flight")
	}
	if use, entered, _ := f.Fail(2, true, at(4100), at(4300)); !use || entered {
		t.Error("a failed probe must keep the fallback")
	}
	if left, _ := f.Answer(3, false, at(4400)); left {
		t.Error("an answer on a slot that never failed ends the fallback")
	}
	if local, probe := f.Route(1, at(6300)); local || !probe {
		t.Fatal("no probe After after the failed one")
	}
	left, used := f.Answer(1, true, at(6400))
	if !left || used != 4300*time.Millisecond {
		t.Fatalf("answer on a down slot: left %v after %v", left, used)
	}
	if local, probe := f.Route(1, at(6500)); local || probe {
		t.Error("still falling back after the server answered")
	}
	// A blip, then answers: forgotten After later.
	f.Fail(5, false, at(10000), at(10100))
	f.Answer(6, false, at(10200))
	if use, entered, _ := f.Fail(7, false, at(13000), at(13100)); use || entered {
		t.Error("a blip 3 s ago, answered since, started the fallback")
	}
}

// blockingModel is a model whose first decision waits until released.
type blockingModel struct {
	model.ZSetLog
	entered, release chan struct{}
}

func (m *blockingModel) Do(c model.Call) model.Reply {
	close(m.entered)
	<-m.release
	return m.ZSetLog.Do(c)
}

// TestFallbackDecidesKeysConcurrently: while one key's decision is in
// progress, other keys are decided (issue 20, row 9: every decision held
// one process-wide mutex).
func TestFallbackDecidesKeysConcurrently(t *testing.T) {
	limits := []model.ZSetLogLimit{{Max: 10, Window: 1000}}
	entered, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	first := true
	f := New(0, 10000, func() model.Model {
		mu.Lock()
		defer mu.Unlock()
		if first {
			first = false
			return &blockingModel{ZSetLog: model.ZSetLog{Limits: limits}, entered: entered, release: release}
		}
		return &model.ZSetLog{Limits: limits}
	})
	call := model.Call{Count: 1, Now: 1, Unit: "ms"}
	go f.Decide("held", call)
	<-entered
	defer close(release)
	done := make(chan struct{}, 8)
	for i := range 8 {
		go func() {
			f.Decide(fmt.Sprint("other-", i), call)
			done <- struct{}{}
		}()
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no other key was decided in 10 s while one key's decision was in progress")
	}
}

// TestSketchNeverUnderCounts: many more keys let go than a sketch has
// cells, with random usages: every key whose usage is not over reads at
// least that usage (each field), and a key never let go reads nothing
// while some of its cells are empty.
func TestSketchNeverUnderCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	s := sketch{seed: maphash.MakeSeed(), width: 64}
	let := map[string]model.Usage{}
	var now int64
	for i := range 2000 {
		now += r.Int64N(10)
		u := model.Usage{At: now - r.Int64N(50), Events: 1 + r.Int64N(100)}
		u.Until = u.At + 1 + r.Int64N(2000)
		key := fmt.Sprint("k", i)
		s.add(key, u)
		let[key] = u
	}
	live, over := 0, 0
	for key, u := range let {
		got, ok := s.read(key, now)
		if u.Until <= now {
			over++
			continue
		}
		live++
		if !ok || got.At < u.At || got.Events < u.Events || got.Until < u.Until {
			t.Fatalf("%s let go with %+v reads %+v, %v at %d", key, u, got, ok, now)
		}
	}
	if live < 100 || over < 100 {
		t.Errorf("%d keys live and %d over: the case tests too little", live, over)
	}
	empty := sketch{seed: maphash.MakeSeed(), width: 64}
	empty.add("one", model.Usage{At: 1, Events: 5, Until: 100})
	if u, ok := empty.read("other", 2); ok && empty.cellsOf("one") != empty.cellsOf("other") {
		t.Errorf("a key never let go, in a sketch of one other key, read %+v", u)
	}
}

// TestFallbackResetForgetsALetGoKey: a key let go into the sketch with its
// share used starts afresh after a Reset, and stays bounded.
func TestFallbackResetForgetsALetGoKey(t *testing.T) {
	f := New(0, 1, func() model.Model { return &model.LogBuckets{Limits: []model.ZSetLogLimit{{Max: 2, Window: 1000}}} })
	call := model.Call{Count: 1, Now: 10, Unit: "ms"}
	admitted := func(key string) (n int) {
		for range 4 {
			if r := f.Decide(key, call); r[0] == 1 {
				n++
			}
		}
		return n
	}
	if n := admitted("a"); n != 2 {
		t.Fatalf("a: %d admitted, want 2", n)
	}
	admitted("b") // lets a go
	if n := admitted("a"); n != 0 {
		t.Errorf("a let go and back: %d admitted, want 0", n)
	}
	admitted("b")
	f.Forget("a")
	if n := admitted("a"); n != 2 {
		t.Errorf("a after a Reset: %d admitted, want 2", n)
	}
	if f.Len() != 1 {
		t.Errorf("%d keys held, want 1", f.Len())
	}
}

// TestBoundsUnderConcurrency: many goroutines decide, forget and take the
// recorded events of more keys than the bound at once (run with -race):
// the fallback never holds more models than its bound, and what it
// recorded is taken once.
func TestBoundsUnderConcurrency(t *testing.T) {
	f := New(0, 6, func() model.Model { return &model.ZSetLog{Limits: []model.ZSetLogLimit{{Max: 3, Window: 1000}}} })
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := int64(0)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 400 {
				key := fmt.Sprint("k", (w+i)%13)
				if i%50 == 0 {
					f.Forget(key)
				}
				f.Decide(key, model.Call{Count: 1, Now: 10, Unit: "ms"})
				if i%100 == 0 {
					for _, r := range f.TakeRecorded() {
						mu.Lock()
						taken += r.N
						mu.Unlock()
					}
				}
				if n := f.Len(); n > 6 {
					t.Errorf("%d keys held, bound 6", n)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, r := range f.TakeRecorded() {
		taken += r.N
	}
	if taken == 0 {
		t.Error("nothing recorded: the run tests nothing")
	}
	if again := f.TakeRecorded(); len(again) != 0 {
		t.Errorf("recorded events taken twice: %+v", again)
	}
}

// TestScaleMaxRoundsTheWrittenShareDown: the share as written times the
// maximum, rounded down exactly (the float product of 0.7 and 90 is just
// below 63).
func TestScaleMaxRoundsTheWrittenShareDown(t *testing.T) {
	for _, c := range []struct {
		max   int64
		share float64
		want  int64
	}{{90, 0.7, 63}, {100, 0.29, 29}, {3, 0.7, 2}, {10, 0.3, 3}, {1, 0.999, 0}, {1e9, 1, 1e9}} {
		if got := ScaleMax(c.max, c.share); got != c.want {
			t.Errorf("ScaleMax(%d, %v) = %d, want %d", c.max, c.share, got, c.want)
		}
	}
}
