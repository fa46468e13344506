package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLLMOnTheEngine runs the example's API on the embedded engine over a
// real HTTP server, on a clock that does not move (nothing refills): each
// answer's RateLimit field says what is left once its max_tokens and
// prompt are reserved, the next one shows the unused part given back (the
// tokens left are exactly the minute's less the usage reported), a
// request whose reservation no longer fits is answered 429 with
// Retry-After, and another key has its own tokens.
func TestLLMOnTheEngine(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	h, err := newService(newEngineClient(), func() time.Time { return at }, newFakeModel(7))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	send := func(key, body string) (*http.Response, usage) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+"/v1/completions", strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Usage usage }
		if resp.StatusCode == 200 {
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
		}
		return resp, out.Usage
	}
	const body = `{"prompt":"hello world","max_tokens":500}` // 3 + 500 reserved
	var spent int64
	for i := 0; ; i++ {
		if i == 100 {
			t.Fatal("100 requests passed")
		}
		resp, u := send("demo", body)
		if resp.StatusCode == http.StatusTooManyRequests {
			retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			if 2000-spent >= 503 || retry < 1 || !strings.HasPrefix(resp.Header.Get("RateLimit"), `"tokens-per-minute";r=`+strconv.FormatInt(2000-spent, 10)+";") {
				t.Fatalf("denied with %d of the minute's tokens left (503 asked): %v", 2000-spent, resp.Header)
			}
			t.Logf("%d requests spent %d tokens, then 429 with Retry-After %d", i, spent, retry)
			break
		}
		want := `"tokens-per-minute";r=` + strconv.FormatInt(2000-spent-503, 10) + ";"
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("RateLimit"), want) {
			t.Fatalf("request %d: %d, RateLimit %q, want it to start %s", i, resp.StatusCode, resp.Header.Get("RateLimit"), want)
		}
		if u.PromptTokens != 3 || u.CompletionTokens < 1 || u.CompletionTokens > 500 || u.TotalTokens != 3+u.CompletionTokens {
			t.Fatalf("request %d: usage %+v", i, u)
		}
		spent += u.TotalTokens
	}
	if resp, _ := send("other", body); resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("RateLimit"), `"tokens-per-minute";r=1497;`) {
		t.Errorf("another key: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := send("", body); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no key: %d", resp.StatusCode)
	}
	if resp, _ := send("demo", `{"prompt":"x","max_tokens":5000}`); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("max_tokens 5000: %d", resp.StatusCode)
	}
}
