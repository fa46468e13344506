package settings

import "testing"

// TestLocalCacheEntries: LOCAL_CACHE_SIZE_IN_BYTES gives one state key per
// 128 bytes, of at least freecache's 512 KiB, and none when 0.
func TestLocalCacheEntries(t *testing.T) {
	for _, c := range []struct{ bytes, want int }{
		{0, 0}, {1, 4096}, {512 * 1024, 4096}, {1 << 20, 8192}, {100 << 20, 819200},
	} {
		if got := (Settings{LocalCacheBytes: c.bytes}).LocalCacheEntries(); got != c.want {
			t.Errorf("LOCAL_CACHE_SIZE_IN_BYTES=%d: %d entries, want %d", c.bytes, got, c.want)
		}
	}
}
