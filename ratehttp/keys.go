package ratehttp

import (
	"net/http"
)

// KeyFunc maps a request to a limiter's event key; ok false means the limit
// does not apply to the request.
type KeyFunc func(r *http.Request) (key string, ok bool)

// ByHeader keys by the value of the request header name (an API key, a
// tenant id); a request without it is not limited by this limit.
func ByHeader(name string) KeyFunc {
	name = http.CanonicalHeaderKey(name)
	return func(r *http.Request) (string, bool) {
		v := r.Header.Get(name)
		return v, v != ""
	}
}

// ByContextValue keys by the string stored in the request's context under
// key, such as the user an authentication middleware put there; a request
// without one (or with an empty one) is not limited by this limit.
func ByContextValue(key any) KeyFunc {
	return func(r *http.Request) (string, bool) {
		v, ok := r.Context().Value(key).(string)
		return v, ok && v != ""
	}
}

// ClientKey returns the key of the request's client address, the default
// key of a Limit: the peer's address (RemoteAddr), or when the peer is a
// trusted proxy the rightmost address in its ProxyHeader that is not a
// trusted proxy, grouped by the IPv4 and IPv6 prefix lengths: "192.0.2.1",
// "2001:db8:1:2::/64". A RemoteAddr that holds no address (a Unix socket)
// is the key as it is. The rules are package clientaddr's, shared with
// rategrpc: Forwarded is parsed strictly, and a line of it that does not
// parse ends the search at the proxy that wrote the lines after it.
func (m *Middleware) ClientKey(r *http.Request) string {
	return m.clients.Key(r.RemoteAddr, r.Header.Values(m.clients.Header()))
}
