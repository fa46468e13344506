package main

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestServiceOnTheEngine runs the example's routes on the embedded engine
// over a real HTTP server: a login passes, the next is denied with a
// Retry-After equal to t, the API counts an export as 10, and the health
// check is never limited.
func TestServiceOnTheEngine(t *testing.T) {
	h, err := newService(newEngineClient(), "", true)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	send := func(method, path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		req.Header.Set("X-Api-Key", "demo")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := send("POST", "/login"); r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("RateLimit"), `"login-5s";r=0;t=`) {
		t.Fatalf("first login: %d %v", r.StatusCode, r.Header)
	}
	r := send("POST", "/login")
	retry, _ := strconv.Atoi(r.Header.Get("Retry-After"))
	if r.StatusCode != 429 || retry < 1 || retry > 5 || r.Header.Get("RateLimit") != `"login-5s";r=0;t=`+strconv.Itoa(retry) {
		t.Errorf("second login: %d %v", r.StatusCode, r.Header)
	}
	for i, want := range []int{200, 200, 429} { // a burst of 20 per address: two exports of 10
		if r := send("POST", "/api/export"); r.StatusCode != want {
			t.Errorf("export %d: %d, want %d (%v)", i+1, r.StatusCode, want, r.Header)
		}
	}
	if r := send("GET", "/healthz"); r.StatusCode != 200 || r.Header.Get("RateLimit-Policy") != "" {
		t.Errorf("/healthz: %d %v", r.StatusCode, r.Header)
	}
}
