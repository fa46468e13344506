package ratehttp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// quotaExceededType is the draft's problem type for a request over quota.
const quotaExceededType = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// problem is an RFC 9457 problem body, with the draft's extension member.
type problem struct {
	Type     string   `json:"type"`
	Title    string   `json:"title"`
	Status   int      `json:"status"`
	Detail   string   `json:"detail,omitempty"`
	Violated []string `json:"violated-policies,omitempty"`
}

// quotaExceeded is the body of a 429 for d; quota is the violated
// policy's. Without detail it tells no wait and no quota, as HeadersNone
// asks.
func quotaExceeded(d Denial, quota int64, detail bool) problem {
	p := problem{Type: quotaExceededType, Title: "Quota Exceeded", Status: http.StatusTooManyRequests, Violated: d.Policies}
	switch {
	case !detail:
	case d.Result.RetryAfter < 0:
		p.Detail = fmt.Sprintf("this request costs %d, more than policy %s allows (%d): it can never pass", d.Cost, strconv.Quote(d.Policies[0]), quota)
	default:
		p.Detail = fmt.Sprintf("policy %s allows this request in %d s", strconv.Quote(d.Policies[0]), ceilSeconds(d.Result.RetryAfter))
	}
	return p
}

// writeProblem answers with status and p as application/problem+json.
func writeProblem(w http.ResponseWriter, status int, p problem) {
	body, err := json.Marshal(p)
	if err != nil { // a problem of strings and ints always marshals
		body = []byte(`{"type":"about:blank"}`)
	}
	h := w.Header()
	h["Content-Type"] = []string{"application/problem+json"}
	h["Content-Length"] = []string{strconv.Itoa(len(body) + 1)}
	h["X-Content-Type-Options"] = []string{"nosniff"}
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
