package luatest

import (
	"testing"
)

func evalString(t *testing.T, src string) string {
	t.Helper()
	e := New(Options{})
	res, err := e.Run(src, nil, nil)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	s, ok := res.Reply.(string)
	if !ok {
		t.Fatalf("%s: reply %#v is not a string", src, res.Reply)
	}
	return s
}

func TestStringFormat(t *testing.T) {
	tests := []struct{ args, want string }{
		{`'%.17g', 0.1`, "0.10000000000000001"},
		{`'%.17g', 1e16`, "10000000000000000"},
		{`'%.17g', 1e17`, "1e+17"},
		{`'%.14g', 2^53`, "9.007199254741e+15"},
		{`'%d', 2^53`, "9007199254740992"},
		{`'%d', -3.9`, "-3"},
		{`'%i', 7`, "7"},
		{`'%5.2f', 3.14159`, " 3.14"},
		{`'%-5d|', 42`, "42   |"},
		{`'%05d', -42`, "-0042"},
		{`'%+d % d', 5, 5`, "+5  5"},
		{`'%.3d', 5`, "005"},
		{`'%x %X %#x %o %#o', 255, 255, 255, 8, 8`, "ff FF 0xff 10 010"},
		{`'%x', -1`, "ffffffffffffffff"},
		{`'%u', 3`, "3"},
		{`'%c%c', 72, 105`, "Hi"},
		{`'%e', 12345.678`, "1.234568e+04"},
		{`'%E', 0.000123`, "1.230000E-04"},
		{`'%g', 100000`, "100000"},
		{`'%g', 1000000`, "1e+06"},
		{`'%g', 0.0001`, "0.0001"},
		{`'%g', 0.00001`, "1e-05"},
		{`'%G', 1e-10`, "1E-10"},
		{`'%#g', 1`, "1.00000"},
		{`'%g', 1/0`, "inf"},
		{`'%f', -1/0`, "-inf"},
		{`'%s|%5s|%-5s|%.2s', 'abc', 'ab', 'ab', 'abc'`, "abc|   ab|ab   |ab"},
		{`'%s', 0.1`, "0.1"},
		{`'%s', 2^53`, "9.007199254741e+15"},
		{`'%q', 'a"b\\c\n'`, "\"a\\\"b\\\\c\\\n\""},
		{`'100%%'`, "100%"},
		{`'%10.3f|', 2.5`, "     2.500|"},
	}
	for _, tt := range tests {
		if got := evalString(t, `return string.format(`+tt.args+`)`); got != tt.want {
			t.Errorf("string.format(%s) = %q, want %q", tt.args, got, tt.want)
		}
	}
	// method-call syntax uses the same implementation
	if got := evalString(t, `return ('%.17g'):format(0.1)`); got != "0.10000000000000001" {
		t.Errorf("method format = %q", got)
	}
}

func TestStringFormatErrors(t *testing.T) {
	for _, src := range []string{
		`return string.format('%y', 1)`,
		`return string.format('%d')`,
		`return string.format('%d', 'x')`,
		`return string.format('%123d', 1)`,
	} {
		e := New(Options{})
		if _, err := e.Run(src, nil, nil); err == nil {
			t.Errorf("%s: want error", src)
		}
	}
}

func TestToString(t *testing.T) {
	tests := []struct{ expr, want string }{
		{`2^53`, "9.007199254741e+15"},
		{`0.1`, "0.1"},
		{`1/3`, "0.33333333333333"},
		{`10`, "10"},
		{`-0.5`, "-0.5"},
		{`1e100`, "1e+100"},
		{`1/0`, "inf"},
		{`'s'`, "s"},
		{`nil`, "nil"},
		{`true`, "true"},
	}
	for _, tt := range tests {
		if got := evalString(t, `return tostring(`+tt.expr+`)`); got != tt.want {
			t.Errorf("tostring(%s) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}
