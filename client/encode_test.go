package client

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/respire-go/respire/netio/resp"
)

// TestEncodeMatchesResp checks the typed commands' encoding helpers byte for byte against
// netio/resp's generic ones, across every length-header width and the integer edges.
func TestEncodeMatchesResp(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 11, 64, 99, 100, 101, 999, 1000, 12345} {
		s := strings.Repeat("x", n)
		if got, want := appendBulkArg([]byte("pre"), s), resp.AppendBulkString([]byte("pre"), s); !bytes.Equal(got, want) {
			t.Errorf("appendBulkArg(len %d) = %q, want %q", n, got, want)
		}
		if got, want := appendBulkArgBytes(nil, []byte(s)), resp.AppendBulk(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Errorf("appendBulkArgBytes(len %d) = %q, want %q", n, got, want)
		}
		if got, want := appendArrayHead(nil, n), resp.AppendArrayHeader(nil, n); !bytes.Equal(got, want) {
			t.Errorf("appendArrayHead(%d) = %q, want %q", n, got, want)
		}
	}
	for _, n := range []int64{math.MinInt64, -10, -1, 0, 1, 9, 10, 99, 100, math.MaxInt64} {
		if got, want := appendBulkArgInt(nil, n), resp.AppendBulkInt(nil, n); !bytes.Equal(got, want) {
			t.Errorf("appendBulkArgInt(%d) = %q, want %q", n, got, want)
		}
	}
	var b Batch
	b.Get("key:1")
	b.Set("key:1", strings.Repeat("v", 150))
	b.ObjectEncoding("k")
	want := resp.AppendCommand(nil, "GET", "key:1")
	want = resp.AppendCommand(want, "SET", "key:1", strings.Repeat("v", 150))
	want = resp.AppendCommand(want, "OBJECT", "ENCODING", "k")
	if !bytes.Equal(b.buf, want) {
		t.Errorf("frames %q, want %q", b.buf, want)
	}
}
