package harness

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/testbench"
)

// ReportEnv names the environment variable that holds the path of the
// case report: every package's TestMain appends its cases to that file,
// and make test prints their summary (cmd/casereport) after the run.
const ReportEnv = "RATELUA_CASES"

// The results a case can have.
const (
	Pass = "pass"
	Fail = "fail"
	Skip = "skip"
)

// Case is one line of the report: a case of a suite (the group it is
// counted in, such as "core" or "adapter go-redis"), on a server, and its
// result (Pass, Fail or Skip).
type Case struct {
	Suite  string
	Name   string
	Server Server
	Result string
}

// String is the case's line in the report, its four fields separated by
// tabs: "core\tTestX/redis\tredis 7.0.15 single (process)\tpass".
func (c Case) String() string {
	return strings.Join([]string{field(c.Suite), field(c.Name), field(c.Server.String()), field(c.Result)}, "\t")
}

// field keeps a value on one line and in one field.
func field(s string) string {
	return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
}

// Server is where a case ran: the server family and version, the
// topology ("single" or "cluster") and the testbench provider that runs
// it ("process", "docker <image>").
type Server struct {
	Kind     testbench.Kind
	Version  string
	Topology string
	Provider string
}

// Single is the server of a case on node n.
func Single(n *testbench.Node) Server {
	return Server{Kind: n.Kind, Version: n.Version, Topology: "single", Provider: n.Provider}
}

// OnCluster is the server of a case on cluster c (its first node's
// version and provider: a cluster's nodes share both).
func OnCluster(c *testbench.Cluster) Server {
	s := Server{Kind: c.Kind, Topology: "cluster"}
	if len(c.Nodes) > 0 {
		s.Version, s.Provider = c.Nodes[0].Version, c.Nodes[0].Provider
	}
	return s
}

// String is "redis 7.0.15 single (process)".
func (s Server) String() string {
	return fmt.Sprintf("%s %s %s (%s)", s.Kind, s.Version, s.Topology, s.Provider)
}

// Record counts tb as a case of suite on server: its result is recorded
// when tb ends (a case that fails or skips is reported as such, not left
// out). name is added to tb's name when one test runs several cases.
func (h *Harness) Record(tb testing.TB, suite, name string, server Server) {
	full := tb.Name()
	if name != "" {
		full += "/" + name
	}
	tb.Cleanup(func() {
		result := Pass
		switch {
		case tb.Failed():
			result = Fail
		case tb.Skipped():
			result = Skip
		}
		h.mu.Lock()
		h.cases = append(h.cases, Case{Suite: suite, Name: full, Server: server, Result: result})
		h.mu.Unlock()
	})
}

// Cases are the cases recorded so far, in the order they ended.
func (h *Harness) Cases() []Case {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.cases)
}

// AppendReport appends cases to the report at path, one line each, in
// one write, so that packages that run at once do not mix their lines.
func AppendReport(path string, cases []Case) error {
	var b strings.Builder
	for _, c := range cases {
		b.WriteString(c.String())
		b.WriteByte('\n')
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("append the case report: %w", err)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return fmt.Errorf("append the case report %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("append the case report %s: %w", path, err)
	}
	return nil
}

// ReadReport parses a report: one case per line, as Case.String writes
// them. A line that is not one names its number and what is wrong.
func ReadReport(r io.Reader) ([]Case, error) {
	var cases []Case
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		c, err := parseCase(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("case report line %d: %w", line, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the case report: %w", err)
	}
	return cases, nil
}

// parseCase parses one line of the report.
func parseCase(line string) (Case, error) {
	f := strings.Split(line, "\t")
	if len(f) != 4 {
		return Case{}, fmt.Errorf("%d fields, want 4 (suite, case, server, result): %q", len(f), line)
	}
	switch f[3] {
	case Pass, Fail, Skip:
	default:
		return Case{}, fmt.Errorf("result %q, want pass, fail or skip", f[3])
	}
	server, err := parseServer(f[2])
	if err != nil {
		return Case{}, err
	}
	if f[0] == "" || f[1] == "" {
		return Case{}, errors.New("an empty suite or case name")
	}
	return Case{Suite: f[0], Name: f[1], Server: server, Result: f[3]}, nil
}

// parseServer parses Server.String's "redis 7.0.15 single (process)".
func parseServer(s string) (Server, error) {
	head, provider, ok := strings.Cut(s, " (")
	w := strings.Fields(head)
	if !ok || !strings.HasSuffix(provider, ")") || len(w) != 3 || (w[2] != "single" && w[2] != "cluster") {
		return Server{}, fmt.Errorf("server %q, want \"<family> <version> single|cluster (<provider>)\"", s)
	}
	return Server{Kind: testbench.Kind(w[0]), Version: w[1], Topology: w[2], Provider: strings.TrimSuffix(provider, ")")}, nil
}

// Summarize counts the cases per suite and server, one line each, in the
// order of the suites' names, then the families' (Families), then single
// before cluster:
//
//	core: redis 7.0.15 single (process): 91 passed
//	middleware: valkey 8.0.1 cluster (process): 10 passed, 1 failed, 2 skipped
func Summarize(cases []Case) string {
	type group struct {
		suite  string
		server Server
	}
	counts := map[group]map[string]int{}
	var groups []group
	for _, c := range cases {
		g := group{c.Suite, c.Server}
		if counts[g] == nil {
			counts[g] = map[string]int{}
			groups = append(groups, g)
		}
		counts[g][c.Result]++
	}
	rank := func(k testbench.Kind) int {
		if i := slices.Index(Families(), k); i >= 0 {
			return i
		}
		return len(Families())
	}
	slices.SortFunc(groups, func(a, b group) int {
		if a.suite != b.suite {
			return strings.Compare(a.suite, b.suite)
		}
		if ra, rb := rank(a.server.Kind), rank(b.server.Kind); ra != rb {
			return ra - rb
		}
		if a.server.Topology != b.server.Topology {
			return strings.Compare(b.server.Topology, a.server.Topology) // single, then cluster
		}
		return strings.Compare(a.server.String(), b.server.String())
	})
	var b strings.Builder
	for _, g := range groups {
		n := counts[g]
		fmt.Fprintf(&b, "%s: %s: %d passed", g.suite, g.server, n[Pass])
		if n[Fail] > 0 {
			fmt.Fprintf(&b, ", %d failed", n[Fail])
		}
		if n[Skip] > 0 {
			fmt.Fprintf(&b, ", %d skipped", n[Skip])
		}
		b.WriteByte('\n')
	}
	return b.String()
}
