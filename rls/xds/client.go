package xds

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	confv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"
)

// TypeURL is the type of the resources subscribed to.
const TypeURL = "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig"

// Options configure Run. The zero value of each field is the reference's
// default, except ServerURL, which must be set.
type Options struct {
	// ServerURL is the management server's gRPC target, such as
	// localhost:18000 (CONFIG_GRPC_XDS_SERVER_URL).
	ServerURL string
	// NodeID identifies this client to the server, which keys its
	// snapshots by it (CONFIG_GRPC_XDS_NODE_ID; "default" when empty).
	NodeID string
	// NodeMetadata is the node's metadata, string values
	// (CONFIG_GRPC_XDS_NODE_METADATA, read by ParseNodeMetadata).
	NodeMetadata map[string]string
	// Headers are sent with the stream (CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS).
	Headers map[string]string
	// TLS, if not nil, secures the connection (CONFIG_GRPC_XDS_SERVER_USE_TLS,
	// built by TLSConfig); nil connects in the clear.
	TLS *tls.Config
	// ConnectRetryInterval is the wait between attempts to connect to the
	// server (CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL; 3 s when 0).
	ConnectRetryInterval time.Duration
	// Backoff paces the opening of a new stream after one broke.
	Backoff Backoff
	// MaxMsgSize bounds a response's size in bytes; 0 is gRPC's default,
	// 4 MiB (XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES).
	MaxMsgSize int
	// Log receives the connection's events; nil discards them.
	Log *slog.Logger
}

// Update is one complete state of the configuration: every
// RateLimitConfig resource the server holds for this node, in the order
// of their names (a server may send them in any order: go-control-plane's
// snapshot cache sends them in its map's), so that a state loads, and
// fails, the same way every time.
type Update struct {
	// Version is the server's version of this state.
	Version string
	// Files is each resource as a configuration document.
	Files []File
}

// Apply is called with each update, one at a time. nil accepts it (ACK);
// an error refuses it (NACK) and the caller keeps what it had.
type Apply func(ctx context.Context, u Update) error

// ErrOptions is wrapped by the error of Run when its options cannot work.
var ErrOptions = errors.New("xds: invalid options")

