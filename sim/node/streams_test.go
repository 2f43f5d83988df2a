package node

import (
	"strings"
	"testing"
	"time"
)

// TestNodeXRead: XREAD finds no stream; without BLOCK it answers a null array at once, with
// BLOCK it blocks the connection (the next request waits) until its timeout, and a malformed
// one is refused.
func TestNodeXRead(t *testing.T) {
	n, env, c, l := newTestNode(t, "")
	l.send("XREAD", "COUNT", "1", "STREAMS", "s", "$")
	n.Serve(c)
	if r := l.replies(t); len(r) != 1 || r[0] != "null" {
		t.Fatalf("XREAD without BLOCK: %v", r)
	}
	l.send("XREAD", "BLOCK", "250", "STREAMS", "s", "$")
	l.send("PING")
	n.Serve(c)
	if len(l.out) != 0 {
		t.Fatal("XREAD BLOCK on an empty stream answered at once")
	}
	env.fire(250 * time.Millisecond)
	if r := l.replies(t); len(r) != 2 || r[0] != "null" || r[1] != `simple:"PONG"` {
		t.Fatalf("XREAD BLOCK timeout, then PING: %v", r)
	}
	for _, args := range [][]string{{"XREAD", "STREAMS", "s"}, {"XREAD", "BLOCK", "x", "STREAMS", "s", "$"},
		{"XREAD", "BLOCK", "-1", "STREAMS", "s", "$"}, {"XREAD", "COUNT", "1", "s", "$"}, {"XREAD", "STREAMS", "a", "b", "$"}} {
		l.send(args...)
		n.Serve(c)
		if r := l.replies(t); len(r) != 1 || !strings.Contains(r[0], "ERR") {
			t.Errorf("%v: %v, want an error", args, r)
		}
	}
}
