package generate

import (
	"fmt"
	"strings"
)

// excerptLines is how many lines of each side an excerpt shows from the
// first line that differs.
const excerptLines = 2

// Excerpt shows where got (the file on disk) and want (what the generator
// makes) first differ: the line number, a line of context before it, then
// up to excerptLines lines of each side, "-" for got and "+" for want, each
// cut to 160 bytes around the first byte where the first lines differ.
func Excerpt(got, want string) string {
	g, w := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	col := 0
	if i < len(g) && i < len(w) {
		for col < len(g[i]) && col < len(w[i]) && g[i][col] == w[i][col] {
			col++
		}
	}
	from := max(0, col-60)
	var b strings.Builder
	fmt.Fprintf(&b, "  first difference at line %d, byte %d (%d lines on disk, %d generated)\n", i+1, col+1, lines(got), lines(want))
	if i > 0 {
		fmt.Fprintf(&b, "   %s\n", cut(g[i-1], 0))
	}
	for _, side := range []struct {
		mark  string
		lines []string
	}{{"-", g}, {"+", w}} {
		for j := i; j < len(side.lines) && j < i+excerptLines; j++ {
			if side.lines[j] == "" {
				continue // after a final newline
			}
			at := 0
			if j == i {
				at = from
			}
			fmt.Fprintf(&b, "  %s%s\n", side.mark, cut(side.lines[j], at))
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func lines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// cut returns a line without its newline from byte from, at most 160
// bytes, quoted when it holds bytes a terminal would not show as they are.
func cut(line string, from int) string {
	line = strings.TrimSuffix(line, "\n")
	if from > 0 && from < len(line) {
		line = "..." + line[from:]
	}
	if len(line) > 160 {
		line = line[:160] + "..."
	}
	for _, r := range line {
		if r < ' ' && r != '\t' || r == 0x7f || r == 0xfffd {
			return fmt.Sprintf("%q", line)
		}
	}
	return line
}
