package clientaddr_test

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/ratelua/ratelua/internal/addrcases"
)

var (
	diffTime  = flag.Duration("clientaddr.fuzztime", 0, "run TestClientAddrDifferential for this long (0: -clientaddr.cases cases)")
	diffCases = flag.Int("clientaddr.cases", 3000, "the cases TestClientAddrDifferential runs when -clientaddr.fuzztime is 0")
	diffSeed  = flag.Uint64("clientaddr.seed", 0, "the seed of TestClientAddrDifferential's cases (0: from the clock, logged)")
)

// oracle is a Python or Node process answering cases (testdata/oracle.py,
// testdata/oracle.mjs): one JSON case a line in, one answer a line out.
type oracle struct {
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
}

// startOracle starts an oracle, or fails the test (skips it outside CI)
// when its interpreter is missing.
func startOracle(t *testing.T, name string, argv ...string) *oracle {
	t.Helper()
	if _, err := exec.LookPath(argv[0]); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s: %v; under CI=true a missing interpreter is a failure", name, err)
		}
		t.Skipf("%s: %v", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PYTHONIOENCODING=utf-8", "PYTHONDONTWRITEBYTECODE=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	return &oracle{name: name, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
}

// oracleAnswer is an oracle's answer: addrcases.Answer's fields, or the
// exception the oracle raised.
type oracleAnswer struct {
	Key       string                 `json:"key"`
	Error     *addrcases.OptionError `json:"error,omitempty"`
	Exception string                 `json:"exception,omitempty"`
}

// ask sends a batch of cases and reads as many answers.
func (o *oracle) ask(batch [][]byte) ([]oracleAnswer, error) {
	written := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(o.in, 1<<20)
		for _, line := range batch {
			w.Write(line)
			w.WriteByte('\n')
		}
		w.WriteString("{\"flush\":true}\n")
		written <- w.Flush()
	}()
	answers := make([]oracleAnswer, len(batch))
	for i := range batch {
		line, err := o.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: reading answer %d of %d: %w", o.name, i, len(batch), err)
		}
		if err := json.Unmarshal(line, &answers[i]); err != nil {
			return nil, fmt.Errorf("%s: answer %q: %w", o.name, line, err)
		}
	}
	if err := <-written; err != nil {
		return nil, fmt.Errorf("%s: writing: %w", o.name, err)
	}
	return answers, nil
}

// TestClientAddrDifferential is the differential fuzz of Go's clientaddr
// against the Python (ratelua.clientaddr) and Node (src/address.js)
// resolvers: random options, peers and field lines (addrcases.Gen), in batches
// through one Python and one Node process, every answer compared with
// Go's. make test runs -clientaddr.cases (3000); make fuzz-clientaddr
// FUZZTIME=60s runs it for a duration. A difference prints the case as a
// line of testdata/clientaddr.json: add it to addrcases.Named (internal/addrcases) when fixing it.
func TestClientAddrDifferential(t *testing.T) {
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		python = "python3"
	}
	oracles := []*oracle{
		startOracle(t, "python", python, "testdata/oracle.py"),
		startOracle(t, "node", "node", "testdata/oracle.mjs"),
	}
	seed := *diffSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-clientaddr.seed=%d repeats this run)", seed, seed)
	g := addrcases.NewGen(rand.New(rand.NewPCG(seed, 7239)))
	deadline := time.Now().Add(*diffTime)
	const batchSize = 500
	ran, differences := 0, 0
	for differences < 10 {
		if *diffTime > 0 && !time.Now().Before(deadline) || *diffTime == 0 && ran >= *diffCases {
			break
		}
		n := batchSize
		if *diffTime == 0 {
			n = min(n, *diffCases-ran)
		}
		cases := make([]addrcases.Input, n)
		wants := make([]addrcases.Answer, n)
		batch := make([][]byte, n)
		for i := range cases {
			cases[i] = g.Next()
			a, err := cases[i].Answer()
			if err != nil {
				t.Fatalf("Go: %v", err)
			}
			wants[i] = a
			if batch[i], err = json.Marshal(cases[i]); err != nil {
				t.Fatal(err)
			}
		}
		for _, o := range oracles {
			got, err := o.ask(batch)
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range got {
				want := oracleAnswer{Key: wants[i].Key, Error: wants[i].Error}
				if !reflect.DeepEqual(a, want) {
					differences++
					w, _ := json.Marshal(addrcases.Vector{Input: cases[i], Answer: wants[i]})
					t.Errorf("%s answers %+v, Go %+v (error %+v) to\n  %s", o.name, a, want, want.Error, w)
				}
			}
		}
		ran += n
	}
	t.Logf("%d cases, %d differences", ran, differences)
}