// Run subscribes to RateLimitConfig resources at opts.ServerURL and calls
// apply with every update, until ctx is done; it then returns ctx's
// error. A stream that breaks (or a server not reachable) is tried again,
// after opts.Backoff, for as long as ctx lasts. An error is returned at
// once only for options that cannot work.
func Run(ctx context.Context, opts Options, apply Apply) error {
	if opts.ServerURL == "" {
		return fmt.Errorf("%w: no server URL", ErrOptions)
	}
	if apply == nil {
		return fmt.Errorf("%w: no function to apply updates", ErrOptions)
	}
	if err := opts.Backoff.check(); err != nil {
		return err
	}
	if opts.MaxMsgSize < 0 {
		return fmt.Errorf("%w: negative max message size %d", ErrOptions, opts.MaxMsgSize)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	retry := opts.ConnectRetryInterval
	if retry <= 0 {
		retry = 3 * time.Second
	}
	creds := insecure.NewCredentials()
	if opts.TLS != nil {
		creds = credentials.NewTLS(opts.TLS)
	}
	dial := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		// A server that cannot be reached is tried again every
		// ConnectRetryInterval (the reference's linear retry, jittered).
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           grpcbackoff.Config{BaseDelay: retry, Multiplier: 1, Jitter: 0.5, MaxDelay: retry},
			MinConnectTimeout: 20 * time.Second,
		}),
	}
	if opts.MaxMsgSize > 0 {
		dial = append(dial, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(opts.MaxMsgSize)))
	}
	conn, err := grpc.NewClient(opts.ServerURL, dial...)
	if err != nil {
		return fmt.Errorf("%w: server URL %q: %v", ErrOptions, opts.ServerURL, err)
	}
	defer conn.Close()

	s := &subscription{opts: opts, log: log, apply: apply, node: node(opts)}
	client := discoveryv3.NewAggregatedDiscoveryServiceClient(conn)
	md := metadata.New(opts.Headers)
	for attempt := 0; ; attempt++ {
		received, err := s.stream(metadata.NewOutgoingContext(ctx, md), client)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if received {
			attempt = 0
		}
		wait := opts.Backoff.Delay(attempt)
		log.Warn("xDS stream ended; opening it again", "server", opts.ServerURL, "error", err, "after", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// node is the node this client says it is.
func node(opts Options) *corev3.Node {
	id := opts.NodeID
	if id == "" {
		id = "default"
	}
	fields := make(map[string]*structpb.Value, len(opts.NodeMetadata))
	for k, v := range opts.NodeMetadata {
		fields[k] = structpb.NewStringValue(v)
	}
	return &corev3.Node{Id: id, Metadata: &structpb.Struct{Fields: fields}, UserAgentName: "ratelua-rls"}
}

// subscription is the state one Run keeps across its streams.
type subscription struct {
	opts  Options
	log   *slog.Logger
	apply Apply
	node  *corev3.Node
	// version is the last version accepted, sent when a stream opens so
	// that a server holding the same state need not send it again.
	version string
	// refused is the last response refused: a server answers a NACK by
	// sending its state again (go-control-plane's snapshot cache does),
	// which is refused again without applying it, once a pause has
	// passed, instead of spinning both sides.
	refused struct {
		version string
		digest  [sha256.Size]byte
		err     error
	}
}

// digest identifies a response's resources.
func digest(resp *discoveryv3.DiscoveryResponse) [sha256.Size]byte {
	h := sha256.New()
	for _, a := range resp.GetResources() {
		fmt.Fprintf(h, "%d:%s%d:", len(a.GetTypeUrl()), a.GetTypeUrl(), len(a.GetValue()))
		h.Write(a.GetValue())
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// repeatPause is the wait before refusing again a response refused
// already: the backoff's first wait, at most a second.
func (s *subscription) repeatPause() time.Duration {
	return min(s.opts.Backoff.withDefaults().Initial, time.Second)
}

// stream runs one ADS stream until it breaks, and reports whether a
// response arrived on it.
func (s *subscription) stream(ctx context.Context, client discoveryv3.AggregatedDiscoveryServiceClient) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// WaitForReady: the stream waits for the connection, which gRPC
	// retries every ConnectRetryInterval, instead of failing at once.
	st, err := client.StreamAggregatedResources(ctx, grpc.WaitForReady(true))
	if err != nil {
		return false, fmt.Errorf("xds: opening the stream: %w", err)
	}
	req := &discoveryv3.DiscoveryRequest{Node: s.node, TypeUrl: TypeURL, VersionInfo: s.version}
	if err := st.Send(req); err != nil {
		return false, fmt.Errorf("xds: subscribing: %w", err)
	}
	s.log.Info("xDS stream open", "server", s.opts.ServerURL, "node", s.node.GetId())
	received := false
	for {
		resp, err := st.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("xds: the server closed the stream")
			}
			return received, err
		}
		received = true
		next, err := s.answer(ctx, resp)
		if err != nil {
			return received, err
		}
		if err := st.Send(next); err != nil {
			return received, fmt.Errorf("xds: answering version %q: %w", resp.GetVersionInfo(), err)
		}
	}
}

// answer applies resp, or refuses it, and returns the request that says
// which (ACK or NACK); an error only when ctx ended.
func (s *subscription) answer(ctx context.Context, resp *discoveryv3.DiscoveryResponse) (*discoveryv3.DiscoveryRequest, error) {
	next := &discoveryv3.DiscoveryRequest{TypeUrl: TypeURL, ResponseNonce: resp.GetNonce()}
	d := digest(resp)
	var err error
	repeated := s.refused.err != nil && s.refused.version == resp.GetVersionInfo() && s.refused.digest == d
	if repeated {
		err = s.refused.err
		t := time.NewTimer(s.repeatPause())
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	} else {
		err = s.handle(ctx, resp)
	}
	if err != nil {
		if !repeated {
			s.log.Error("xDS update refused (NACK); the last good configuration stays in use",
				"version", resp.GetVersionInfo(), "error", err)
			s.refused.version, s.refused.digest, s.refused.err = resp.GetVersionInfo(), d, err
		}
		next.VersionInfo = s.version
		next.ErrorDetail = &statuspb.Status{Code: int32(codes.InvalidArgument), Message: err.Error()}
		return next, nil
	}
	s.refused.err = nil
	s.version = resp.GetVersionInfo()
	s.log.Info("xDS update applied (ACK)", "version", s.version, "resources", len(resp.GetResources()))
	next.VersionInfo = s.version
	return next, nil
}

// handle decodes one response and applies it.
func (s *subscription) handle(ctx context.Context, resp *discoveryv3.DiscoveryResponse) error {
	if resp.GetTypeUrl() != TypeURL {
		return fmt.Errorf("xds: a response of type %q, subscribed to %q", resp.GetTypeUrl(), TypeURL)
	}
	u := Update{Version: resp.GetVersionInfo(), Files: make([]File, 0, len(resp.GetResources()))}
	for i, a := range resp.GetResources() {
		c := &confv3.RateLimitConfig{}
		if err := a.UnmarshalTo(c); err != nil {
			return fmt.Errorf("xds: resource %d (%s): %w", i, a.GetTypeUrl(), err)
		}
		data, err := YAML(c)
		if err != nil {
			return err
		}
		name := c.GetName()
		if name == "" {
			name = fmt.Sprintf("resource %d", i)
		}
		u.Files = append(u.Files, File{Name: name, Data: data})
	}
	slices.SortStableFunc(u.Files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return s.apply(ctx, u)
}
