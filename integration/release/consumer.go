package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Consumer is a user's module outside the repository that installs the
// released modules from a file-system proxy.
type Consumer struct {
	// Proxy is the folder WriteProxy wrote.
	Proxy string
	// Work is an empty folder outside the repository. The modules go in
	// Work/get1... and Work/consumer, the binaries in Work/bin, and the
	// module cache and GOPATH in Work/gopath, so every module is
	// downloaded afresh.
	Work string
	// Modules are the tree's modules; the released ones are installed.
	Modules []Module
	// Version is the release version installed, e.g. "v0.1.0".
	Version string
	// Go is the go command; "" is "go" from PATH.
	Go string
	// Log receives each command run and its output; nil discards them.
	Log io.Writer
}

// Run does what a user does: for each released nested module, go get of
// it alone at Version in a new module; then, in one more module, a
// program importing every package of the release (Packages), go get of
// every released module at Version, go mod tidy, go build of the program,
// go vet, and a run of the program; last, go install <command>@Version of
// every command of every released module (Commands), outside any module,
// and a run of each installed binary with --help, which must succeed and
// print its usage.
//
// GOPROXY is the proxy followed by the machine's GOPROXY (go env
// GOPROXY), so the other dependencies come from where they always do;
// GONOSUMDB names the root module's path, since our zips are not in the
// checksum database (GOPRIVATE would bypass the proxy). The first command
// that fails ends the run with an error holding its output.
func (c Consumer) Run(ctx context.Context) error {
	if len(c.Modules) == 0 {
		return errors.New("consumer: no modules")
	}
	gocmd := c.Go
	if gocmd == "" {
		gocmd = "go"
	}
	log := c.Log
	if log == nil {
		log = io.Discard
	}
	pkgs, err := Packages(c.Modules)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	main, err := ConsumerMain(pkgs, c.Version)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	env, err := c.env(ctx, gocmd)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	bin := filepath.Join(c.Work, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	run := func(dir string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir, cmd.Env = dir, env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		fmt.Fprintf(log, "$ cd %s && %s  # %s\n%s", filepath.Base(dir), strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out)
		if err != nil {
			return string(out), fmt.Errorf("consumer: %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	module := func(name string) (string, error) {
		dir := filepath.Join(c.Work, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("consumer: %w", err)
		}
		_, err := run(dir, gocmd, "mod", "init", "example.com/"+name)
		return dir, err
	}
	// A user gets one adapter alone: each released nested module in a
	// module of its own, so a requirement lower than the release (hidden
	// below when the root is got at the release version) is resolved too.
	released := Released(c.Modules)
	for i, m := range released[1:] {
		dir, err := module(fmt.Sprintf("get%d", i+1))
		if err != nil {
			return err
		}
		if _, err := run(dir, gocmd, "get", m.Path+"@"+c.Version); err != nil {
			return err
		}
	}
	// Then all of them in one program.
	dir, err := module("consumer")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), main, 0o644); err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	get := []string{gocmd, "get"}
	for _, m := range released {
		get = append(get, m.Path+"@"+c.Version)
	}
	cmds, err := Commands(c.Modules)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	// -trimpath keys the build cache by module path and version rather
	// than by folder: the module cache is new on every run, and without it
	// every run would compile every dependency again.
	for _, args := range [][]string{
		get,
		{gocmd, "mod", "tidy"},
		{gocmd, "build", "-trimpath", "-o", filepath.Join(bin, "consumer"), "."},
		{gocmd, "vet", "-trimpath", "."},
	} {
		if _, err := run(dir, args...); err != nil {
			return err
		}
	}
	out, err := run(dir, filepath.Join(bin, "consumer"))
	if err != nil {
		return err
	}
	if !strings.HasPrefix(out, "consumer: ") {
		return fmt.Errorf("consumer: the program printed %q", out)
	}
	// go install pkg@version builds the command's own module at that
	// version, outside the consumer's module; it refuses a go.mod with a
	// replace directive.
	for _, cmd := range cmds {
		if _, err := run(c.Work, gocmd, "install", "-trimpath", cmd.ImportPath+"@"+c.Version); err != nil {
			return err
		}
		name := path.Base(cmd.ImportPath)
		out, err := run(c.Work, filepath.Join(bin, name), "--help")
		if err != nil {
			return err
		}
		if !strings.Contains(strings.ToLower(out), "usage") {
			return fmt.Errorf("consumer: %s --help printed no usage:\n%s", name, out)
		}
	}
	return nil
}

// env is the consumer's environment: the machine's, with the Go settings
// of a user who installs from the proxy into an empty module cache.
func (c Consumer) env(ctx context.Context, gocmd string) ([]string, error) {
	machine, err := goEnv(ctx, gocmd, "GOPROXY", "GOSUMDB", "GOCACHE")
	if err != nil {
		return nil, err
	}
	proxy, err := ProxyURL(c.Proxy)
	if err != nil {
		return nil, err
	}
	if machine[0] != "" {
		proxy += "," + machine[0]
	}
	gopath := filepath.Join(c.Work, "gopath")
	set := map[string]string{
		"GOPROXY":    proxy,
		"GOSUMDB":    machine[1],
		"GOCACHE":    machine[2],
		"GONOSUMDB":  c.Modules[0].Path,
		"GOPATH":     gopath,
		"GOMODCACHE": filepath.Join(gopath, "pkg", "mod"),
		"GOFLAGS":    "-modcacherw",
		"GOBIN":      filepath.Join(c.Work, "bin"),
		// The user's go env file could name the repository in GOPRIVATE
		// or GONOPROXY; every setting that matters is set here instead.
		"GOENV":       "off",
		"GOWORK":      "off",
		"GOTOOLCHAIN": "local",
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; ok || k == "GOPRIVATE" || k == "GONOPROXY" || k == "GONOSUMCHECK" {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env, nil
}

// goEnv returns the values of the named go env settings.
func goEnv(ctx context.Context, gocmd string, names ...string) ([]string, error) {
	cmd := exec.CommandContext(ctx, gocmd, append([]string{"env"}, names...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go env %s: %w: %s", strings.Join(names, " "), err, stderr.Bytes())
	}
	vals := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(vals) != len(names) {
		return nil, fmt.Errorf("go env %s: %d lines, want %d", strings.Join(names, " "), len(vals), len(names))
	}
	return vals, nil
}
