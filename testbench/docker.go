package testbench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// Official images Docker uses for a kind when no image is named.
const (
	DefaultValkeyImage = "valkey/valkey:8.0"
	DefaultRedisImage  = "redis:7.0"
)

// Docker network modes for DockerOptions.Network.
const (
	// DockerHostNetwork runs containers in the host's network namespace:
	// each server listens on 127.0.0.1 on its own port, as a process would.
	// Linux; Docker Desktop 4.34 and later when host networking is enabled.
	DockerHostNetwork = "host"
	// DockerBridgeNetwork runs containers on the default bridge with their
	// port and bus port published on the same numbers on the host; the
	// nodes announce DockerOptions.AnnounceIP, which both the host and the
	// containers must reach.
	DockerBridgeNetwork = "bridge"
)

// Container labels: every container testbench starts has labelBench; the
// others name the process that started it, so that a later bench removes
// containers whose test process died without closing them.
const (
	labelBench = "org.ratelua.testbench"
	labelPID   = "org.ratelua.testbench.pid"
	labelHost  = "org.ratelua.testbench.host"
)

// DockerOptions configures DockerWith.
type DockerOptions struct {
	// Image is the server image, "repository:tag". "" means the
	// environment variable RATELUA_DOCKER_IMAGE, or else the official image
	// for the kind (DefaultValkeyImage, DefaultRedisImage). The image must
	// have redis-server (Redis) or valkey-server (Valkey) on its PATH; one
	// image may hold both. Check pulls it when the engine does not have
	// it, and fails with ErrUnavailable, naming the image, when it cannot.
	Image string
	// Network is DockerHostNetwork ("" means it) or DockerBridgeNetwork.
	Network string
	// AnnounceIP is the address the nodes announce with the bridge
	// network; "" means the bridge network's gateway (the host as the
	// containers see it, which the host can dial too on Linux).
	AnnounceIP string
	// Endpoint is the Docker engine's address; "" means DOCKER_HOST or the
	// platform's default socket.
	Endpoint string
}

// Docker returns a provider that runs each node in a container of image
// ("" as in DockerOptions.Image), with host networking. See DockerWith.
func Docker(image string) Provider { return DockerWith(DockerOptions{Image: image}) }

// DockerWith returns a provider that runs each node in a container, with
// github.com/ory/dockertest/v3. A node's directory is bind-mounted at the
// same path inside its container, and the server runs as the test's user,
// so that its configuration, log, nodes.conf and dump.rdb are on the host
// and a restarted container finds them. The server is the container's
// entry point, with the configuration file as its argument. Check fails
// with ErrUnavailable when no engine answers, or when the image is not on
// the engine and cannot be pulled.
func DockerWith(opts DockerOptions) Provider { return &dockerProvider{opts: opts} }

type dockerProvider struct {
	opts DockerOptions

	mu      sync.Mutex
	pool    *dockertest.Pool
	reaped  bool
	gateway string
}

func (d *dockerProvider) Name() string {
	if img := d.imageFor(""); img != "" {
		return "docker " + img
	}
	return "docker (official images)"
}

// imageFor is the image for kind: DockerOptions.Image,
// RATELUA_DOCKER_IMAGE, or the official image.
func (d *dockerProvider) imageFor(kind Kind) string {
	if d.opts.Image != "" {
		return d.opts.Image
	}
	if img := os.Getenv("RATELUA_DOCKER_IMAGE"); img != "" {
		return img
	}
	switch kind {
	case Valkey:
		return DefaultValkeyImage
	case Redis:
		return DefaultRedisImage
	}
	return ""
}

func (d *dockerProvider) network() string {
	if d.opts.Network == "" {
		return DockerHostNetwork
	}
	return d.opts.Network
}

