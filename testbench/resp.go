package testbench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// ReplyError is an error reply from the server, such as
// "MOVED 3999 127.0.0.1:6381" or "ERR unknown command". Node.Do returns it
// as its error for a top-level error reply; inside an array reply (EXEC) it
// is an element.
type ReplyError string

// Error returns the reply's text.
func (e ReplyError) Error() string { return string(e) }

// Prefix returns the error's first word, such as "MOVED", "ERR" or
// "BUSYKEY".
func (e ReplyError) Prefix() string {
	p, _, _ := strings.Cut(string(e), " ")
	return p
}

// defaultDoTimeout bounds one command when the context has no deadline, so
// that a paused node does not hang a test forever.
const defaultDoTimeout = 10 * time.Second

// respConn is one RESP connection to a server.
type respConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialRESP(ctx context.Context, addr string) (*respConn, error) {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &respConn{c: c, r: bufio.NewReader(c)}, nil
}

func (rc *respConn) Close() error { return rc.c.Close() }

// do sends one command and reads its reply. The returned error is a
// ReplyError for an error reply (the connection is still usable) or an I/O
// or protocol error (the connection is not).
func (rc *respConn) do(ctx context.Context, args ...string) (any, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(defaultDoTimeout)
	}
	rc.c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { rc.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := rc.c.Write(encodeCommand(args)); err != nil {
		return nil, ctxErr(ctx, err)
	}
	v, err := readReply(rc.r)
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	if e, ok := v.(ReplyError); ok {
		return nil, e
	}
	return v, nil
}

// ctxErr prefers the context's error to the I/O error it caused.
// The connection's deadline is ctx's, so it may fire a moment before ctx
// reports its own expiry.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	if d, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(d) {
		return fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
	}
	return err
}

func encodeCommand(args []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

var errProtocol = errors.New("testbench: RESP protocol error")

// readReply reads one RESP2 or RESP3 reply: simple and bulk strings and
// verbatim strings become string, integers int64, arrays, sets and pushes
// []any, maps map[string]any, nulls nil, doubles float64, booleans bool,
// big numbers string, and error replies ReplyError.
func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: bad line %q", errProtocol, line)
	}
	typ, body := line[0], line[1:len(line)-2]
	switch typ {
	case '+', '(':
		return body, nil
	case '-', '!':
		if typ == '!' {
			s, err := readBulk(r, body)
			if err != nil {
				return nil, err
			}
			body = s.(string)
		}
		return ReplyError(body), nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: bad integer %q", errProtocol, body)
		}
		return n, nil
	case ',':
		f, err := strconv.ParseFloat(body, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: bad double %q", errProtocol, body)
		}
		return f, nil
	case '#':
		return body == "t", nil
	case '_':
		return nil, nil
	case '$':
		return readBulk(r, body)
	case '=':
		s, err := readBulk(r, body)
		if s, ok := s.(string); ok && len(s) >= 4 && s[3] == ':' {
			return s[4:], err // drop the "txt:" format prefix
		}
		return s, err
	case '*', '~', '>':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, fmt.Errorf("%w: bad array length %q", errProtocol, body)
		}
		if n < 0 {
			return nil, nil
		}
		a := make([]any, n)
		for i := range a {
			if a[i], err = readReply(r); err != nil {
				return nil, err
			}
		}
		return a, nil
	case '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: bad map length %q", errProtocol, body)
		}
		m := make(map[string]any, n)
		for range n {
			k, err := readReply(r)
			if err != nil {
				return nil, err
			}
			v, err := readReply(r)
			if err != nil {
				return nil, err
			}
			m[fmt.Sprint(k)] = v
		}
		if typ == '|' { // an attribute precedes the real reply
			return readReply(r)
		}
		return m, nil
	}
	return nil, fmt.Errorf("%w: unknown reply type %q", errProtocol, line)
}

func readBulk(r *bufio.Reader, lenText string) (any, error) {
	n, err := strconv.Atoi(lenText)
	if err != nil {
		return nil, fmt.Errorf("%w: bad bulk length %q", errProtocol, lenText)
	}
	if n < 0 {
		return nil, nil
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return string(buf[:n]), nil
}

// asString, asInt and asArray convert reply values for the helpers here.
func asString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func asInt(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case string:
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	return 0
}

func asArray(v any) []any {
	a, _ := v.([]any)
	return a
}

// asMap turns a RESP2 flat key/value array (or a RESP3 map) into a map.
func asMap(v any) map[string]any {
	switch v := v.(type) {
	case map[string]any:
		return v
	case []any:
		m := make(map[string]any, len(v)/2)
		for i := 0; i+1 < len(v); i += 2 {
			m[asString(v[i])] = v[i+1]
		}
		return m
	}
	return nil
}

// infoFields parses an INFO or CLUSTER INFO reply into its fields.
func infoFields(v any) map[string]string {
	fields := map[string]string{}
	for _, line := range strings.Split(asString(v), "\n") {
		if k, val, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = val
		}
	}
	return fields
}
