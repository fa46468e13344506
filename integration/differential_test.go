package integration

import "testing"

// differential: one random sequence of calls (Allow, AllowN beyond a
// limit's max, Peek, Reset, AllowBatch, ResetMany; every script, both
// modes, a caller clock) through every adapter gives a byte-identical
// transcript of Results and errors. rueidis, the native path, is the
// reference.
func differential(t *testing.T, d deployment) {
	ops := randomOps(uint64(len(d.kind))*10+uint64(len(d.topology)), 600)
	var reference, referenceName string
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			count(t, adapterSuite(a), d, func(t *testing.T) {
				got := play(t, a.connect(t, d, connection{}), "diff-"+a.name, ops)
				if reference == "" {
					reference, referenceName = got, a.name
					return
				}
				if got != reference {
					t.Errorf("%s and %s differ at %s", a.name, referenceName, firstDifference(got, reference))
				}
			})
		})
	}
}
