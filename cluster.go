package ratelua

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/internal/keyslot"
)

// Slot returns the Redis Cluster hash slot of key (CRC16 of the key, or of
// its {hash tag}, mod 16384).
func Slot(key string) int { return int(keyslot.Slot(key)) }

// SameSlot returns an error wrapping ErrCrossSlot unless every key hashes to
// one slot.
func SameSlot(keys ...string) error {
	for _, k := range keys[min(1, len(keys)):] {
		if Slot(k) != Slot(keys[0]) {
			return fmt.Errorf("%w: %q is in slot %d, %q in slot %d", ErrCrossSlot, keys[0], Slot(keys[0]), k, Slot(k))
		}
	}
	return nil
}

// escapeTag makes an event key safe inside a {hash tag}: '%', '{' and '}'
// are percent-encoded, so the tag ends where ratelua put its '}' and two
// event keys never share an escaped form. An empty event key becomes "%",
// which no other key escapes to (an empty tag would hash the whole key).
func escapeTag(eventKey string) string {
	if eventKey == "" {
		return "%"
	}
	if !strings.ContainsAny(eventKey, "%{}") {
		return eventKey
	}
	var b strings.Builder
	for i := 0; i < len(eventKey); i++ {
		switch c := eventKey[i]; c {
		case '%':
			b.WriteString("%25")
		case '{':
			b.WriteString("%7B")
		case '}':
			b.WriteString("%7D")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// StateKey builds the state key of eventKey for a script and a limits hash:
// <prefix>:{<escaped event key>}:<name>:v<N>:<hash>. All state of one event
// key shares the slot of its tag; a change of script version or limits
// starts fresh state. prefix must not contain '{' or '}' (limiters check).
func StateKey(prefix, eventKey string, s Script, hash string) string {
	return prefix + ":{" + escapeTag(eventKey) + "}:" + s.Name + ":v" + strconv.Itoa(s.Version) + ":" + hash
}

// NodeLoad is what Registry.Load did on one node.
type NodeLoad struct {
	Addr   string
	Loaded int   // scripts loaded (SCRIPT LOAD is idempotent)
	Err    error // the first failure on this node, if any
}

// Load puts every registered script on every node the client knows (for a
// cluster client, every master and every replica it has connections to) by
// SCRIPT LOAD, and reports per node what it did, sorted by address. The
// error is the first failure.
func (r *Registry) Load(ctx context.Context, client rueidis.Client) ([]NodeLoad, error) {
	scripts := r.All()
	nodes := client.Nodes()
	addrs := slices.Sorted(maps.Keys(nodes))
	var report []NodeLoad
	var first error
	for _, addr := range addrs {
		node := nodes[addr]
		cmds := make(rueidis.Commands, len(scripts))
		for i, s := range scripts {
			cmds[i] = node.B().ScriptLoad().Script(s.Source).Build()
		}
		nl := NodeLoad{Addr: addr}
		for i, resp := range node.DoMulti(ctx, cmds...) {
			sha, err := resp.ToString()
			if err == nil && sha != scripts[i].SHA1 {
				err = fmt.Errorf("ratelua: %s loaded as %s on %s, want %s", scripts[i], sha, addr, scripts[i].SHA1)
			}
			if err != nil {
				if nl.Err == nil {
					nl.Err = fmt.Errorf("ratelua: load %s on %s: %w", scripts[i], addr, err)
				}
				continue
			}
			nl.Loaded++
		}
		if first == nil {
			first = nl.Err
		}
		report = append(report, nl)
	}
	return report, first
}
