package sim

import (
	"strings"
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// TestWrongKindReplies: in the shipped scenario, the node answers INCR (3 s to 4 s), then GET
// (7 s to 8 s), with a well-formed reply of the wrong kind. Each such command ran on the node and
// ends unknown with the protocol error of its misfit; its connection is lost with that error; a
// pipeline that meets one ends unknown past the replies it kept; nothing is replayed (the
// scenario's invariants). Without the workload's reply shapes no command would misfit, and the
// first checks fail.
func TestWrongKindReplies(t *testing.T) {
	sc := mustLoad(t, "../scenarios/wrong-kind-replies.yaml")
	res := run(t, sc, sc.Seed, true)
	faulted := map[string]int{}
	for _, l := range res.Trace {
		if strings.Contains(l, " fault wrong-kind ") {
			f := strings.Fields(l)
			faulted[f[len(f)-1]]++
		}
	}
	if faulted["INCR"] == 0 || faulted["GET"] == 0 {
		t.Fatalf("wrong-kind replies written: %v, want INCRs and GETs", faulted)
	}
	applied := map[uint64]bool{}
	for _, a := range res.Applies {
		applied[a.CmdID] = true
	}
	// A misfit's own command ends with the bare protocol error (wire.CompleteMisfit); the others
	// in flight on its connection end with the connection's error, which wraps it.
	misfits, behind := map[string]int{}, 0
	for _, op := range res.Ops {
		switch {
		case !strings.Contains(op.Err, "does not fit"):
			continue
		case strings.Contains(op.Err, ": read: "):
			if op.Outcome == record.OpOK {
				t.Fatalf("op %d (%s) ended ok with its connection's failure: %s", op.ID, op.Name, op.Err)
			}
			behind++
			continue
		}
		if !strings.HasSuffix(op.Err, "does not fit "+op.Name) {
			t.Fatalf("op %d (%s) ended with another command's misfit: %s", op.ID, op.Name, op.Err)
		}
		if op.Outcome != record.OpUnknown || !applied[op.ID] {
			t.Fatalf("op %d (%s): %s, applied %v: a misfit ran on the node, its outcome must be unknown", op.ID, op.Name, op.Outcome, applied[op.ID])
		}
		in := (op.Name == "INCR" && op.Call >= 3*sec && op.Call < 4*sec) || (op.Name == "GET" && op.Call >= 7*sec && op.Call < 8*sec)
		if !in {
			t.Fatalf("op %d (%s at %v) misfit outside its fault's window: %s", op.ID, op.Name, op.Call, op.Err)
		}
		misfits[op.Name]++
	}
	if misfits["INCR"] == 0 || misfits["GET"] == 0 {
		t.Fatalf("commands that ended with their misfit: %v, want INCRs and GETs", misfits)
	}
	pipelines := 0
	for _, b := range res.Batches {
		if strings.Contains(b.Err, "does not fit") {
			if !b.Unknown || b.Replied >= len(b.Cmds) {
				t.Fatalf("batch %d met a misfit but ended %s (replied %d of %d, unknown %v)", b.ID, b.Outcome, b.Replied, len(b.Cmds), b.Unknown)
			}
			pipelines++
		}
	}
	if pipelines == 0 {
		t.Fatal("no pipeline met a wrong-kind reply")
	}
	lost := 0
	for _, s := range res.Steps {
		if s.Event.Kind == fsm.ConnLost && strings.Contains(errText(s.Event), "does not fit") {
			lost++
		}
	}
	if lost == 0 {
		t.Fatal("no connection lost to a misfit")
	}
	t.Logf("wrong-kind replies %v; misfit commands %v, %d others ended with their connection; pipelines %d; connections lost %d",
		faulted, misfits, behind, pipelines, lost)
}
