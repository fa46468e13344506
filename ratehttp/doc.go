// Package ratehttp is net/http middleware that runs ratelua limiters in
// front of any http.Handler (a ServeMux pattern, a chi or gorilla/mux
// route), and answers in the syntax of the IETF RateLimit header fields
// (draft-ietf-httpapi-ratelimit-headers-11).
//
// A route gets one or several limits; every limit is a ratelua.Limiter with
// a policy name, a key (the client address by default) and a cost per
// request (1 by default). A request passes when every limit admits it:
//
//	logins, _ := ratelua.NewSlidingWindow(ratelua.Rueidis(client), ratelua.Options{Prefix: "login"},
//		ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
//		ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute})
//	mw, err := ratehttp.New(ratehttp.Options{}, ratehttp.Limit{Limiter: logins, Name: "login"})
//	if err != nil {
//		return err // names the bad option: a CIDR, a policy name, a missing limiter
//	}
//	mux.Handle("POST /login", mw.Handler(loginHandler))
//
// Every response on the route carries the policies and the limit closest to
// running out:
//
//	RateLimit-Policy: "login-5s";q=1;w=5, "login-1h";q=5;w=3600
//	RateLimit: "login-1h";r=0;t=3574
//
// and a denied request is answered 429 with Retry-After (whole seconds,
// rounded up, the same as t) and an application/problem+json body of the
// draft's quota-exceeded type naming the violated policy, or by
// Options.Denied. When a limiter gets no answer from its server, its
// ratelua.Options.FailOpen decides: the request passes, or is answered 503
// (Options.Unavailable); Options.OnError sees every error.
//
// The middleware decides nothing itself: it maps a request to event keys and
// costs, calls the limiters in order (the first that denies ends the
// request; the limiters before it have counted it), and turns their Results
// into headers and a status.
//
// Client addresses: the key is the peer's address (RemoteAddr), IPv6
// grouped by /64. Forwarded, X-Forwarded-For or X-Real-IP (one of them,
// Options.ProxyHeader) is read only when the peer is one of
// Options.TrustedProxies, and then the rightmost address that is not a
// trusted proxy is the client: the addresses to its left were written by the
// client and prove nothing. Forwarded is parsed strictly, a line at a time:
// one that does not parse (a client's unbalanced quote) ends the search at
// the proxy that wrote the lines after it. The rules are package
// clientaddr's, shared with rategrpc.
//
// Costs known only after the work (LLM tokens, bytes sent): a Limit with
// Reserve reserves the request's estimate (ratelua.Limiter.Reserve,
// admitted or denied as a Cost would be, with the same fields), and the
// handler reports the actual cost with Settle(r.Context(), n); the
// middleware settles it when the handler returns, whether it streamed,
// panicked or lost its client, and a handler that reports nothing keeps
// the estimate spent. A request that a later limit denies gives its
// reservations back.
//
//	mw, err := ratehttp.New(ratehttp.Options{}, ratehttp.Limit{Limiter: tokensPerMinute, Name: "tpm",
//		Key: apiKey, Reserve: func(r *http.Request) int64 { return maxTokens(r) }})
//	...
//	func(w http.ResponseWriter, r *http.Request) { usage := answer(w, r); ratehttp.Settle(r.Context(), usage) }
//
// A limiter with ratelua.Options.DryRun is asked and records, but never
// denies and never shows in a header field. A client that hangs up (or
// half-closes its connection) cancels its request's context: the limiter is
// then not asked, and even a FailOpen limiter denies (503), since the
// server did not fail.
package ratehttp
