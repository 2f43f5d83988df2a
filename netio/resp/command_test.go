package resp

import (
	"errors"
	"strings"
	"testing"
)

func TestParseCommandValid(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", []string{"SET", "key", "value"}},
		{"*1\r\n$4\r\nPING\r\n", []string{"PING"}},
		{"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", []string{"ECHO", ""}},
		{"*2\r\n$3\r\nGET\r\n$4\r\na\r\nb\r\n", []string{"GET", "a\r\nb"}},
		{"*0\r\n", []string{}},
		{"*-1\r\n", []string{}},
		{"PING\r\n", []string{"PING"}},
		{"PING\n", []string{"PING"}},
		{"set  k\tv \r\n", []string{"set", "k", "v"}},
		{"\r\n", []string{}},
		{"\n", []string{}},
		{"   \t \r\n", []string{}},
		{"$3 x\r\n", []string{"$3", "x"}},
		{"GET a\rb\r\n", []string{"GET", "a\rb"}},
	}
	for _, tc := range cases {
		args := [][]byte{[]byte("stale")}
		n, err := ParseCommand([]byte(tc.in+"+trailing"), &args, nil)
		if err != nil || n != len(tc.in) {
			t.Errorf("ParseCommand(%q) = %d, %v", tc.in, n, err)
			continue
		}
		if got := argStrings(args); strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("ParseCommand(%q) args = %q, want %q", tc.in, got, tc.want)
		}
		// Every proper prefix is incomplete and leaves args alone.
		for i := range len(tc.in) {
			before := [][]byte{[]byte("keep")}
			if n, err := ParseCommand([]byte(tc.in[:i]), &before, nil); err != ErrIncomplete || n != 0 {
				t.Errorf("prefix %q: %d, %v", tc.in[:i], n, err)
			}
			if len(before) != 1 || string(before[0]) != "keep" {
				t.Errorf("prefix %q changed args", tc.in[:i])
			}
		}
	}
}

func TestParseCommandMalformed(t *testing.T) {
	cases := []struct {
		in     string
		lim    *Limits
		limit  string
		offset int64
	}{
		{"*1\r\n:1\r\n", nil, "", 4},
		{"*1\r\n+PING\r\n", nil, "", 4},
		{"*1\r\n$-1\r\n", nil, "", 5},
		{"*1\r\n$x\r\n", nil, "", 5},
		{"*x\r\n", nil, "", 1},
		{"*-2\r\n", nil, "", 1},
		{"*\r\n", nil, "", 1},
		{"*1\n", nil, "", 2},
		{"*1\r\n$3\r\nabcd\r\n", nil, "", 11},
		{"*1\r\n$99999999999999999999\r\n", nil, "", 5},
		{"*2\r\n$1\r\na\r\n$1\r\nb\r\r", nil, "", 16},
		{"*3\r\n", &Limits{MaxElements: 2}, "MaxElements", 1},
		{"*2000000000\r\n", nil, "MaxElements", 1},
		{"*1\r\n$5\r\n", &Limits{MaxBulkLen: 4}, "MaxBulkLen", 5},
		{"*1\r\n$600000000\r\n", nil, "MaxBulkLen", 5},
		{"*1\r\n$10\r\n", &Limits{MaxReplyLen: 16}, "MaxReplyLen", 4},
		{"a b c\r\n", &Limits{MaxElements: 2}, "MaxElements", 0},
		{"PINGPING", &Limits{MaxLineLen: 6}, "MaxLineLen", 0},
		{"PINGPIN\r\n", &Limits{MaxLineLen: 6}, "MaxLineLen", 0},
		{"PINGPIN\n", &Limits{MaxLineLen: 6}, "MaxLineLen", 0},
	}
	for _, tc := range cases {
		args := [][]byte{[]byte("keep")}
		n, err := ParseCommand([]byte(tc.in), &args, tc.lim)
		var pe *ProtocolError
		if !errors.As(err, &pe) || n != 0 {
			t.Errorf("ParseCommand(%q) = %d, %v; want a ProtocolError", tc.in, n, err)
			continue
		}
		if pe.Limit != tc.limit || pe.Offset != tc.offset {
			t.Errorf("ParseCommand(%q): Limit %q Offset %d, want %q %d (%v)", tc.in, pe.Limit, pe.Offset, tc.limit, tc.offset, err)
		}
		if len(args) != 1 || string(args[0]) != "keep" {
			t.Errorf("ParseCommand(%q) changed args on error", tc.in)
		}
	}
	// Exactly at the limits is fine.
	var args [][]byte
	if _, err := ParseCommand([]byte("PINGPI\r\n"), &args, &Limits{MaxLineLen: 6}); err != nil {
		t.Errorf("inline at MaxLineLen: %v", err)
	}
	if _, err := ParseCommand([]byte("a b\r\n"), &args, &Limits{MaxElements: 2}); err != nil {
		t.Errorf("inline at MaxElements: %v", err)
	}
}

// TestParseCommandHostile checks a huge announced count or length costs
// nothing until the data arrives.
func TestParseCommandHostile(t *testing.T) {
	big := &Limits{MaxElements: 1 << 40, MaxBulkLen: 1 << 40, MaxReplyLen: 1 << 40}
	for _, in := range []string{"*99999999\r\n$3\r\nSET\r\n", "*2\r\n$3\r\nSET\r\n$2000000000\r\nabc"} {
		buf := []byte(in)
		var args [][]byte
		allocs := testing.AllocsPerRun(20, func() {
			if n, err := ParseCommand(buf, &args, big); err != ErrIncomplete || n != 0 {
				t.Fatalf("%q: %d, %v", in, n, err)
			}
		})
		if allocs != 0 || args != nil {
			t.Errorf("%q: %.0f allocations, args %v", in, allocs, args)
		}
	}
}

func TestParseCommandReuse(t *testing.T) {
	buf := AppendCommand(nil, "SET", "key", "value")
	var args [][]byte
	if _, err := ParseCommand(buf, &args, nil); err != nil {
		t.Fatal(err)
	}
	first := &args[2][0]
	// Arguments do not alias buf.
	for i := range buf {
		buf[i] = 'Z'
	}
	if got := argStrings(args); got[2] != "value" {
		t.Fatalf("args alias the input: %q", got)
	}
	// A shorter command keeps the longer one's slot buffers for later.
	if _, err := ParseCommand([]byte("PING\r\n"), &args, nil); err != nil || len(args) != 1 {
		t.Fatal(err)
	}
	buf = AppendCommand(nil, "SET", "abc", "vvvvv")
	if _, err := ParseCommand(buf, &args, nil); err != nil {
		t.Fatal(err)
	}
	if &args[2][0] != first {
		t.Error("slot buffer not reused")
	}
	if got := argStrings(args); strings.Join(got, " ") != "SET abc vvvvv" {
		t.Errorf("got %q", got)
	}
}