// connect returns the pool after a ping, or an error wrapping
// ErrUnavailable.
func (d *dockerProvider) connect(ctx context.Context) (*dockertest.Pool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pool == nil {
		pool, err := dockertest.NewPool(d.opts.Endpoint)
		if err != nil {
			return nil, unavailablef(nil, "testbench: Docker client: %v", firstLine(err.Error()))
		}
		d.pool = pool
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := d.pool.Client.PingWithContext(pctx); err != nil {
		where := d.opts.Endpoint
		if where == "" {
			where = cmpOr(os.Getenv("DOCKER_HOST"), "the default socket")
		}
		return nil, unavailablef(nil, "testbench: no Docker engine answers at %s: %s", where, firstLine(err.Error()))
	}
	return d.pool, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func (d *dockerProvider) Check(ctx context.Context, kind Kind) error {
	if kind != Redis && kind != Valkey {
		return unavailablef(nil, "testbench: unknown kind %q", kind)
	}
	switch d.network() {
	case DockerHostNetwork, DockerBridgeNetwork:
	default:
		return fmt.Errorf("testbench: DockerOptions.Network %q: want %q or %q", d.opts.Network, DockerHostNetwork, DockerBridgeNetwork)
	}
	pool, err := d.connect(ctx)
	if err != nil {
		return err
	}
	d.reapOnce(pool)
	return d.ensureImage(ctx, pool, d.imageFor(kind))
}

// ensureImage pulls image when the engine does not have it. When it
// cannot, its one-line error names the image and wraps ErrUnavailable and
// the pull's error.
func (d *dockerProvider) ensureImage(ctx context.Context, pool *dockertest.Pool, image string) error {
	_, err := pool.Client.InspectImage(image)
	if err == nil {
		return nil
	}
	if !errors.Is(err, dc.ErrNoSuchImage) {
		return fmt.Errorf("testbench: Docker image %s: %w", image, err)
	}
	repo, tag := splitImage(image)
	err = pool.Client.PullImage(dc.PullImageOptions{Repository: repo, Tag: tag, Context: ctx}, dc.AuthConfiguration{})
	if err == nil {
		return nil
	}
	return missingImage(image, d.opts.Image != "", err)
}

// missingImage is the error for an image that is not on the engine and
// could not be pulled: it names the image and how to name another one.
func missingImage(image string, fromOptions bool, pullErr error) error {
	how := "set RATELUA_DOCKER_IMAGE to an image that has redis-server or valkey-server on its PATH"
	if fromOptions {
		how = "set DockerOptions.Image to an image that has redis-server or valkey-server on its PATH"
	}
	return unavailablef(pullErr, "testbench: Docker image %s is not on the engine and cannot be pulled (%s); pull or build it, or %s",
		image, firstLine(pullErr.Error()), how)
}

// reapOnce removes, once per provider, the containers of earlier benches
// on this host whose test process is gone.
func (d *dockerProvider) reapOnce(pool *dockertest.Pool) {
	d.mu.Lock()
	done := d.reaped
	d.reaped = true
	d.mu.Unlock()
	if done || runtime.GOOS == "windows" {
		return
	}
	host, _ := os.Hostname()
	list, err := pool.Client.ListContainers(dc.ListContainersOptions{
		All:     true,
		Filters: map[string][]string{"label": {labelHost + "=" + host}},
	})
	if err != nil {
		return
	}
	for _, c := range list {
		pid, err := strconv.Atoi(c.Labels[labelPID])
		if err != nil || processAlive(pid) {
			continue
		}
		pool.Client.RemoveContainer(dc.RemoveContainerOptions{ID: c.ID, Force: true, RemoveVolumes: true})
	}
}

func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, os.ErrPermission)
}

// serverConfig is what the Docker provider adds to a node's configuration:
// the address and ports the node announces to its cluster, which are the
// ones clients on the host dial.
func (d *dockerProvider) serverConfig(spec Spec, announceIP string) []string {
	var lines []string
	if d.network() == DockerBridgeNetwork {
		lines = append(lines, "bind 0.0.0.0") // the published ports reach the container's interface
	}
	return append(lines,
		"cluster-announce-ip "+announceIP,
		"cluster-announce-port "+strconv.Itoa(spec.Port),
		"cluster-announce-bus-port "+strconv.Itoa(spec.BusPort),
	)
}

// runOptions builds the container for spec: its image, entry point,
// mount, user, labels and networking.
func (d *dockerProvider) runOptions(spec Spec, name string) (*dockertest.RunOptions, func(*dc.HostConfig)) {
	repo, tag := splitImage(d.imageFor(spec.Kind))
	bin, _ := binary(spec.Kind)
	host, _ := os.Hostname()
	ro := &dockertest.RunOptions{
		Name:       name,
		Repository: repo,
		Tag:        tag,
		// The server itself, not the image's entry point script, which
		// would chown the data directory and drop to its own user.
		Entrypoint: []string{bin},
		Cmd:        []string{spec.ConfigFile},
		WorkingDir: spec.Dir,
		Mounts:     []string{spec.Dir + ":" + spec.Dir},
		Labels: map[string]string{
			labelBench: "1",
			labelPID:   strconv.Itoa(os.Getpid()),
			labelHost:  host,
		},
	}
	if uid, gid := os.Getuid(), os.Getgid(); uid >= 0 {
		ro.User = fmt.Sprintf("%d:%d", uid, gid)
	}
	bridge := d.network() == DockerBridgeNetwork
	if bridge {
		ports := []int{spec.Port, spec.BusPort}
		ro.PortBindings = map[dc.Port][]dc.PortBinding{}
		for _, p := range ports {
			cp := dc.Port(strconv.Itoa(p) + "/tcp")
			ro.ExposedPorts = append(ro.ExposedPorts, string(cp))
			ro.PortBindings[cp] = []dc.PortBinding{{HostIP: "0.0.0.0", HostPort: strconv.Itoa(p)}}
		}
	}
	hostConfig := func(hc *dc.HostConfig) {
		hc.PublishAllPorts = false
		hc.AutoRemove = false
		hc.RestartPolicy = dc.NeverRestart()
		if !bridge {
			hc.NetworkMode = "host"
		}
	}
	return ro, hostConfig
}

// splitImage splits "repo:tag" (the repository may name a registry with a
// port); no tag means "latest".
func splitImage(image string) (repo, tag string) {
	slash := strings.LastIndex(image, "/")
	if i := strings.LastIndex(image, ":"); i > slash {
		return image[:i], image[i+1:]
	}
	return image, "latest"
}

