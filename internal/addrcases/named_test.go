package addrcases

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckFindsWhatIsMissing: the table Vectors makes passes Check; one
// without an IPv6 prefix length, or with an H1 case answered with a value
// the client wrote, does not.
func TestCheckFindsWhatIsMissing(t *testing.T) {
	vectors, err := Vectors()
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(vectors); err != nil {
		t.Fatal(err)
	}
	var without []Vector
	for _, v := range vectors {
		if !strings.HasPrefix(v.Name, "IPv6 /7 ") {
			without = append(without, v)
		}
	}
	if err := Check(without); !errors.Is(err, ErrMissingCase) || !strings.Contains(err.Error(), "IPv6 prefixes 127 of 128") {
		t.Errorf("without IPv6 /7: %v", err)
	}
	smuggled := append([]Vector(nil), vectors...)
	for i, v := range smuggled {
		if strings.HasPrefix(v.Name, "H1") {
			smuggled[i].Key = "198.51.100.1"
			break
		}
	}
	if err := Check(smuggled); !errors.Is(err, ErrMissingCase) || !strings.Contains(err.Error(), "a value the client wrote") {
		t.Errorf("an H1 case answered with the client's value: %v", err)
	}
	if _, err := Table(without); err == nil {
		t.Error("Table wrote a table that misses a case")
	}
}
