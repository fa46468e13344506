package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeAmbient are the names README.md's Go fragments use without
// declaring them (the surroundings a reader has), declared at package
// level in the compiled file.
const readmeAmbient = `
var (
	ctx          context.Context
	client       rueidis.Client
	per5s        ratelua.Window
	perHour      ratelua.Window
	logins       *ratelua.Limiter
	tokens       *ratelua.Limiter
	perPeer      *ratelua.Limiter
	accountID    string
	remoteIP     string
	mux          *http.ServeMux
	loginHandler http.Handler
	tooMany      func(time.Duration) error
)
`

// readmeImports are the packages a README block may name, by identifier.
var readmeImports = map[string]string{
	"context": "context", "fmt": "fmt", "log": "log", "time": "time", "http": "net/http", "testing": "testing",
	"ratelua": "github.com/ratelua/ratelua", "embedded": "github.com/ratelua/ratelua/embedded",
	"ratehttp": "github.com/ratelua/ratelua/ratehttp", "rategrpc": "github.com/ratelua/ratelua/rategrpc",
	"rateotel": "github.com/ratelua/ratelua/rateotel", "goredis": "github.com/ratelua/ratelua/goredis",
	"valkeygo": "github.com/ratelua/ratelua/valkeygo", "ratemini": "github.com/ratelua/ratelua/ratemini",
	"rueidis": "github.com/redis/rueidis", "redis": "github.com/redis/go-redis/v9",
	"valkey": "github.com/valkey-io/valkey-go", "grpc": "google.golang.org/grpc",
	"miniredis": "github.com/alicebob/miniredis/v2",
}

// TestReadmeGoBlocks compiles (go vet) every ```go block of README.md, as
// a reader would paste it: a block that starts with "package" as it is, a
// block of declarations (func ...) at package level, and any other block
// as the body of a function returning error, beside the names it uses
// from its surroundings (readmeAmbient). The blocks build in a module of
// their own that requires every module of the tree, replaced by its
// folder; an unused variable, a name declared twice or an API that
// changed fails.
func TestReadmeGoBlocks(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```\n").FindAllStringSubmatch(string(raw), -1)
	if len(blocks) < 5 {
		t.Fatalf("README.md: %d Go blocks found, want at least 5", len(blocks))
	}
	dir := t.TempDir()
	var mod strings.Builder
	mod.WriteString("module readmeblocks\n\ngo 1.25.0\n\nrequire (\n")
	var replaces strings.Builder
	for _, m := range []string{"", "goredis", "valkeygo", "ratemini", "rategrpc", "rateotel", "testbench"} {
		path := strings.TrimSuffix("github.com/ratelua/ratelua/"+m, "/")
		fmt.Fprintf(&mod, "\t%s v0.1.0\n", path)
		fmt.Fprintf(&replaces, "replace %s => %s\n", path, filepath.Join(root, m))
	}
	mod.WriteString(")\n\n" + replaces.String())
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", mod.String())
	ident := regexp.MustCompile(`\b([a-z]+)\.[A-Z]`)
	for i, b := range blocks {
		body := b[1]
		pkg := fmt.Sprintf("block%02d", i+1)
		var file string
		switch {
		case regexp.MustCompile(`(?m)^package `).MatchString(body):
			file = body
		default:
			uses := map[string]bool{}
			for _, m := range ident.FindAllStringSubmatch(body+readmeAmbient, -1) {
				if _, ok := readmeImports[m[1]]; ok {
					uses[m[1]] = true
				}
			}
			var src strings.Builder
			src.WriteString("package " + pkg + "\n\nimport (\n")
			for id := range uses {
				fmt.Fprintf(&src, "\t%q\n", readmeImports[id])
			}
			src.WriteString(")\n" + readmeAmbient + "\n")
			if topLevel(body) {
				src.WriteString(body)
			} else {
				src.WriteString("func block() error {\n" + body + "\treturn nil\n}\n")
			}
			file = src.String()
		}
		name := pkg + "/block.go"
		if strings.Contains(file, "func Test") {
			name = pkg + "/block_test.go"
		}
		write(name, file)
	}
	cmd := exec.Command(goTool, "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOPROXY=off", "GOSUMDB=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("README.md's Go blocks do not build: %v\n%s", err, out)
		for i, b := range blocks {
			t.Logf("block%02d:\n%s", i+1, b[1])
		}
	}
}

// topLevel reports whether a block is declarations: every line that is not
// indented opens a func, closes one, is a comment or is empty.
func topLevel(body string) bool {
	for _, line := range strings.Split(body, "\n") {
		if line != "" && !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, "func ") && line != "}" && !strings.HasPrefix(line, "//") {
			return false
		}
	}
	return true
}
