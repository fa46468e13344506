package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

// info returns the fields of an INFO section.
func info(ctx context.Context, c rueidis.Client, section string) (map[string]string, error) {
	s, err := c.Do(ctx, c.B().Info().Section(section).Build()).ToString()
	if err != nil {
		return nil, err
	}
	return parseInfo(s), nil
}

// parseInfo parses INFO's "field:value" lines.
func parseInfo(s string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok {
			out[k] = v
		}
	}
	return out
}

// resetStats is CONFIG RESETSTAT.
func resetStats(ctx context.Context, c rueidis.Client) error {
	return c.Do(ctx, c.B().ConfigResetstat().Build()).Error()
}

// cmdCost sums calls and usec of the named commands in INFO commandstats
// and returns usec per call (computed from the totals, not the rounded
// usec_per_call field) and the number of calls.
func cmdCost(ctx context.Context, c rueidis.Client, cmds []string) (float64, int64, error) {
	fields, err := info(ctx, c, "commandstats")
	if err != nil {
		return 0, 0, err
	}
	var calls, usec int64
	for _, cmd := range cmds {
		v, ok := fields["cmdstat_"+cmd]
		if !ok {
			continue
		}
		for _, kv := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(val, 10, 64)
			switch k {
			case "calls":
				calls += n
			case "usec":
				usec += n
			}
		}
	}
	if calls == 0 {
		return 0, 0, fmt.Errorf("no calls of %v in commandstats", cmds)
	}
	return float64(usec) / float64(calls), calls, nil
}

// usedMemory is INFO memory's used_memory less mem_clients_normal (the
// clients' query and output buffers, which the load leaves at sizes that
// vary from one measurement to the next and are no key's state).
func usedMemory(ctx context.Context, c rueidis.Client) (int64, error) {
	f, err := info(ctx, c, "memory")
	if err != nil {
		return 0, err
	}
	return usedMemoryOf(f)
}

// usedMemoryOf is usedMemory from INFO memory's fields.
func usedMemoryOf(f map[string]string) (int64, error) {
	used, err := strconv.ParseInt(f["used_memory"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("used_memory: %w", err)
	}
	if v, ok := f["mem_clients_normal"]; ok {
		clients, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("mem_clients_normal: %w", err)
		}
		used -= clients
	}
	return used, nil
}

// memoryUsage is MEMORY USAGE of keys, summed (SAMPLES 0: exact).
func memoryUsage(ctx context.Context, c rueidis.Client, keys []string) (int64, error) {
	var sum int64
	for _, k := range keys {
		n, err := c.Do(ctx, c.B().MemoryUsage().Key(k).Samples(0).Build()).AsInt64()
		if err != nil && !rueidis.IsRedisNil(err) {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// pin sets the CPU affinity of every thread of pid (taskset -apc).
func pin(pid int, cpu int) error {
	out, err := exec.Command("taskset", "-apc", strconv.Itoa(cpu), strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("taskset -apc %d %d: %v: %s", cpu, pid, err, out)
	}
	return nil
}

// cpuModel is the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func mean(xs ...float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
