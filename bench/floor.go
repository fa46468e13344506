package main

import (
	"context"
	"strings"

	"github.com/redis/rueidis"
)

// The floor: the cheapest scripted decision there is, one counter with a
// TTL (INCR, PEXPIRE on first use). Every ratio in the report divides by
// it, measured just before and just after each contender.
var floorScript = rueidis.NewLuaScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`)

const floorTTL = "60000" // ms

// scriptRunner calls one rueidis.Lua script with the event key as KEYS[1].
type scriptRunner struct {
	client rueidis.Client
	script *rueidis.Lua
	prefix string
	name   string // "": the key is prefix + eventKey; else minimumKey(prefix, eventKey, name)
}

func (s scriptRunner) key(eventKey string) string {
	if s.name != "" {
		return minimumKey(s.prefix, eventKey, s.name)
	}
	return s.prefix + eventKey
}

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

// floorKeyPrefix is a prefix of n bytes for the memory floor's keys,
// made of the letter of the state key it stands for (i: its index among a
// row's state keys), so that the counters of one event key differ.
func floorKeyPrefix(i, n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat(string(rune('a'+i%26)), n-1) + ":"
}

// memFloorRunner is the memory floor of a row: for each of the row's state
// keys a counter (the floor's script, INCR + PEXPIRE) under a key of the
// same length, the event key behind a prefix of pads[i] bytes.
type memFloorRunner struct {
	client rueidis.Client
	pads   []int
}

func (m memFloorRunner) StateKeys(eventKey string) []string {
	keys := make([]string, len(m.pads))
	for i, n := range m.pads {
		keys[i] = floorKeyPrefix(i, n) + eventKey
	}
	return keys
}

func (m memFloorRunner) Decide(ctx context.Context, eventKey string) error {
	for _, k := range m.StateKeys(eventKey) {
		if err := floorScript.Exec(ctx, m.client, []string{k}, []string{floorTTL}).Error(); err != nil {
			return err
		}
	}
	return nil
}

// statePads are the lengths of r's state keys minus the event key's, for
// eventKey: the prefix (and suffix) bytes a memory floor key needs to be
// as long. A state key shorter than its event key counts 0 (the floor's
// key is then longer).
func statePads(r runner, eventKey string) []int {
	var pads []int
	for _, k := range r.StateKeys(eventKey) {
		pads = append(pads, max(0, len(k)-len(eventKey)))
	}
	return pads
}
