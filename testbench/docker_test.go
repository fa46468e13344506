package testbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	dc "github.com/ory/dockertest/v3/docker"
)

func dockerSpec(t *testing.T, kind Kind) Spec {
	dir := filepath.Join(t.TempDir(), "node-12000")
	spec := Spec{Kind: kind, Port: 12000, BusPort: 22000, Dir: dir,
		ConfigFile: filepath.Join(dir, "node.conf"), LogFile: filepath.Join(dir, "server.log")}
	spec.Config = append(baseConfig(spec), clusterConfig...)
	return spec
}

// TestDockerHostNetwork checks the container and server configuration the
// Docker provider builds, without an engine.
func TestDockerHostNetwork(t *testing.T) {
	t.Setenv("RATELUA_DOCKER_IMAGE", "")
	d := DockerWith(DockerOptions{}).(*dockerProvider)
	spec := dockerSpec(t, Valkey)
	ro, hcf := d.runOptions(spec, "ratelua-testbench-x")
	if ro.Repository != "valkey/valkey" || ro.Tag != "8.0" {
		t.Errorf("image %s:%s, want %s", ro.Repository, ro.Tag, DefaultValkeyImage)
	}
	if !slices.Equal(ro.Entrypoint, []string{"valkey-server"}) || !slices.Equal(ro.Cmd, []string{spec.ConfigFile}) {
		t.Errorf("entry point %q, cmd %q", ro.Entrypoint, ro.Cmd)
	}
	if !slices.Equal(ro.Mounts, []string{spec.Dir + ":" + spec.Dir}) {
		t.Errorf("mounts %q: want the node's directory at the same path", ro.Mounts)
	}
	if want := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()); runtime.GOOS != "windows" && ro.User != want {
		t.Errorf("user %q, want %q", ro.User, want)
	}
	if ro.Labels[labelBench] != "1" || ro.Labels[labelPID] != strconv.Itoa(os.Getpid()) {
		t.Errorf("labels %v", ro.Labels)
	}
	if len(ro.ExposedPorts) != 0 || len(ro.PortBindings) != 0 {
		t.Errorf("host network publishes ports: %v %v", ro.ExposedPorts, ro.PortBindings)
	}
	hc := dc.HostConfig{PublishAllPorts: true} // dockertest's default
	hcf(&hc)
	if hc.NetworkMode != "host" || hc.PublishAllPorts || hc.AutoRemove || hc.RestartPolicy.Name != "no" {
		t.Errorf("host config %+v", hc)
	}
	want := []string{"cluster-announce-ip 127.0.0.1", "cluster-announce-port 12000", "cluster-announce-bus-port 22000"}
	if got := d.serverConfig(spec, "127.0.0.1"); !slices.Equal(got, want) {
		t.Errorf("server config %q, want %q", got, want)
	}
	if got, err := d.announceIP(context.Background(), nil); got != "127.0.0.1" || err != nil {
		t.Errorf("announceIP = %q, %v", got, err)
	}
	// The configuration file: testbench's lines, then the provider's.
	if err := writeConfig(spec, d.serverConfig(spec, "127.0.0.1")...); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(spec.ConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")[1:]
	if !slices.Equal(lines, append(spec.Config, want...)) {
		t.Errorf("config file:\n%s", data)
	}
	for _, l := range []string{"port 12000", "bind 127.0.0.1", "cluster-enabled yes", "dir " + spec.Dir, `save ""`} {
		if !slices.Contains(lines, l) {
			t.Errorf("config file lacks %q", l)
		}
	}
}

func TestDockerBridgeNetwork(t *testing.T) {
	t.Setenv("RATELUA_DOCKER_IMAGE", "")
	d := DockerWith(DockerOptions{Network: DockerBridgeNetwork, AnnounceIP: "172.17.0.1"}).(*dockerProvider)
	spec := dockerSpec(t, Redis)
	ro, hcf := d.runOptions(spec, "ratelua-testbench-y")
	if ro.Repository != "redis" || ro.Tag != "7.0" || !slices.Equal(ro.Entrypoint, []string{"redis-server"}) {
		t.Errorf("image %s:%s, entry point %q", ro.Repository, ro.Tag, ro.Entrypoint)
	}
	if !slices.Equal(ro.ExposedPorts, []string{"12000/tcp", "22000/tcp"}) {
		t.Errorf("exposed ports %q", ro.ExposedPorts)
	}
	wantBindings := map[dc.Port][]dc.PortBinding{
		"12000/tcp": {{HostIP: "0.0.0.0", HostPort: "12000"}},
		"22000/tcp": {{HostIP: "0.0.0.0", HostPort: "22000"}},
	}
	if !reflect.DeepEqual(ro.PortBindings, wantBindings) {
		t.Errorf("port bindings %v, want the same numbers on the host", ro.PortBindings)
	}
	hc := dc.HostConfig{PublishAllPorts: true}
	hcf(&hc)
	if hc.NetworkMode != "" || hc.PublishAllPorts {
		t.Errorf("host config %+v", hc)
	}
	ip, err := d.announceIP(context.Background(), nil)
	if err != nil || ip != "172.17.0.1" {
		t.Errorf("announceIP = %q, %v", ip, err)
	}
	want := []string{"bind 0.0.0.0", "cluster-announce-ip 172.17.0.1", "cluster-announce-port 12000", "cluster-announce-bus-port 22000"}
	if got := d.serverConfig(spec, ip); !slices.Equal(got, want) {
		t.Errorf("server config %q, want %q", got, want)
	}
}

