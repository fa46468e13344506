package luatest

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/ratelua/ratelua/internal/keyslot"
)

// Violation reports a broken strictness rule.
type Violation struct {
	// Rule names the rule: one of the Rule* constants.
	Rule string
	// Msg describes the violation, naming the key or command.
	Msg string
}

// Error returns a sentence describing the violation.
func (v *Violation) Error() string { return "luatest: strictness violation (" + v.Rule + "): " + v.Msg }

// Strictness rule names used in Violation.Rule.
const (
	// RuleUndeclaredKey: a command read or wrote a key not passed in KEYS.
	RuleUndeclaredKey = "undeclared-key"
	// RuleCrossSlot: the KEYS hash to different Redis Cluster slots.
	RuleCrossSlot = "cross-slot"
	// RuleUnknownCommand: the script called a command luatest does not know.
	RuleUnknownCommand = "unknown-command"
	// RuleKeyWithoutTTL: a key written by the script has no TTL at the end.
	RuleKeyWithoutTTL = "key-without-ttl"
)

// checkSlots reports KEYS that hash to different cluster slots.
func checkSlots(keys []string) *Violation {
	if len(keys) < 2 {
		return nil
	}
	first := keyslot.Slot(keys[0])
	for _, k := range keys[1:] {
		if s := keyslot.Slot(k); s != first {
			return &Violation{Rule: RuleCrossSlot, Msg: fmt.Sprintf("KEYS %q and %q hash to different cluster slots (%d and %d)", keys[0], k, first, s)}
		}
	}
	return nil
}

// checkKeys reports a key of a command that is not in KEYS.
func (e *Engine) checkKeys(L *lua.LState, name string, keys []string) {
	for _, k := range keys {
		if !e.declared(k) {
			e.violate(L, RuleUndeclaredKey, fmt.Sprintf("%s accesses key %q, which is not in KEYS %q", strings.ToUpper(name), k, e.runKeys))
		}
	}
}

// checkWritten reports a key written during the run that has no TTL.
func (e *Engine) checkWritten() *Violation {
	if e.opts.AllowKeylessTTL {
		return nil
	}
	now := e.nowMs()
	for _, k := range e.written {
		if ent := e.ks.lookup(k, now); ent != nil && ent.expireAt == 0 {
			return &Violation{Rule: RuleKeyWithoutTTL, Msg: fmt.Sprintf("key %q was written by the script and has no TTL when it ends", k)}
		}
	}
	return nil
}

func (e *Engine) declared(key string) bool {
	for _, k := range e.runKeys {
		if k == key {
			return true
		}
	}
	return false
}

// violate records a strictness violation and aborts the script; the
// violation cannot be caught by pcall.
func (e *Engine) violate(L *lua.LState, rule, msg string) {
	if e.violation == nil {
		e.violation = &Violation{Rule: rule, Msg: msg}
	}
	L.RaiseError("%s", e.violation.Error())
}
