package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// Health is the state the health endpoint reports.
type Health struct {
	OK         bool      `json:"ok"`
	Stopping   bool      `json:"stopping,omitempty"`
	LoadedAt   time.Time `json:"config_loaded_at,omitzero"`
	LastError  string    `json:"last_config_error,omitempty"`
	ErrorAt    time.Time `json:"last_config_error_at,omitzero"`
	ConfigUsed bool      `json:"config_in_use"`
}

// Health reports whether the server answers: not stopping, and with a
// configuration when HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED says so.
func (s *Server) Health() Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := Health{Stopping: s.stopping, LoadedAt: s.loadedAt, ErrorAt: s.errorAt, ConfigUsed: s.service.Config() != nil}
	if s.lastError != nil {
		h.LastError = s.lastError.Error()
	}
	h.OK = !s.stopping && (h.ConfigUsed || !s.settings.HealthyWithConfig)
	return h
}

// Handler serves the HTTP endpoints: /healthcheck ("OK", or 500 when
// unhealthy; a failed configuration load is reported beneath), /json
// (ShouldRateLimit with a JSON request and response, as the reference's)
// and /stats (the counters per rule, JSON).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthcheck", func(w http.ResponseWriter, _ *http.Request) {
		h := s.Health()
		if !h.OK {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintln(w, "NOT OK")
		} else {
			fmt.Fprintln(w, "OK")
		}
		if h.LastError != "" {
			fmt.Fprintf(w, "last configuration load failed at %s (serving the one loaded at %s):\n%s\n",
				h.ErrorAt.UTC().Format(time.RFC3339), h.LoadedAt.UTC().Format(time.RFC3339), h.LastError)
		}
	})
	mux.HandleFunc("/health.json", func(w http.ResponseWriter, _ *http.Request) {
		h := s.Health()
		w.Header().Set("Content-Type", "application/json")
		if !h.OK {
			w.WriteHeader(http.StatusInternalServerError)
		}
		_ = json.NewEncoder(w).Encode(h)
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req pb.RateLimitRequest
		if err := protojson.Unmarshal(body, &req); err != nil {
			http.Error(w, "error: "+err.Error(), http.StatusBadRequest)
			return
		}
		resp, err := s.service.ShouldRateLimit(r.Context(), &req)
		if err != nil {
			http.Error(w, "error: "+err.Error(), httpStatus(err))
			return
		}
		out, err := protojson.Marshal(resp)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT {
			w.WriteHeader(http.StatusTooManyRequests)
		}
		_, _ = w.Write(out)
	})
	mux.HandleFunc("/stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.stats.Snapshot())
	})
	return mux
}

// httpStatus is the /json status of a ShouldRateLimit error: 400 for a
// request refused, 503 when the backend did not answer (as the gRPC
// status Unavailable), 500 otherwise.
func httpStatus(err error) int {
	switch status.Code(err) {
	case codes.InvalidArgument:
		return http.StatusBadRequest
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
