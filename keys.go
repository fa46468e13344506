package ratelua

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/ratelua/ratelua/internal/keyslot"
)

// maxEventKey is the longest escaped event key kept as it is in a state
// key; a longer one is replaced by its digest, so that whoever controls
// the event key (a header, a user name) does not control the size of the
// server's keys.
const maxEventKey = 128

// maxPrefix is the longest Prefix.
const maxPrefix = 128

// slot returns the Redis Cluster hash slot of key (CRC16 of the key, or of
// its {hash tag}, mod 16384).
func slot(key string) int { return int(keyslot.Slot(key)) }

// checkPrefix refuses a prefix that would make state keys ambiguous.
func checkPrefix(prefix string) error {
	switch {
	case prefix == "":
		return &LimitError{Index: -1, Field: "Prefix", Reason: "is empty"}
	case len(prefix) > maxPrefix:
		return &LimitError{Index: -1, Field: "Prefix", Reason: fmt.Sprintf("must be at most %d bytes, got %d", maxPrefix, len(prefix))}
	case strings.ContainsAny(prefix, "{}"):
		return &LimitError{Index: -1, Field: "Prefix", Reason: "may not contain '{' or '}', got " + quote(prefix)}
	}
	return nil
}

// escapeTag makes an event key safe inside a {hash tag}: '%', '{' and '}'
// are percent-encoded, so the tag ends where ratelua put its '}' and two
// event keys never share an escaped form. An empty event key becomes "%",
// and one whose escaped form is longer than maxEventKey becomes "%H" and
// the hex SHA-256 of the event key: no escaped form starts with "%H" (a
// '%' is followed by "25", "7B" or "7D"), so the scheme stays injective.
func escapeTag(eventKey string) string {
	if eventKey == "" {
		return "%"
	}
	escaped := eventKey
	if strings.ContainsAny(eventKey, "%{}") {
		var b strings.Builder
		for i := 0; i < len(eventKey) && b.Len() <= maxEventKey; i++ {
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
	if len(escaped) > maxEventKey {
		sum := sha256.Sum256([]byte(eventKey))
		return "%H" + hex.EncodeToString(sum[:])
	}
	return escaped
}

// stateKey builds the state key of eventKey for a script and a limits
// hash: <prefix>:{<escaped event key>}:<name>:v<N>:<hash>, N the script's
// state version. All state of one event key shares the slot of its tag; a
// change of state version or limits starts fresh state.
func stateKey(prefix, eventKey string, s Script, hash string) string {
	return prefix + ":{" + escapeTag(eventKey) + "}:" + s.Name + ":v" + strconv.Itoa(stateVersion(s)) + ":" + hash
}

// stateVersion is the version whose state s reads and writes.
func stateVersion(s Script) int {
	if s.StateVersion > 0 {
		return s.StateVersion
	}
	return s.Version
}

// isStateKey reports whether key is a limiter's state key under prefix:
// <prefix>:{<tag without braces>}:<name>:v<N>:<8 hex digits>.
func isStateKey(prefix, key string) bool {
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
