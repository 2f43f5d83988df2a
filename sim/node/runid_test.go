package node

import (
	"strings"
	"testing"
)

// TestRunIDInInfo: a node answers INFO with its run id, NodeID of its name at first; a restart
// as a new process (NewRunID) gives a new one each time, the same in every run.
func TestRunIDInInfo(t *testing.T) {
	n, _, c, l := newTestNode(t, "")
	info := func() string {
		t.Helper()
		l.send("INFO", "server")
		n.Serve(c)
		raw := string(l.out)
		if r := l.replies(t); len(r) != 1 || !strings.Contains(raw, "run_id:"+n.RunID()+"\r\n") {
			t.Fatalf("INFO: %q", raw)
		}
		return raw
	}
	first := info()
	if !strings.Contains(first, "run_id:"+NodeID("r1")) {
		t.Fatalf("first process: %s", first)
	}
	if info() != first {
		t.Fatal("the run id changed without a restart")
	}
	n.NewRunID()
	second := info()
	n.NewRunID()
	third := info()
	if second == first || third == second || third == first {
		t.Fatalf("each new process needs its own run id: %s / %s / %s", first, second, third)
	}
	m, _, mc, ml := newTestNode(t, "")
	m.NewRunID()
	ml.send("INFO")
	m.Serve(mc)
	if raw := string(ml.out); raw != second {
		t.Fatalf("the new run id must be deterministic: %q, want %q", raw, second)
	}
}
