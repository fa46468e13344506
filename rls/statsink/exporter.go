package statsink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Config chooses where the statistics go, as the reference's settings do.
type Config struct {
	// Disable (DISABLE_STATS) exports nothing, whatever else is set.
	Disable bool
	// Statsd (USE_STATSD, the reference's default) sends statsd lines to
	// StatsdHost:StatsdPort over StatsdProtocol (tcp, the default, or udp).
	Statsd         bool
	StatsdHost     string
	StatsdPort     int
	StatsdProtocol string
	// DogStatsd (USE_DOG_STATSD) sends dogstatsd lines over UDP to
	// StatsdHost:StatsdPort, tagged with DogStatsdTags (DD_ENV, ...),
	// renamed by Mogrifiers.
	DogStatsd     bool
	DogStatsdTags []string
	Mogrifiers    []Mogrifier
	// Prometheus (USE_PROMETHEUS) serves the metrics on PrometheusAddr
	// at PrometheusPath, mapped by Mapper (nil: the reference's,
	// ReferenceMapper).
	Prometheus     bool
	PrometheusAddr string
	PrometheusPath string
	Mapper         *Mapper
	// ExtraTags (EXTRA_TAGS) tag every statistic.
	ExtraTags map[string]string
	// FlushInterval (STATS_FLUSH_INTERVAL, 10 s) is the time between
	// flushes.
	FlushInterval time.Duration
	// Log gets the sink's warnings (statistics that could not be sent).
	Log *slog.Logger
}

// ErrSeveralSinks is the reference's refusal of two sinks at once.
var ErrSeveralSinks = errors.New("unable to use more than one stats sink at the same time: set one of USE_DOG_STATSD, USE_STATSD, USE_PROMETHEUS (USE_STATSD is true unless set to false)")

// Exporter runs a Store: its flushes and, with Prometheus, its listener.
type Exporter struct {
	// Store is where the service counts; nil when nothing is exported.
	Store *Store
	// Kind names the sink: "statsd", "dogstatsd", "prometheus" or "" (none).
	Kind string

	cancel context.CancelFunc
	done   chan struct{}
	srv    *http.Server
	ln     net.Listener
	once   sync.Once
	err    error
}

// Start checks c and starts its exporter: nil Store when Disable is set or
// no sink is chosen. Two sinks at once is ErrSeveralSinks; a Prometheus
// address that cannot be listened on is an error naming it.
func Start(c Config) (*Exporter, error) {
	e := &Exporter{}
	if c.Disable {
		return e, nil
	}
	n := 0
	for _, on := range []bool{c.Statsd, c.DogStatsd, c.Prometheus} {
		if on {
			n++
		}
	}
	if n > 1 {
		return nil, ErrSeveralSinks
	}
	if n == 0 {
		return e, nil
	}
	if c.FlushInterval <= 0 {
		return nil, fmt.Errorf("statsink: flush interval %v: must be above 0", c.FlushInterval)
	}
	addr := net.JoinHostPort(c.StatsdHost, strconv.Itoa(c.StatsdPort))
	var sink Sink
	switch {
	case c.Statsd:
		s, err := NewStatsdSink(c.StatsdProtocol, addr, c.Log)
		if err != nil {
			return nil, err
		}
		sink, e.Kind = s, "statsd"
	case c.DogStatsd:
		s, err := NewDogStatsdSink(addr, c.DogStatsdTags, c.Mogrifiers, c.Log)
		if err != nil {
			return nil, err
		}
		sink, e.Kind = s, "dogstatsd"
	case c.Prometheus:
		m := c.Mapper
		if m == nil {
			var err error
			if m, err = ReferenceMapper(); err != nil {
				return nil, err
			}
		}
		p := NewPrometheusSink(m)
		ln, err := net.Listen("tcp", c.PrometheusAddr)
		if err != nil {
			return nil, fmt.Errorf("statsink: PROMETHEUS_ADDR=%s: %w", c.PrometheusAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle(c.PrometheusPath, p)
		e.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		e.ln = ln
		go func() { _ = e.srv.Serve(ln) }()
		sink, e.Kind = p, "prometheus"
	}
	e.Store = NewStore(sink, c.ExtraTags)
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	go func() { defer close(e.done); e.Store.Run(ctx, c.FlushInterval) }()
	return e, nil
}

// PrometheusAddr is the address the Prometheus endpoint listens on, nil
// without one.
func (e *Exporter) PrometheusAddr() net.Addr {
	if e == nil || e.ln == nil {
		return nil
	}
	return e.ln.Addr()
}

// Close stops the flushes, flushes a last time and closes the sink and
// the Prometheus listener (waiting for scrapes in flight until ctx is
// done).
func (e *Exporter) Close(ctx context.Context) error {
	if e == nil || e.Store == nil {
		return nil
	}
	e.once.Do(func() {
		e.cancel()
		<-e.done
		e.err = e.Store.Close()
		if e.srv != nil {
			if err := e.srv.Shutdown(ctx); err != nil && e.err == nil {
				e.err = err
			}
		}
	})
	return e.err
}
