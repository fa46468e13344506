package testbench

import (
	"bufio"
	"reflect"
	"strings"
	"testing"
)

func TestReadReply(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
	}{
		{"+OK\r\n", "OK"},
		{"-ERR wrong\r\n", ReplyError("ERR wrong")},
		{":-42\r\n", int64(-42)},
		{"$3\r\nf\no\r\n", "f\no"},
		{"$0\r\n\r\n", ""},
		{"$-1\r\n", nil},
		{"*-1\r\n", nil},
		{"*0\r\n", []any{}},
		{"*3\r\n$1\r\na\r\n:1\r\n-MOVED 1 127.0.0.1:7000\r\n", []any{"a", int64(1), ReplyError("MOVED 1 127.0.0.1:7000")}},
		{"*2\r\n*1\r\n+x\r\n$-1\r\n", []any{[]any{"x"}, nil}},
		// RESP3, after HELLO 3
		{"_\r\n", nil},
		{"#t\r\n", true},
		{",1.5\r\n", 1.5},
		{"(123456789012345678901234567890\r\n", "123456789012345678901234567890"},
		{"=7\r\ntxt:abc\r\n", "abc"},
		{"%2\r\n+a\r\n:1\r\n$1\r\nb\r\n*1\r\n:2\r\n", map[string]any{"a": int64(1), "b": []any{int64(2)}}},
		{"~1\r\n+m\r\n", []any{"m"}},
		{"!5\r\nERR x\r\n", ReplyError("ERR x")},
		{"|1\r\n+k\r\n+v\r\n:7\r\n", int64(7)},
	} {
		got, err := readReply(bufio.NewReader(strings.NewReader(tc.in)))
		if err != nil {
			t.Errorf("readReply(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("readReply(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
	for _, in := range []string{"", "+OK\n", "?x\r\n", ":x\r\n", "$5\r\nab\r\n", "*2\r\n:1\r\n"} {
		if got, err := readReply(bufio.NewReader(strings.NewReader(in))); err == nil {
			t.Errorf("readReply(%q) = %#v, want an error", in, got)
		}
	}
	if p := ReplyError("BUSYKEY Target key name already exists.").Prefix(); p != "BUSYKEY" {
		t.Errorf("Prefix() = %q", p)
	}
}

func TestParseClusterNodes(t *testing.T) {
	text := "07c3 127.0.0.1:30004@40004,host-a slave e7d1 0 1426238317239 4 connected\n" +
		"67ed 127.0.0.1:30002@40002 master,fail? - 1426238316232 1426238316232 2 connected 5461-10922 [10923->-292f]\n" +
		"292f 127.0.0.1:30003@40003 myself,master - 0 0 3 connected 10923 10925-16383 [10924-<-67ed]\n"
	entries, err := parseClusterNodes(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("%d entries", len(entries))
	}
	e := entries[0]
	if e.id != "07c3" || e.addr != "127.0.0.1:30004" || !e.flags["slave"] || e.master != "e7d1" || e.link != "connected" || len(e.slots) != 0 {
		t.Errorf("replica entry: %+v", e)
	}
	e = entries[1]
	if !e.flags["fail?"] || e.master != "" || !reflect.DeepEqual(e.slots, [][2]int{{5461, 10922}}) || !e.migrating {
		t.Errorf("master entry: %+v", e)
	}
	e = entries[2]
	if !e.flags["myself"] || !reflect.DeepEqual(e.slots, [][2]int{{10923, 10923}, {10925, 16383}}) || !e.migrating {
		t.Errorf("myself entry: %+v", e)
	}
	if _, err := parseClusterNodes("abc 127.0.0.1:1@2 master - 0 0 1 connected x-y"); err == nil {
		t.Error("bad slot accepted")
	}
}

func TestParseClusterSlots(t *testing.T) {
	reply := []any{
		[]any{int64(0), int64(5460),
			[]any{"127.0.0.1", int64(30001), "m1", []any{}},
			[]any{"127.0.0.1", int64(30004), "r1", []any{}}},
		[]any{int64(5461), int64(10922), []any{"127.0.0.1", int64(30002), "m2"}},
	}
	got, err := parseClusterSlots(reply)
	if err != nil {
		t.Fatal(err)
	}
	want := []slotRange{
		{0, 5460, slotNode{"127.0.0.1:30001", "m1"}, []slotNode{{"127.0.0.1:30004", "r1"}}},
		{5461, 10922, slotNode{"127.0.0.1:30002", "m2"}, nil},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseClusterSlots = %+v, want %+v", got, want)
	}
}

func TestRelevantLine(t *testing.T) {
	lines := []string{"", "*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***", "Reading the configuration file, at line 11", ">>> 'maxmemory banana'", "argument must be a memory value"}
	if got, want := relevantLine(lines), "argument must be a memory value: 'maxmemory banana'"; got != want {
		t.Errorf("relevantLine = %q, want %q", got, want)
	}
	lines = []string{"1:M * Server initialized", "1:M # Warning: Could not create server TCP listening socket 127.0.0.1:7000: bind: Address already in use", "1:M # Failed listening on port 7000 (tcp), aborting."}
	if got := relevantLine(lines); !strings.Contains(got, "Failed listening") {
		t.Errorf("relevantLine = %q", got)
	}
}
