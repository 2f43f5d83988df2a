package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// sendsByEngine counts the workload's reads and writes sent on connections of the primary's
// engine (key "primary") and of each replica's engine (key: its node), in [from, to).
func sendsByEngine(res *record.Result, from, to time.Duration) (reads, writes map[string]int) {
	nodes := connNodesOf(res)
	ops := map[uint64]*record.Op{}
	for i := range res.Ops {
		ops[res.Ops[i].ID] = &res.Ops[i]
	}
	reads, writes = map[string]int{}, map[string]int{}
	for _, s := range res.Sends {
		op := ops[s.CmdID]
		if op == nil || s.At < from || s.At >= to {
			continue
		}
		key := "primary"
		if record.CandidateOf(s.Conn) > 0 {
			key = nodes[uint64(s.Conn)]
		}
		if op.Name == "GET" || op.Name == "MGET" {
			reads[key]++
		} else {
			writes[key]++
		}
	}
	return reads, writes
}

func connNodesOf(res *record.Result) map[uint64]string {
	out := map[uint64]string{}
	for _, d := range res.Dials {
		n, _, _ := strings.Cut(d.Endpoint, ":")
		out[uint64(d.Conn)] = n
	}
	return out
}

// TestSentinelReplicaReads: the replicas the Sentinels name take the reads, through engines of
// their own, and the writes stay on the primary's engine; after the failover that promotes r2,
// the client's next SENTINEL REPLICAS answer names r1 and r3, a new router takes the reads,
// and r1, the old primary, serves reads as a replica while r2 serves none; the run passes every
// checker, the replica ones among them.
func TestSentinelReplicaReads(t *testing.T) {
	sc := mustLoad(t, "../scenarios/sentinel-replica-reads.yaml")
	res, err := Run(sc, sc.Seed, RunOptions{KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	v := check.Judge(res)
	if !v.Pass() {
		t.Fatalf("violations %v, missing %v", v.Unexpected, v.Missing)
	}
	checked := map[string]bool{}
	for _, n := range v.Checked {
		checked[n] = true
	}
	for _, n := range []string{scenario.CheckReplicaNoWrite, scenario.CheckReplicaPolicy, scenario.CheckReplicaReplay, check.CheckReplicaWrites} {
		if !checked[n] {
			t.Errorf("checker %s did not run", n)
		}
	}
	before, wBefore := sendsByEngine(res, 0, 5*time.Second)
	if before["r2"] == 0 || before["r3"] == 0 || before["r1"] != 0 {
		t.Errorf("reads by engine before the failover %v: want r2 and r3, not r1", before)
	}
	if before["primary"]*10 > before["r2"]+before["r3"] {
		t.Errorf("reads by engine before the failover %v: want at most one in ten on the primary", before)
	}
	if len(wBefore) != 1 || wBefore["primary"] == 0 {
		t.Errorf("writes by engine before the failover %v: want the primary's engine only", wBefore)
	}
	// From two refresh intervals after the failover, r2 (the primary now) takes no read, and
	// r1 (a replica now) takes reads on a replica engine.
	after, wAfter := sendsByEngine(res, 6*time.Second, res.End)
	if after["r2"] != 0 || after["r1"] == 0 || after["r3"] == 0 {
		t.Errorf("reads by engine after the failover %v: want r1 and r3, not r2", after)
	}
	if len(wAfter) != 1 || wAfter["primary"] == 0 {
		t.Errorf("writes by engine after the failover %v: want the primary's engine only", wAfter)
	}
	applied := map[string]int{}
	for _, a := range res.Applies {
		if a.At >= 6*time.Second {
			applied[a.Node]++
		}
	}
	if applied["r2"] == 0 {
		t.Errorf("applies after the failover by node %v: want r2, the new primary", applied)
	}
	if len(res.RouterConfigs) < 2 {
		t.Fatalf("%d router generations: want one before and one after the failover", len(res.RouterConfigs))
	}
	answers := strings.Join(grepTrace(res, "replicas answer"), "\n")
	for _, want := range []string{"replica=r2:6379 replica=r3:6379", "replica=r1:6379 replica=r3:6379"} {
		if !strings.Contains(answers, want) {
			t.Errorf("no SENTINEL REPLICAS answer naming %s in:\n%s", want, answers)
		}
	}
}

// grepTrace returns the trace lines that contain s.
func grepTrace(res *record.Result, s string) []string {
	var out []string
	for _, l := range res.Trace {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// TestSentinelReplicaReadsPlants: the replica checkers judge a run whose replicas the
// Sentinels name. A write sent on a replica's engine fails replica-no-write; under Replica, a
// read a router sent to a replica but the application sent to the primary fails
// replica-policy. Each control passes without its plant.
func TestSentinelReplicaReadsPlants(t *testing.T) {
	for _, c := range []struct {
		plant   scenario.Plant
		policy  string
		checker string
	}{
		{scenario.PlantReplicaWrite, "ReplicaPreferred", scenario.CheckReplicaNoWrite},
		{scenario.PlantReplicaReadOnPrimary, "Replica", scenario.CheckReplicaPolicy},
	} {
		for _, planted := range []bool{false, true} {
			sc := mustLoad(t, "../scenarios/sentinel-replica-reads.yaml")
			sc.Client.ReadFrom = c.policy
			sc.Expect.Linearizable = false
			if planted {
				sc.Plant = []scenario.Plant{c.plant}
			}
			res, err := Run(sc, sc.Seed, RunOptions{KeepTrace: true})
			if err != nil {
				t.Fatal(err)
			}
			failed := false
			for _, x := range check.Judge(res).Unexpected {
				failed = failed || x.Checker == c.checker
			}
			fired := len(grepTrace(res, "plant "+string(c.plant))) > 0
			if planted && (!fired || !failed) {
				t.Errorf("plant %s: fired %v, %s failed %v: want both", c.plant, fired, c.checker, failed)
			}
			if !planted && failed {
				t.Errorf("%s failed without its plant (%s)", c.checker, c.policy)
			}
		}
	}
}

// TestSentinelReplicaReadsDeterministic: the same seed gives the same trace, for each
// scenario of Sentinel replica reads.
func TestSentinelReplicaReadsDeterministic(t *testing.T) {
	for _, path := range []string{"../scenarios/sentinel-replica-reads.yaml", "../scenarios/sentinel-replica-view.yaml"} {
		sc := mustLoad(t, path)
		a, err := Run(sc, 5, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Run(sc, 5, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a.TraceHash != b.TraceHash {
			t.Fatalf("%s: trace hashes %x and %x for one seed", path, a.TraceHash, b.TraceHash)
		}
	}
}