func TestDockerImage(t *testing.T) {
	t.Setenv("RATELUA_DOCKER_IMAGE", "")
	d := DockerWith(DockerOptions{}).(*dockerProvider)
	if got := d.imageFor(Redis); got != DefaultRedisImage {
		t.Errorf("Redis image %q", got)
	}
	if got := d.imageFor(Valkey); got != DefaultValkeyImage {
		t.Errorf("Valkey image %q", got)
	}
	t.Setenv("RATELUA_DOCKER_IMAGE", "example.com:5000/valkey:unstable")
	if got := d.imageFor(Redis); got != "example.com:5000/valkey:unstable" {
		t.Errorf("with RATELUA_DOCKER_IMAGE: %q", got)
	}
	if got := Docker("mine:1").(*dockerProvider).imageFor(Valkey); got != "mine:1" {
		t.Errorf("Docker(\"mine:1\"): %q", got)
	}
	for in, want := range map[string][2]string{
		"redis:7.0":                  {"redis", "7.0"},
		"redis":                      {"redis", "latest"},
		"valkey/valkey:8.0":          {"valkey/valkey", "8.0"},
		"localhost:5000/redis":       {"localhost:5000/redis", "latest"},
		"localhost:5000/a/redis:7.2": {"localhost:5000/a/redis", "7.2"},
	} {
		if r, tag := splitImage(in); r != want[0] || tag != want[1] {
			t.Errorf("splitImage(%q) = %q, %q; want %q", in, r, tag, want)
		}
	}
}

// TestDockerUnavailable: with no engine at the endpoint, Check fails with
// a one-line ErrUnavailable.
func TestDockerUnavailable(t *testing.T) {
	d := DockerWith(DockerOptions{Endpoint: "unix:///nonexistent/docker.sock"})
	err := d.Check(t.Context(), Valkey)
	if !errors.Is(err, ErrUnavailable) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Check: %v; want a one-line ErrUnavailable", err)
	}
	t.Log(err)
	if err := DockerWith(DockerOptions{Network: "overlay"}).Check(t.Context(), Valkey); err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("Check with a bad network: %v", err)
	}
}

// fakeTB records Skip and Fatal.
type fakeTB struct {
	testing.TB
	skipped, fatal string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skip(args ...any) {
	f.skipped = fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fakeTB) Fatal(args ...any) {
	f.fatal = fmt.Sprint(args...)
	runtime.Goexit()
}

// startWith runs Start or StartSingle on a fakeTB.
func startWith(t *testing.T, single bool, opts Options) *fakeTB {
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if single {
			StartSingle(f, opts)
		} else {
			Start(f, opts)
		}
		t.Error("Start returned")
	}()
	<-done
	return f
}

// TestStartUnavailable: a missing engine or binary skips with a one-line
// reason, and fails the test under CI=true.
func TestStartUnavailable(t *testing.T) {
	noEngine := Options{Kind: Valkey, Provider: DockerWith(DockerOptions{Endpoint: "unix:///nonexistent/docker.sock"})}
	t.Setenv("RATELUA_REDIS_SERVER", "/nonexistent/redis-server")
	noBinary := Options{Kind: Redis, Provider: Processes()}
	for _, tc := range []struct {
		name   string
		single bool
		opts   Options
		want   string
	}{
		{"docker cluster", false, noEngine, "no Docker engine answers"},
		{"docker single", true, noEngine, "no Docker engine answers"},
		{"binary cluster", false, noBinary, "RATELUA_REDIS_SERVER=/nonexistent/redis-server"},
		{"binary single", true, noBinary, "RATELUA_REDIS_SERVER=/nonexistent/redis-server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", "")
			f := startWith(t, tc.single, tc.opts)
			if !strings.Contains(f.skipped, tc.want) || strings.Contains(f.skipped, "\n") || f.fatal != "" {
				t.Errorf("without CI: skipped %q, fatal %q; want a one-line skip with %q", f.skipped, f.fatal, tc.want)
			}
			t.Setenv("CI", "true")
			f = startWith(t, tc.single, tc.opts)
			if !strings.Contains(f.fatal, tc.want) || f.skipped != "" {
				t.Errorf("with CI=true: skipped %q, fatal %q; want a failure with %q", f.skipped, f.fatal, tc.want)
			}
		})
	}
}

