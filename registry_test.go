package ratelua

import (
	"errors"
	"testing"
)

func TestRegistryIsImmutable(t *testing.T) {
	r := NewRegistry()
	s, err := r.Register("mine", 1, "return 1")
	if err != nil || s.SHA1 != "e0e1f9fabfc9d4800c877a703b823ac0578ff8db" {
		t.Fatalf("Register: %+v, %v", s, err)
	}
	if again, err := r.Register("mine", 1, "return 1"); err != nil || again.SHA1 != s.SHA1 {
		t.Errorf("same source again: %v", err)
	}
	if _, err := r.Register("mine", 1, "return 2"); !errors.Is(err, ErrImmutable) {
		t.Errorf("other source: %v, want ErrImmutable", err)
	}
	if _, err := r.Register(SlidingWindow, 5, "return 3"); !errors.Is(err, ErrImmutable) {
		t.Errorf("replacing an embedded script: %v, want ErrImmutable", err)
	}
	if _, err := r.Register("Bad Name", 1, "x"); err == nil {
		t.Error("a bad name was accepted")
	}
	r.Register("mine", 2, "return 2")
	if latest, _ := r.Latest("mine"); latest.Version != 2 {
		t.Errorf("Latest = %s", latest)
	}
	if got, err := r.Lookup("mine", 1); err != nil || got.Source != "return 1" {
		t.Errorf("Lookup: %v", err)
	}
	if len(r.All()) != len(Scripts())+2 {
		t.Errorf("All: %d scripts", len(r.All()))
	}
}
