package statsink

import "runtime"

// AddRuntimeStats adds the Go runtime's statistics under prefix (the
// reference's "ratelimit.go"), named as gostats names them, read
// at every flush: gauges alloc, sys, heapAlloc, heapSys, heapIdle,
// heapInuse, heapReleased, heapObjects, nextGC, lastGC, gcCPUPercent
// (the collector's share of the CPU in percent, truncated), numGoroutine; counters
// totalAlloc, mallocs, frees, pauseTotalNs, numGC.
func (s *Store) AddRuntimeStats(prefix string) {
	if s == nil {
		return
	}
	g := func(n string) *Gauge { return s.Gauge(prefix + "." + n) }
	c := func(n string) *Counter { return s.Counter(prefix + "." + n) }
	alloc, sys, heapAlloc, heapSys, heapIdle := g("alloc"), g("sys"), g("heapAlloc"), g("heapSys"), g("heapIdle")
	heapInuse, heapReleased, heapObjects := g("heapInuse"), g("heapReleased"), g("heapObjects")
	nextGC, lastGC, gcCPU, goroutines := g("nextGC"), g("lastGC"), g("gcCPUPercent"), g("numGoroutine")
	totalAlloc, mallocs, frees, pause, numGC := c("totalAlloc"), c("mallocs"), c("frees"), c("pauseTotalNs"), c("numGC")
	s.AddGenerator(func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		alloc.Set(m.Alloc)
		totalAlloc.Set(m.TotalAlloc)
		mallocs.Set(m.Mallocs)
		frees.Set(m.Frees)
		heapAlloc.Set(m.HeapAlloc)
		heapSys.Set(m.HeapSys)
		heapIdle.Set(m.HeapIdle)
		heapInuse.Set(m.HeapInuse)
		heapReleased.Set(m.HeapReleased)
		heapObjects.Set(m.HeapObjects)
		nextGC.Set(m.NextGC)
		lastGC.Set(m.LastGC)
		pause.Set(m.PauseTotalNs)
		numGC.Set(uint64(m.NumGC))
		gcCPU.Set(uint64(m.GCCPUFraction * 100))
		sys.Set(m.Sys)
		goroutines.Set(uint64(runtime.NumGoroutine()))
	})
}
