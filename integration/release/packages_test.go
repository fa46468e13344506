package release

import (
	"fmt"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

func TestPackagesAreWhatAUserImportsOrInstalls(t *testing.T) {
	_, mods := findSample(t, sample())
	pkgs, err := Packages(mods)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pkgs {
		got = append(got, fmt.Sprintf("%s %s %v %s %v", p.ImportPath, p.Name, p.Command, p.Symbol, p.IsType))
	}
	want := []string{
		"example.com/r r false New false",
		"example.com/r/cmd/tool main true  false",
		"example.com/r/ad ad false T true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Packages =\n%s\nwant (no internal, example, testdata or unreleased package; generic G passed over)\n%s",
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestConsumerMainUsesEveryPackage(t *testing.T) {
	src, err := ConsumerMain([]Package{
		{ImportPath: "example.com/r", Name: "r", Symbol: "New"},
		{ImportPath: "example.com/r/ad", Name: "ad", Symbol: "T", IsType: true},
		{ImportPath: "example.com/r/other/ad", Name: "ad", Symbol: "V"},
		{ImportPath: "example.com/r/fmt", Name: "fmt", Symbol: "F"},
		{ImportPath: "example.com/r/quiet", Name: "quiet"},
		{ImportPath: "example.com/r/cmd/tool", Name: "main", Command: true},
	}, "v0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "main.go", src, 0); err != nil {
		t.Fatalf("the program does not parse: %v\n%s", err, src)
	}
	for _, want := range []string{
		`r "example.com/r"`, `_ = r.New`,
		`ad "example.com/r/ad"`, `_ *ad.T`,
		`ad2 "example.com/r/other/ad"`, `_ = ad2.V`,
		`fmt2 "example.com/r/fmt"`, `_ = fmt2.F`,
		`_ "example.com/r/quiet"`,
		`consumer: 5 packages of ratelua v0.1.0`,
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("the program lacks %q:\n%s", want, src)
		}
	}
	if strings.Contains(string(src), "cmd/tool") {
		t.Errorf("the program imports a command:\n%s", src)
	}
}
