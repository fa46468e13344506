package statsink

import (
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"sync"
	"time"
)

// The statsd sink's bounds, as gostats' network sink has them.
const (
	// udpPacket is the largest datagram sent: 1432 bytes fit an Ethernet
	// MTU of 1500 unfragmented.
	udpPacket = 1432
	// maxPending bounds what a sink holds between flushes (timers, and
	// a flush's lines while the server is unreachable): past it, lines
	// are dropped, and counted.
	maxPending = 4 << 20
	// dialTimeout and writeTimeout bound one connection attempt and one
	// write, so that a statsd server that does not answer delays only
	// the flush, never a request.
	dialTimeout  = 1500 * time.Millisecond
	writeTimeout = time.Second
)

// lineSink is what the statsd and dogstatsd sinks share: the lines of a
// flush, sent over TCP (one stream, reconnected after an error) or UDP
// (datagrams of whole lines, at most udpPacket bytes).
type lineSink struct {
	network, addr string
	log           *slog.Logger

	mu      sync.Mutex // pending and dropped: held briefly, never over the network
	pending bytes.Buffer
	dropped uint64 // bytes dropped since the last warning

	send    sync.Mutex // the connection, the sends and the warnings
	conn    net.Conn
	warned  time.Time
	failing bool
}

func newLineSink(network, addr string, log *slog.Logger) (*lineSink, error) {
	switch network {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
	default:
		return nil, fmt.Errorf("statsink: protocol %q: want tcp or udp", network)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &lineSink{network: network, addr: addr, log: log}, nil
}

// add appends one line (ending in '\n').
func (s *lineSink) add(line []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending.Len()+len(line) > maxPending {
		s.dropped += uint64(len(line))
		return
	}
	s.pending.Write(line)
}

// Flush sends what the sink holds. Lines that cannot be sent are dropped
// (a warning names the server, at most once a minute). A request adding
// a line waits for no network: the lines are taken from the sink, then
// sent.
func (s *lineSink) Flush() {
	s.send.Lock()
	defer s.send.Unlock()
	s.mu.Lock()
	if s.pending.Len() == 0 && s.dropped == 0 {
		s.mu.Unlock()
		return
	}
	b := bytes.Clone(s.pending.Bytes())
	s.pending.Reset()
	s.mu.Unlock()
	var err error
	if len(b) > 0 {
		err = s.write(b)
	}
	s.mu.Lock()
	if err != nil {
		s.dropped += uint64(len(b))
	}
	dropped := s.dropped
	report := err == nil || time.Since(s.warned) >= time.Minute
	if report {
		s.dropped = 0
	}
	s.mu.Unlock()
	server := s.network + "://" + s.addr
	switch {
	case err != nil && report:
		s.log.Warn("statistics not sent", "server", server, "bytes_dropped", dropped, "error", err)
		s.warned, s.failing = time.Now(), true
	case err == nil && s.failing:
		s.log.Warn("statistics sent again", "server", server, "bytes_dropped", dropped)
		s.failing = false
	case err == nil && dropped > 0:
		s.log.Warn("statistics dropped: more than 4 MB between two flushes", "server", server, "bytes_dropped", dropped)
	}
}

// write writes b on the connection, dialling it first if need be; a UDP
// sink writes whole lines in datagrams of at most udpPacket bytes. The
// caller holds s.send.
func (s *lineSink) write(b []byte) error {
	if s.conn == nil {
		c, err := net.DialTimeout(s.network, s.addr, dialTimeout)
		if err != nil {
			return err
		}
		s.conn = c
	}
	var err error
	if s.network[:3] == "udp" {
		for len(b) > 0 && err == nil {
			n := packetEnd(b)
			_, err = s.conn.Write(b[:n])
			b = b[n:]
		}
	} else {
		_ = s.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err = s.conn.Write(b)
	}
	if err != nil {
		_ = s.conn.Close()
		s.conn = nil
	}
	return err
}

// packetEnd is the length of the first datagram of b: the most whole
// lines that fit udpPacket bytes (one line, when longer).
func packetEnd(b []byte) int {
	if len(b) <= udpPacket {
		return len(b)
	}
	if i := bytes.LastIndexByte(b[:udpPacket], '\n'); i >= 0 {
		return i + 1
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return i + 1
	}
	return len(b)
}

// Close sends what is left and closes the connection.
func (s *lineSink) Close() error {
	s.Flush()
	s.send.Lock()
	defer s.send.Unlock()
	if s.conn == nil {
		return nil
	}
	err := s.conn.Close()
	s.conn = nil
	return err
}

// StatsdSink sends statistics in the statsd protocol, as the reference's
// USE_STATSD does: "name:delta|c" for a counter, "name:ms|ms" for a timer,
// "name:value|g" for a gauge, one a line, over TCP (the reference's default, STATSD_PROTOCOL) or UDP.
type StatsdSink struct{ *lineSink }

// NewStatsdSink returns a statsd sink sending to addr (host:port) over
// network ("tcp" or "udp"); log gets a warning when statistics cannot be
// sent. It connects at the first flush.
func NewStatsdSink(network, addr string, log *slog.Logger) (*StatsdSink, error) {
	s, err := newLineSink(network, addr, log)
	if err != nil {
		return nil, err
	}
	return &StatsdSink{s}, nil
}

// FlushCounter adds "name:delta|c".
func (s *StatsdSink) FlushCounter(name string, delta uint64) {
	b := make([]byte, 0, len(name)+24)
	b = append(b, name...)
	b = append(b, ':')
	b = strconv.AppendUint(b, delta, 10)
	s.add(append(b, "|c\n"...))
}

// FlushGauge adds "name:value|g".
func (s *StatsdSink) FlushGauge(name string, value uint64) {
	b := make([]byte, 0, len(name)+24)
	b = append(b, name...)
	b = append(b, ':')
	b = strconv.AppendUint(b, value, 10)
	s.add(append(b, "|g\n"...))
}

// FlushTimer adds "name:ms|ms", ms as an integer when it is one.
func (s *StatsdSink) FlushTimer(name string, ms float64) {
	b := make([]byte, 0, len(name)+32)
	b = append(b, name...)
	b = append(b, ':')
	if ms >= 0 && ms < math.MaxUint64 && math.Trunc(ms) == ms {
		b = strconv.AppendUint(b, uint64(ms), 10)
	} else {
		b = strconv.AppendFloat(b, ms, 'f', -1, 64)
	}
	s.add(append(b, "|ms\n"...))
}
