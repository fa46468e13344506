// Package xdstest runs an xDS management server for tests: the snapshot
// cache and the server of go-control-plane (what Envoy Gateway serves its
// rate-limit configuration with), holding RateLimitConfig resources, and
// recording what clients answer (ACK or NACK) to each version it sent.
package xdstest

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	confv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Wait bounds every wait of a Server for what a client sends: a guard
// against a test that would hang, not a measure.
const Wait = 60 * time.Second

// Request is one request a client sent on a stream.
type Request struct {
	*discoveryv3.DiscoveryRequest
	// Stream is the server's id of the stream it came on.
	Stream int64
	// Answers is the version of the response it answers (by its nonce on
	// its stream), "" for a stream's first request (or one carrying
	// another stream's nonce).
	Answers string
	// Node is the node the stream's first request named.
	Node *corev3.Node
}

// ACK reports whether r accepts the response of version v.
func (r Request) ACK(v string) bool {
	return r.Answers == v && r.GetErrorDetail() == nil && r.GetVersionInfo() == v
}

// NACK reports whether r refuses the response of version v.
func (r Request) NACK(v string) bool { return r.Answers == v && r.GetErrorDetail() != nil }

// Server is a running xDS server on a loopback port.
type Server struct {
	Addr  string
	cache cache.SnapshotCache
	xds   serverv3.Server
	opts  []grpc.ServerOption

	mu       sync.Mutex
	grpc     *grpc.Server
	requests []Request
	nonces   map[string]string // stream/nonce -> version (nonces count per stream)
	headers  []metadata.MD     // of each stream opened
	nodes    []*corev3.Node
	streams  map[int64]*corev3.Node
	changed  chan struct{}
}

// Start runs a server for t; opts configure its gRPC server (TLS
// credentials). It stops with the test.
func Start(t testing.TB, opts ...grpc.ServerOption) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cache:   cache.NewSnapshotCache(true, cache.IDHash{}, nil),
		opts:    opts,
		nonces:  map[string]string{},
		streams: map[int64]*corev3.Node{},
		changed: make(chan struct{}),
	}
	s.xds = serverv3.NewServer(ctx, s.cache, serverv3.CallbackFuncs{
		StreamOpenFunc: func(ctx context.Context, _ int64, _ string) error {
			md, _ := metadata.FromIncomingContext(ctx)
			s.mu.Lock()
			s.headers = append(s.headers, md)
			s.mu.Unlock()
			return nil
		},
		StreamRequestFunc: func(id int64, r *discoveryv3.DiscoveryRequest) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if r.GetNode() != nil {
				s.nodes = append(s.nodes, r.GetNode())
				if s.streams[id] == nil {
					s.streams[id] = r.GetNode()
				}
			}
			s.requests = append(s.requests, Request{DiscoveryRequest: r, Stream: id, Answers: s.nonces[nonceKey(id, r.GetResponseNonce())], Node: s.streams[id]})
			close(s.changed)
			s.changed = make(chan struct{})
			return nil
		},
		StreamResponseFunc: func(_ context.Context, id int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.nonces[nonceKey(id, resp.GetNonce())] = resp.GetVersionInfo()
		},
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String()
	s.serve(ln)
	t.Cleanup(func() { s.Stop(); cancel() })
	return s
}

// nonceKey identifies a response by its stream and nonce: go-control-plane
// counts nonces per stream.
func nonceKey(stream int64, nonce string) string {
	return strconv.FormatInt(stream, 10) + "/" + nonce
}

func (s *Server) serve(ln net.Listener) {
	g := grpc.NewServer(s.opts...)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(g, s.xds)
	s.mu.Lock()
	s.grpc = g
	s.mu.Unlock()
	go func() { _ = g.Serve(ln) }()
}

// Stop stops the server, breaking every stream.
func (s *Server) Stop() {
	s.mu.Lock()
	g := s.grpc
	s.grpc = nil
	s.mu.Unlock()
	if g != nil {
		g.Stop()
	}
}

// Restart serves again on the same address, with the same snapshots.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	s.serve(ln)
}

// Set makes configs the state of node, as version.
func (s *Server) Set(t testing.TB, node, version string, configs ...*confv3.RateLimitConfig) {
	t.Helper()
	res := make([]types.Resource, len(configs))
	for i, c := range configs {
		res[i] = c
	}
	snap, err := cache.NewSnapshot(version, map[resource.Type][]types.Resource{resource.RateLimitConfigType: res})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cache.SetSnapshot(context.Background(), node, snap); err != nil {
		t.Fatal(err)
	}
}

// WaitFor returns the first request, from the from-th on, for which ok
// holds, and the index after it; it fails t after Wait.
func (s *Server) WaitFor(t testing.TB, from int, what string, ok func(Request) bool) (Request, int) {
	t.Helper()
	deadline := time.NewTimer(Wait)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		for i := from; i < len(s.requests); i++ {
			if ok(s.requests[i]) {
				r := s.requests[i]
				s.mu.Unlock()
				return r, i + 1
			}
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("xDS server: no %s within %v; requests: %v", what, Wait, s.Requests())
		}
	}
}

// WaitACK waits for a client's acceptance of version v.
func (s *Server) WaitACK(t testing.TB, v string) Request {
	t.Helper()
	r, _ := s.WaitFor(t, 0, "ACK of version "+v, func(r Request) bool { return r.ACK(v) })
	return r
}

// WaitNACK waits for a client's refusal of version v.
func (s *Server) WaitNACK(t testing.TB, v string) Request {
	t.Helper()
	r, _ := s.WaitFor(t, 0, "NACK of version "+v, func(r Request) bool { return r.NACK(v) })
	return r
}

// WaitAnswer waits for a client's first answer, ACK or NACK, to the
// response of version v among the requests ok selects (all when nil).
func (s *Server) WaitAnswer(t testing.TB, v string, ok func(Request) bool) Request {
	t.Helper()
	r, _ := s.WaitFor(t, 0, "an answer to version "+v, func(r Request) bool { return r.Answers == v && (ok == nil || ok(r)) })
	return r
}

// MetadataIs selects the requests of the nodes whose metadata holds
// key: value, to tell clients of one node id apart.
func MetadataIs(key, value string) func(Request) bool {
	return func(r Request) bool {
		return r.Node.GetMetadata().GetFields()[key].GetStringValue() == value
	}
}

// Requests returns every request received.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Headers returns the request headers of every stream opened.
func (s *Server) Headers() []metadata.MD {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]metadata.MD(nil), s.headers...)
}

// Nodes returns the node of every request that carried one.
func (s *Server) Nodes() []*corev3.Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*corev3.Node(nil), s.nodes...)
}