func (d *dockerProvider) announceIP(ctx context.Context, pool *dockertest.Pool) (string, error) {
	if d.network() != DockerBridgeNetwork {
		return "127.0.0.1", nil
	}
	if d.opts.AnnounceIP != "" {
		return d.opts.AnnounceIP, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gateway == "" {
		nw, err := pool.Client.NetworkInfo("bridge")
		if err != nil {
			return "", fmt.Errorf("testbench: Docker bridge network: %w", err)
		}
		for _, c := range nw.IPAM.Config {
			if ip := net.ParseIP(c.Gateway); ip != nil && ip.To4() != nil {
				d.gateway = c.Gateway
				break
			}
		}
		if d.gateway == "" {
			return "", errors.New("testbench: Docker bridge network has no IPv4 gateway; set DockerOptions.AnnounceIP")
		}
	}
	return d.gateway, nil
}

func (d *dockerProvider) Launch(ctx context.Context, spec Spec) (Instance, error) {
	pool, err := d.connect(ctx)
	if err != nil {
		return nil, err
	}
	ip, err := d.announceIP(ctx, pool)
	if err != nil {
		return nil, err
	}
	if err := writeConfig(spec, d.serverConfig(spec, ip)...); err != nil {
		return nil, fmt.Errorf("testbench: %w", err)
	}
	var suffix [4]byte
	rand.Read(suffix[:])
	name := fmt.Sprintf("ratelua-testbench-%s-%d-%s", spec.Kind, spec.Port, hex.EncodeToString(suffix[:]))
	ro, hc := d.runOptions(spec, name)
	res, err := pool.RunWithOptions(ro, hc)
	if err != nil {
		return nil, fmt.Errorf("testbench: run %s:%s for port %d: %w", ro.Repository, ro.Tag, spec.Port, err)
	}
	c := &container{
		pool:    pool,
		id:      res.Container.ID,
		name:    name,
		image:   ro.Repository + ":" + ro.Tag,
		addr:    net.JoinHostPort(ip, strconv.Itoa(spec.Port)),
		logFile: spec.LogFile,
	}
	c.watch()
	return c, nil
}

// container is a server in a Docker container.
type container struct {
	pool            *dockertest.Pool
	id, name, image string
	addr            string
	logFile         string
	mu              sync.Mutex
	done            chan struct{}
}

// watch closes a new done channel when the container's current run ends,
// after appending what the server wrote to stdout and stderr in that run
// (configuration errors, before it opened its log file) to the log file,
// as the process provider does.
func (c *container) watch() {
	done := make(chan struct{})
	c.mu.Lock()
	c.done = done
	c.mu.Unlock()
	since := time.Now().Add(-time.Second).Unix()
	go func() {
		defer close(done)
		c.pool.Client.WaitContainer(c.id)
		f, err := os.OpenFile(c.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return
		}
		defer f.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.pool.Client.Logs(dc.LogsOptions{
			Context:      ctx,
			Container:    c.id,
			OutputStream: f,
			ErrorStream:  f,
			Stdout:       true,
			Stderr:       true,
			Since:        since,
		})
	}()
}

func (c *container) Addr() string     { return c.addr }
func (c *container) Describe() string { return "container " + c.name + " (" + c.image + ")" }

func (c *container) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

func (c *container) Kill() error {
	done := c.Done()
	select {
	case <-done:
		return nil
	default:
	}
	if err := c.pool.Client.KillContainer(dc.KillContainerOptions{ID: c.id, Signal: dc.SIGKILL}); err != nil {
		var notRunning *dc.ContainerNotRunning
		if !errors.As(err, &notRunning) {
			return fmt.Errorf("testbench: kill %s: %w", c.Describe(), err)
		}
	}
	select {
	case <-done:
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("testbench: %s still runs %v after SIGKILL", c.Describe(), stopTimeout)
	}
}

func (c *container) Pause() error {
	if err := c.pool.Client.PauseContainer(c.id); err != nil {
		return fmt.Errorf("testbench: pause %s: %w", c.Describe(), err)
	}
	return nil
}

func (c *container) Resume() error {
	if err := c.pool.Client.UnpauseContainer(c.id); err != nil {
		return fmt.Errorf("testbench: unpause %s: %w", c.Describe(), err)
	}
	return nil
}

func (c *container) Start(ctx context.Context) error {
	if err := c.pool.Client.StartContainerWithContext(c.id, nil, ctx); err != nil {
		return fmt.Errorf("testbench: start %s: %w", c.Describe(), err)
	}
	c.watch()
	return nil
}

func (c *container) Remove() error {
	err := c.pool.Client.RemoveContainer(dc.RemoveContainerOptions{ID: c.id, Force: true, RemoveVolumes: true})
	var noSuch *dc.NoSuchContainer
	if err != nil && !errors.As(err, &noSuch) {
		return fmt.Errorf("testbench: remove %s: %w", c.Describe(), err)
	}
	return nil
}
