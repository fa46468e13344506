package settings

// The reference's local cache is a freecache.Cache of
// LOCAL_CACHE_SIZE_IN_BYTES bytes, which freecache raises to 512 KiB; an
// entry there takes a 24-byte header and its key (the reference's cache
// key: prefix, domain, entries, window start; no value), so about 128
// bytes for a key of about 100 bytes.
const (
	localCacheMinBytes   = 512 * 1024
	localCacheEntryBytes = 128
)

// LocalCacheEntries is the number of state keys ratelua-rls keeps in the
// reference's local cache for LocalCacheBytes: the bytes (at least
// freecache's 512 KiB) over 128 bytes an entry, so 4096 at least; 0 when
// the local cache is off.
func (s Settings) LocalCacheEntries() int {
	if s.LocalCacheBytes <= 0 {
		return 0
	}
	return max(s.LocalCacheBytes, localCacheMinBytes) / localCacheEntryBytes
}
