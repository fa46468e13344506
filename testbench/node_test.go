package testbench

import (
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var kinds = []Kind{Redis, Valkey}

// TestSingleNode: a single node starts, keeps its data across a graceful
// stop and restart, and loses unsaved data on a kill.
func TestSingleNode(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			start := time.Now()
			n := StartSingle(t, Options{Kind: kind, Provider: ProviderFromEnv()})
			t.Logf("%s %s at %s, started in %v", kind, n.Version, n.Addr, time.Since(start).Round(time.Millisecond))
			if n.ID != "" {
				t.Errorf("single node has ID %q", n.ID)
			}
			mustDo(t, n, "SET", "k", "v")
			if err := n.Stop(); err != nil {
				t.Fatal(err)
			}
			if _, err := n.Do(ctx, "PING"); err == nil {
				t.Fatal("PING answered after Stop")
			}
			if err := n.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if got := mustDo(t, n, "GET", "k"); got != "v" {
				t.Fatalf("after Stop and Restart: GET k = %#v, want \"v\"", got)
			}
			mustDo(t, n, "SET", "unsaved", "x")
			if err := n.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := n.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if got := mustDo(t, n, "GET", "unsaved"); got != nil {
				t.Errorf("after Kill and Restart: GET unsaved = %#v, want nil", got)
			}
			if got := mustDo(t, n, "GET", "k"); got != "v" {
				t.Errorf("after Kill and Restart: GET k = %#v, want \"v\"", got)
			}
		})
	}
}

func mustDo(t testing.TB, n *Node, args ...string) any {
	t.Helper()
	v, err := n.Do(t.Context(), args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// TestStartErrors: a server that does not start is reported with its
// binary, port and telling log line; a taken port is recognised so that
// launchNode retries on another.
func TestStartErrors(t *testing.T) {
	if _, err := lookupBinary(Valkey); err != nil {
		unavailable(t, err)
	}
	_, err := StartNode(t.Context(), Options{Kind: Valkey, Provider: Processes(), Config: []string{"no-such-directive 1"}})
	if err == nil {
		t.Fatal("StartNode with a bad directive succeeded")
	}
	first := strings.SplitN(err.Error(), "\n", 2)[0]
	for _, want := range []string{"valkey-server on port ", "Bad directive", "'no-such-directive 1'"} {
		if !strings.Contains(first, want) {
			t.Errorf("error's first line %q lacks %q", first, want)
		}
	}

	for _, bus := range []bool{false, true} {
		claim, err := reservePort()
		if err != nil {
			t.Fatal(err)
		}
		taken := claim.port
		if bus {
			taken += busOffset
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(taken)))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		spec := Spec{Kind: Valkey, Port: claim.port, BusPort: claim.port + busOffset, Dir: dir,
			ConfigFile: filepath.Join(dir, "node.conf"), LogFile: filepath.Join(dir, "server.log")}
		spec.Config = append(baseConfig(spec), clusterConfig...)
		_, err = launchSpec(t.Context(), Processes(), spec, claim)
		l.Close()
		claim.release()
		if !errors.Is(err, errAddrInUse) {
			t.Errorf("port %d taken (bus %v): %v, want errAddrInUse", taken, bus, err)
		}
	}
}
