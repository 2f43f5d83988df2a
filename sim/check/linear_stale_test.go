package check

import (
	"testing"
	"time"

	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// staleRun returns a synthetic run with a primary r1 and a replica r2 whose link goes down at
// 10ms for the rest of the run: SET k=v1 (op 1) before, SET k=v2 (op 2) after, both applied
// on r1; then reads, ops, applied as applies say.
func staleRun(t *testing.T, reads []record.Op, applies []record.Apply) *record.Result {
	t.Helper()
	sc, err := scenario.Parse([]byte("name: x\nduration: 1s\ntopology:\n  nodes: [{id: r1}, {id: r2}]\n" +
		"  replication: {replicas: [{id: r2}]}\nclient: {read_from: Replica}\n" +
		"replica_events: [{at: 10ms, link_down: r2}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	ops := append([]record.Op{setOp(1, 0, "k", "v1", ms(0), ms(2)), setOp(2, 0, "k", "v2", ms(20), ms(22))}, reads...)
	all := append([]record.Apply{{Node: "r1", CmdID: 1, At: ms(1)}, {Node: "r1", CmdID: 2, At: ms(21)}}, applies...)
	return &record.Result{Scenario: sc, End: time.Second, Ops: ops, Applies: all}
}

// TestStaleReadPinnedToItsCopy: a read a replica served from the copy it took when its link went
// down is explained by that copy's state alone. Returning v1 (the state at 10ms) passes; v2,
// written after the copy was taken, fails: the copy cannot hold it. The rule before this one
// (any state from the link's loss until the read's return) let v2 through.
func TestStaleReadPinnedToItsCopy(t *testing.T) {
	read := func(val string) []record.Op { return []record.Op{getOp(3, "k", val, ms(30), ms(32))} }
	onR2 := []record.Apply{{Node: "r2", CmdID: 3, At: ms(31)}}
	if v := (Linearizable{}).Check(staleRun(t, read("v1"), onR2)); len(v) != 0 {
		t.Fatalf("a stale read of the copy's state: %s", names(v))
	}
	if s := staleReads(staleRun(t, read("v2"), onR2)); !s[3].pinned || s[3].from != ms(10) {
		t.Fatalf("the read is not pinned to its copy's instant: %+v", s)
	}
	expectViolations(t, Linearizable{}, staleRun(t, read("v2"), onR2), `key k: op 3 get(k) -> "v2"`)
}

// TestLostHedgeIsNoStaleRead: a hedged read whose reply came from the primary before its hedge
// ran on the stale replica is an ordinary read, held to linearizability at its own call and
// return: returning v1 after v2 completed is a violation. The rule before this one called it a
// stale read for the hedge that lost, and let it through.
func TestLostHedgeIsNoStaleRead(t *testing.T) {
	reads := []record.Op{getOp(3, "k", "v1", ms(30), ms(32))}
	applies := []record.Apply{{Node: "r1", CmdID: 3, At: ms(31)}, {Node: "r2", CmdID: 3, At: ms(33)}}
	if s := staleReads(staleRun(t, reads, applies)); len(s) != 0 {
		t.Fatalf("a hedge that ran after its read returned made it stale: %+v", s)
	}
	expectViolations(t, Linearizable{}, staleRun(t, reads, applies), `key k: op 3 get(k) -> "v1"`)
	// Both executions before the return, with different replies: either may be the one seen,
	// so the read keeps the wide window (from the link's loss), which admits v1.
	applies[1].At = ms(31)
	r := staleRun(t, reads, applies)
	r.Served = []record.ReplyRecord{{CmdID: 3, Conn: 1, Digest: 1}, {CmdID: 3, Conn: 2, Digest: 2}}
	r.Applies[2].Conn, r.Applies[3].Conn = 1, 2
	if s := staleReads(r); s[3].pinned || s[3].from != ms(10) {
		t.Fatalf("a read served by both copies before its return: %+v", s)
	}
	if v := (Linearizable{}).Check(r); len(v) != 0 {
		t.Fatalf("a read either copy may have answered: %s", names(v))
	}
}

// TestIllegalPartsBudget: the checks a report runs after a failed check list the keys porcupine
// proves illegal within one budget shared among the keys (a key left undecided is not
// listed), so that a report never runs porcupine without end.
func TestIllegalPartsBudget(t *testing.T) {
	reads := []record.Op{getOp(3, "k", "v1", ms(30), ms(32))}
	r := staleRun(t, reads, []record.Apply{{Node: "r1", CmdID: 3, At: ms(31)}})
	if keys := IllegalKeys(r); len(keys) != 1 || keys[0] != "k" {
		t.Fatalf("want key k illegal, got %v", keys)
	}
	defer func(b time.Duration) { illegalBudget = b }(illegalBudget)
	illegalBudget = 0
	if keys := IllegalKeys(r); len(keys) != 0 {
		t.Fatalf("with no budget left, want no key checked, got %v", keys)
	}
}
