package server

import (
	"expvar"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"strconv"
)

// debugEndpoints are the debug listener's paths and what each serves, as
// the reference's.
var debugEndpoints = map[string]string{
	"/rlconfig":            "print out the currently loaded configuration for debugging",
	"/debug/pprof/":        "root of various pprof endpoints. hit for help.",
	"/debug/pprof/profile": "CPU profiling endpoint",
	"/debug/pprof/trace":   "trace endpoint",
	"/stats":               "print out stats",
}

// DebugHandler serves the debug port (DEBUG_HOST:DEBUG_PORT) as the
// reference's does: /rlconfig (the configuration in use, a line per
// rule), /debug/pprof/ (and its profile and trace), /stats (the expvar
// variables, "name: value" lines) and / (the list of these).
func (s *Server) DebugHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/rlconfig", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, s.service.Config().Dump())
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/stats", func(w http.ResponseWriter, _ *http.Request) {
		expvar.Do(func(kv expvar.KeyValue) { fmt.Fprintf(w, "%s: %s\n", kv.Key, kv.Value) })
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		paths := make([]string, 0, len(debugEndpoints))
		for p := range debugEndpoints {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			fmt.Fprintf(w, "%s: %s\n", p, debugEndpoints[p])
		}
	})
	return mux
}

// listenDebug opens the debug listener; like the reference, a port that
// cannot be listened on is logged and the service goes on without it.
func (s *Server) listenDebug() net.Listener {
	addr := net.JoinHostPort(s.settings.DebugHost, strconv.Itoa(s.settings.DebugPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.log.Error("debug listener not opened; serving without it", "addr", addr, "error", err)
		return nil
	}
	return ln
}
