package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/ratelua/ratelua/internal/keyslot"
)

// MaxEventKey is the longest escaped event key kept as it is in a state
// key; a longer one is replaced by its digest, so that whoever controls
// the event key (a header, a user name) does not control the size of the
// server's keys.
const MaxEventKey = 128

// Slot returns the Redis Cluster hash slot of key (CRC16 of the key, or of
// its {hash tag}, mod 16384).
func Slot(key string) int { return int(keyslot.Slot(key)) }

// TagSlot returns the hash slot of the state keys of eventKey: the slot of
// its escaped tag.
func TagSlot(eventKey string) int {
	return int(keyslot.CRC16(EscapeTag(eventKey)) % keyslot.NumSlots)
}

// EscapeTag makes an event key safe inside a {hash tag}: '%', '{' and '}'
// are percent-encoded, so the tag ends where ratelua put its '}' and two
// event keys never share an escaped form. An empty event key becomes "%",
// and one whose escaped form is longer than MaxEventKey becomes "%H" and
// the hex SHA-256 of the event key: no escaped form starts with "%H" (a
// '%' is followed by "25", "7B" or "7D"), so the scheme stays injective.
func EscapeTag(eventKey string) string {
	if eventKey == "" {
		return "%"
	}
	escaped := eventKey
	if strings.ContainsAny(eventKey, "%{}") {
		var b strings.Builder
		for i := 0; i < len(eventKey) && b.Len() <= MaxEventKey; i++ {
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
		escaped = b.String()
	}
	if len(escaped) > MaxEventKey {
		sum := sha256.Sum256([]byte(eventKey))
		return "%H" + hex.EncodeToString(sum[:])
	}
	return escaped
}

// StateKey builds the state key of eventKey for the script name at state
// version version and a limits hash: <prefix>:{<escaped event key>}:<name>:v<version>:<hash>.
// All state of one event key shares the slot of its tag; a change of
// state version or limits starts fresh state.
func StateKey(prefix, eventKey, name string, version int, hash string) string {
	return prefix + ":{" + EscapeTag(eventKey) + "}:" + name + ":v" + strconv.Itoa(version) + ":" + hash
}

// IsStateKey reports whether key is a limiter's state key under prefix:
// <prefix>:{<tag without braces>}:<name>:v<N>:<8 hex digits>.
func IsStateKey(prefix, key string) bool {
	rest, ok := strings.CutPrefix(key, prefix+":{")
	if !ok {
		return false
	}
	tag, rest, ok := strings.Cut(rest, "}:")
	if !ok || tag == "" || strings.ContainsAny(tag, "{}") {
		return false
	}
	name, rest, ok := strings.Cut(rest, ":v")
	if !ok || name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return false
	}
	version, hash, ok := strings.Cut(rest, ":")
	if !ok || version == "" || len(version) > 9 || strings.Trim(version, "0123456789") != "" || version[0] == '0' {
		return false
	}
	return len(hash) == 8 && strings.Trim(hash, "0123456789abcdef") == ""
}
