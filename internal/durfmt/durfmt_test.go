package durfmt

import (
	"testing"
	"time"
)

func TestShort(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 3 * time.Second: "3s", time.Hour: "1h", 59*time.Minute + 34*time.Second: "59m34s",
		time.Hour + 2*time.Second: "1h2s", 90 * time.Minute: "1h30m", 1500 * time.Millisecond: "1.5s",
		1500 * time.Microsecond: "1.5ms", -time.Second: "-1s", 49 * time.Hour: "49h",
	} {
		if got := Short(d); got != want {
			t.Errorf("Short(%v) = %q, want %q", d, got, want)
		}
	}
}
