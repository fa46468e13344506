package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/ratelua/ratelua/rls/settings"
)

// explainTLS turns a failed TLS connection into an error naming TLS: a
// TLS handshake with a server that does not speak it only times out
// ("context deadline exceeded"), so the server is asked, without TLS,
// whether it answers PING.
func explainTLS(ctx context.Context, t settings.RedisTarget, addr string, err error) error {
	if !t.TLS {
		return err
	}
	if plainAnswers(ctx, t, addr) {
		return fmt.Errorf("rls: connecting to %s with TLS (%s_TLS=true): the server answers without TLS: unset %s_TLS, or enable TLS on the server: %w", addr, t.Prefix, t.Prefix, err)
	}
	return fmt.Errorf("rls: connecting to %s with TLS (%s_TLS=true), the TLS handshake failed: %w", addr, t.Prefix, err)
}

// plainAnswers reports whether the server at addr answers a PING in the
// clear within a second (+PONG, or an error such as -NOAUTH).
func plainAnswers(ctx context.Context, t settings.RedisTarget, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	network := "tcp"
	if t.SocketType == "unix" {
		network = "unix"
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return false
	}
	defer c.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && (strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-"))
}
