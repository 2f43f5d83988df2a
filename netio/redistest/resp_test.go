package redistest

import (
	"bufio"
	"strings"
	"testing"
)

func TestReadReply(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"+OK\r\n", "OK"},
		{"-ERR bad\r\n", "(error) ERR bad"},
		{":42\r\n", "42"},
		{"$5\r\nhello\r\n", "hello"},
		{"$0\r\n\r\n", ""},
		{"$-1\r\n", "(nil)"},
		{"*-1\r\n", "(nil)"},
		{"*0\r\n", "(empty array)"},
		{"*2\r\n$1\r\na\r\n:1\r\n", "a\n1"},
		{"*2\r\n*1\r\n+x\r\n$2\r\nyz\r\n", "x\nyz"},
		{"$4\r\na\r\nb\r\n", "a\r\nb"},
		// RESP3
		{"_\r\n", "(nil)"},
		{"#t\r\n", "1"},
		{",3.5\r\n", "3.5"},
		{"(123456789012345678901234567890\r\n", "123456789012345678901234567890"},
		{"=8\r\ntxt:abcd\r\n", "abcd"},
		{"!9\r\nERR oops!\r\n", "(error) ERR oops!"},
		{"%1\r\n+k\r\n:1\r\n", "k\n1"},
		{"~1\r\n+m\r\n", "m"},
		{">2\r\n+message\r\n+hi\r\n", "message\nhi"},
		{"|1\r\n+ttl\r\n:3\r\n+value\r\n", "value"},
	} {
		r, err := readReply(bufio.NewReader(strings.NewReader(tc.in)))
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := r.String(); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"", "+OK\n", "?x\r\n", ":x\r\n", "$3\r\nab\r\n", "$3\r\nabcd\r\n", "*1\r\n"} {
		if r, err := readReply(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("%q: no error, got %q", bad, r.String())
		}
	}
}

func TestWriteCommand(t *testing.T) {
	var b strings.Builder
	w := bufio.NewWriter(&b)
	if err := writeCommand(w, []string{"SET", "k", "a b\r\n"}); err != nil {
		t.Fatal(err)
	}
	if want := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\na b\r\n\r\n"; b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
}

func TestQuoteConfig(t *testing.T) {
	if got, want := quoteConfig("a \"b\" \\c\n\x01é"), `"a \"b\" \\c\x0a\x01\xc3\xa9"`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestLastLines(t *testing.T) {
	if got := lastLines("a\nb\nc\n", 2); got != "b\nc" {
		t.Fatalf("got %q", got)
	}
	if got := lastLines("a\n", 5); got != "a" {
		t.Fatalf("got %q", got)
	}
}
