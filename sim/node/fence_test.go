package node

import (
	"strconv"
	"strings"
	"testing"
)

// TestClientKillFencesLatentBytes: a command whose bytes reach the node after its connection
// was killed never runs, while the same late bytes run on a connection nobody killed (the
// control): the latent execution a fence exists to stop. The answer counts the connections
// killed: 1, then 0 once the id is gone.
func TestClientKillFencesLatentBytes(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		n, env, old, ol := newTestNode(t, "")
		ctl := &Conn{}
		cl := &testLink{n: n, c: ctl}
		n.Accept(ctl, 9, cl)
		if fenced {
			cl.send("CLIENT", "KILL", "ID", strconv.FormatUint(uint64(old.ID()), 10))
			cl.send("CLIENT", "KILL", "ID", strconv.FormatUint(uint64(old.ID()), 10))
			n.Serve(ctl)
			if got := strings.Join(cl.replies(t), " | "); got != "int:1 | int:0" {
				t.Fatalf("kill answers: %s", got)
			}
			if old.Open() || ol.reset != "client-killed" {
				t.Fatalf("the killed connection is still open (reset %q)", ol.reset)
			}
		}
		// The old connection's SET arrives late (it was on the way, or buffered).
		ol.send("SET", "k", "late")
		n.Serve(old)
		ran := strings.Contains(strings.Join(env.applied, ","), "SET")
		if ran == fenced {
			t.Fatalf("fenced %v: the late SET ran %v (applied %v)", fenced, ran, env.applied)
		}
	}
}

// TestClientKillSyntax: only the ID filter is simulated; anything else is a syntax error, and a
// connection that kills itself is closed after the reply.
func TestClientKillSyntax(t *testing.T) {
	n, _, c, l := newTestNode(t, "")
	l.send("CLIENT", "KILL", "ADDR", "1.2.3.4:5")
	l.send("CLIENT", "KILL", "ID", "x")
	n.Serve(c)
	if got := strings.Join(l.replies(t), " | "); !strings.Contains(got, "syntax error") || !strings.Contains(got, "not an integer") {
		t.Fatalf("replies: %s", got)
	}
	l.send("CLIENT", "KILL", "ID", strconv.FormatUint(uint64(c.ID()), 10))
	n.Serve(c)
	if r := l.replies(t); len(r) != 1 || r[0] != "int:1" || !l.hungUp || c.Open() {
		t.Fatalf("self-kill: %v hung up %v", r, l.hungUp)
	}
}
