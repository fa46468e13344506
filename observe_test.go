package ratelua

import (
	"testing"

	"github.com/ratelua/ratelua/internal/decide"
)

// TestKindsAreTheChains: the Kind constants are the kinds the chain of
// stages (internal/decide) gives its events and outcomes.
func TestKindsAreTheChains(t *testing.T) {
	for _, k := range [][2]string{
		{KindAllowed, decide.KindAllowed}, {KindDenied, decide.KindDenied}, {KindDryRun, decide.KindDryRun},
		{KindFailOpen, decide.KindFailOpen}, {KindError, decide.KindError}, {KindFallback, decide.KindFallback},
		{KindLoad, decide.KindLoad}, {KindFallbackEnter, decide.KindFallbackEnter},
		{KindFallbackLeave, decide.KindFallbackLeave}, {KindLost, decide.KindLost},
	} {
		if k[0] != k[1] {
			t.Errorf("ratelua's kind %q is %q in internal/decide", k[0], k[1])
		}
	}
}
