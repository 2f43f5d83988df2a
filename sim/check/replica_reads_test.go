package check

import (
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// replicaRun returns the records of a synthetic run with a primary r1 and a replica r2:
// conn 1 is the primary engine's connection to r1, conn 2 the replica engine's to r2.
func replicaRun(t *testing.T, client string) *record.Result {
	t.Helper()
	sc, err := scenario.Parse([]byte("name: x\nduration: 10s\ntopology:\n  nodes: [{id: r1}, {id: r2}]\n" +
		"  replication: {replicas: [{id: r2}]}\nclient: " + client + "\n" +
		"replica_events: [{at: 5s, promote: r2}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	return &record.Result{Scenario: sc, End: 10 * time.Second,
		Dials: []record.Dial{{Conn: 1, Endpoint: "r1:6379"}, {Conn: replicaConn(), Endpoint: "r2:6379"}},
		Ops:   []record.Op{{ID: 1, Name: "SET"}, {ID: 2, Name: "GET"}, {ID: 3, Name: "GET"}}}
}

// replicaConn is connection 2 of replica 1's engine, as the runner numbers it.
func replicaConn() fsm.ConnID { return fsm.ConnID(record.GenOffset(record.CandidateGenBase+1) + 2) }

func names(v []Violation) string {
	var out []string
	for _, x := range v {
		out = append(out, x.Checker+": "+x.Message)
	}
	return strings.Join(out, "; ")
}

// TestReplicaNoWriteRules: a write sent on a replica engine's connection, and a write applied
// on a node that was not the primary then, are violations; a read on a replica and a write
// applied on the promoted node after its promotion are not.
func TestReplicaNoWriteRules(t *testing.T) {
	r := replicaRun(t, "{read_from: Replica}")
	r.Sends = []record.Send{{CmdID: 1, Conn: 1}, {CmdID: 2, Conn: replicaConn()}}
	r.Applies = []record.Apply{{Node: "r1", CmdID: 1, At: time.Second}, {Node: "r2", CmdID: 2, At: time.Second},
		{Node: "r2", CmdID: 1, At: 6 * time.Second}}
	if v := (ReplicaNoWrite{}).Check(r); len(v) != 0 {
		t.Fatalf("clean records: %s", names(v))
	}
	r.Sends = append(r.Sends, record.Send{CmdID: 1, Conn: replicaConn()})
	r.Applies = append(r.Applies, record.Apply{Node: "r2", CmdID: 1, At: 2 * time.Second})
	if v := (ReplicaNoWrite{}).Check(r); len(v) != 2 {
		t.Fatalf("a write sent to the replica engine and one applied on a replica: %s", names(v))
	}
	// The no-replay checker sees the write sent on two engines' connections.
	if v := (NoReplay{}).Check(r); len(v) == 0 {
		t.Fatal("no-replay missed a write sent on the primary's and a replica's engine")
	}
}

// TestReplicaPolicyRules: under Replica a read on the primary's engine is a violation, under
// Primary a read on a replica's.
func TestReplicaPolicyRules(t *testing.T) {
	r := replicaRun(t, "{read_from: Replica}")
	r.Sends = []record.Send{{CmdID: 1, Conn: 1}, {CmdID: 2, Conn: replicaConn()}}
	if v := (ReplicaPolicy{}).Check(r); len(v) != 0 {
		t.Fatalf("clean records: %s", names(v))
	}
	r.Sends = append(r.Sends, record.Send{CmdID: 3, Conn: 1})
	if v := (ReplicaPolicy{}).Check(r); len(v) != 1 {
		t.Fatalf("a Replica read on the primary: %s", names(v))
	}
	p := replicaRun(t, "{read_from: Primary}")
	p.Sends = []record.Send{{CmdID: 2, Conn: replicaConn()}}
	if v := (ReplicaPolicy{}).Check(p); len(v) != 1 {
		t.Fatalf("a Primary read on a replica: %s", names(v))
	}
}

// TestReplicaHedgeRules: the router may hedge only a watched read, once, within the budget;
// a command sent twice must be a read on two candidates, with hedging on.
func TestReplicaHedgeRules(t *testing.T) {
	r := replicaRun(t, "{read_from: PrimaryPreferred, hedged_reads: {maximum_extra_load_percent: 50}}")
	watch := func(id fsm.ReadID) record.RouterStep {
		return record.RouterStep{Event: fsm.RouterEvent{Kind: fsm.ReadStarted, Read: id, Hedgeable: true, Policy: fsm.ReadPrimaryPreferred},
			Effects: []fsm.RouterEffect{{Kind: fsm.RouteRead, Read: id, Watched: true}}}
	}
	hedge := func(id fsm.ReadID) record.RouterStep {
		return record.RouterStep{Effects: []fsm.RouterEffect{{Kind: fsm.SendHedge, Read: id, Target: 1}}}
	}
	r.Router = []record.RouterStep{watch(1), watch(2), hedge(2)}
	r.Sends = []record.Send{{CmdID: 2, Conn: 1}, {CmdID: 2, Conn: replicaConn()}}
	if v := (ReplicaHedges{}).Check(r); len(v) != 0 {
		t.Fatalf("one hedge for two watched reads at 50%%: %s", names(v))
	}
	if v := (NoReplay{}).Check(r); len(v) != 0 {
		t.Fatalf("no-replay flagged a hedged read: %s", names(v))
	}
	for name, steps := range map[string][]record.RouterStep{
		"unwatched": {watch(1), watch(2), hedge(3)},
		"twice":     {watch(1), watch(2), watch(3), watch(4), hedge(2), hedge(2)},
		"budget":    {watch(1), hedge(1)},
	} {
		r.Router = steps
		if v := (ReplicaHedges{}).Check(r); len(v) == 0 {
			t.Errorf("%s: no violation", name)
		}
	}
	r.Router = []record.RouterStep{watch(1), watch(2), hedge(2)}
	r.Sends = []record.Send{{CmdID: 1, Conn: 1}, {CmdID: 1, Conn: replicaConn()}}
	if v := (ReplicaHedges{}).Check(r); len(v) == 0 {
		t.Error("a write sent twice passed as a hedge")
	}
	r.Sends = []record.Send{{CmdID: 2, Conn: 1}, {CmdID: 2, Conn: 1}}
	if v := (ReplicaHedges{}).Check(r); len(v) == 0 {
		t.Error("a read sent twice to the same candidate passed as a hedge")
	}
	off := replicaRun(t, "{read_from: PrimaryPreferred}")
	off.Sends = []record.Send{{CmdID: 2, Conn: 1}, {CmdID: 2, Conn: replicaConn()}}
	if v := (NoReplay{}).Check(off); len(v) == 0 {
		t.Error("without hedging, no-replay let a read sent twice through")
	}
}