// TestDockerName: the provider names its image, or the official ones.
func TestDockerName(t *testing.T) {
	t.Setenv("RATELUA_DOCKER_IMAGE", "")
	if got, want := Docker("").Name(), "docker (official images)"; got != want {
		t.Errorf("Docker(\"\").Name() = %q, want %q", got, want)
	}
	if got, want := Docker("mine:1").Name(), "docker mine:1"; got != want {
		t.Errorf("Docker(\"mine:1\").Name() = %q, want %q", got, want)
	}
	t.Setenv("RATELUA_DOCKER_IMAGE", "ratelua/servers:local")
	if got, want := Docker("").Name(), "docker ratelua/servers:local"; got != want {
		t.Errorf("with RATELUA_DOCKER_IMAGE: Name() = %q, want %q", got, want)
	}
}

// TestProviderFromEnv: RATELUA_TESTBENCH picks the provider of Options
// with none.
func TestProviderFromEnv(t *testing.T) {
	t.Setenv("RATELUA_DOCKER_IMAGE", "")
	for env, want := range map[string]string{"": "processes", "processes": "processes", "docker": "docker (official images)"} {
		t.Setenv("RATELUA_TESTBENCH", env)
		if got := (Options{Kind: Redis}).provider().Name(); got != want {
			t.Errorf("RATELUA_TESTBENCH=%q: provider %q, want %q", env, got, want)
		}
	}
	if got := (Options{Kind: Redis, Provider: Processes()}).provider().Name(); got != "processes" {
		t.Errorf("an Options.Provider is overridden by RATELUA_TESTBENCH: %q", got)
	}
}

// TestDockerMissingImageError: the error for an image that cannot be
// pulled is one line that names the image and the way to name another,
// and wraps ErrUnavailable and the pull's error.
func TestDockerMissingImageError(t *testing.T) {
	pullErr := errors.New("API error (404): pull access denied\nmore")
	for _, fromOptions := range []bool{false, true} {
		err := missingImage("redis:7.0", fromOptions, pullErr)
		msg := err.Error()
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, pullErr) {
			t.Errorf("%v: does not wrap ErrUnavailable and the pull's error", err)
		}
		want := "RATELUA_DOCKER_IMAGE"
		if fromOptions {
			want = "DockerOptions.Image"
		}
		for _, w := range []string{"Docker image redis:7.0 ", "cannot be pulled", "pull access denied", want} {
			if !strings.Contains(msg, w) {
				t.Errorf("%q lacks %q", msg, w)
			}
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("%q is more than one line", msg)
		}
	}
}

// TestDockerMissingImage asks a real engine (RATELUA_TESTBENCH=docker) for
// an image that is nowhere: Check, StartNode and Start fail with the error
// that names it; Start skips, or fails under CI=true.
func TestDockerMissingImage(t *testing.T) {
	if os.Getenv("RATELUA_TESTBENCH") != "docker" {
		t.Skip("needs a Docker engine: set RATELUA_TESTBENCH=docker")
	}
	const missing = "ratelua-testbench/no-such-image:missing"
	probe := DockerWith(DockerOptions{}).(*dockerProvider)
	if _, err := probe.connect(t.Context()); err != nil {
		unavailable(t, err)
	}
	t.Setenv("RATELUA_DOCKER_IMAGE", missing)
	d := Docker("")
	err := d.Check(t.Context(), Valkey)
	t.Log(err)
	if !errors.Is(err, ErrUnavailable) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Check: %v; want a one-line ErrUnavailable", err)
	}
	for _, w := range []string{"Docker image " + missing + " ", "RATELUA_DOCKER_IMAGE"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Check: %q lacks %q", err, w)
		}
	}
	if _, err := StartNode(t.Context(), Options{Kind: Redis, Provider: d}); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), missing) {
		t.Errorf("StartNode: %v; want ErrUnavailable naming %s", err, missing)
	}
	t.Setenv("CI", "")
	if f := startWith(t, false, Options{Kind: Redis, Provider: d}); !strings.Contains(f.skipped, missing) || f.fatal != "" {
		t.Errorf("Start without CI: skipped %q, fatal %q; want a skip naming %s", f.skipped, f.fatal, missing)
	}
	t.Setenv("CI", "true")
	if f := startWith(t, true, Options{Kind: Redis, Provider: d}); !strings.Contains(f.fatal, missing) || f.skipped != "" {
		t.Errorf("StartSingle with CI=true: skipped %q, fatal %q; want a failure naming %s", f.skipped, f.fatal, missing)
	}
}
