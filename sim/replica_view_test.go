package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// readsByView counts the reads sent in [from, to) by the view's callers (view true) or the
// others, on the primary's engine (key "primary") and on each replica's engine (its node).
func readsByView(res *record.Result, from, to time.Duration) (view, rest map[string]int) {
	nodes := connNodesOf(res)
	ops := map[uint64]*record.Op{}
	for i := range res.Ops {
		ops[res.Ops[i].ID] = &res.Ops[i]
	}
	callers := res.Scenario.Workload.View.Callers
	view, rest = map[string]int{}, map[string]int{}
	for _, s := range res.Sends {
		op := ops[s.CmdID]
		if op == nil || s.At < from || s.At >= to || (op.Name != "GET" && op.Name != "MGET") {
			continue
		}
		key := "primary"
		if record.CandidateOf(s.Conn) > 0 {
			key = nodes[uint64(s.Conn)]
		}
		if op.Caller < callers {
			view[key]++
		} else {
			rest[key]++
		}
	}
	return view, rest
}

// TestReplicaViewPolicies: the view's callers read from the replicas only, the other callers
// from the primary only, on one client; while r2 is down the view's reads go to r3. The run
// passes every checker, replica-policy among them, which holds each read to its caller's
// policy: the view's reads on replicas would fail it under the client's Primary.
func TestReplicaViewPolicies(t *testing.T) {
	sc := mustLoad(t, "../scenarios/replica-view-policies.yaml")
	res, err := Run(sc, sc.Seed, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations %v, missing %v", v.Unexpected, v.Missing)
	}
	view, rest := readsByView(res, 0, res.End)
	if view["primary"] != 0 || view["r2"] == 0 || view["r3"] == 0 {
		t.Errorf("the view's reads by engine %v: want r2 and r3 only", view)
	}
	if len(rest) != 1 || rest["primary"] == 0 {
		t.Errorf("the other callers' reads by engine %v: want the primary's only", rest)
	}
	down, _ := readsByView(res, 5*time.Second+100*time.Millisecond, 8*time.Second)
	if len(down) != 1 || down["r3"] == 0 {
		t.Errorf("the view's reads while r2 is down %v: want r3 only", down)
	}
}

// TestReplicaViewPlant: a view read the router sent to a replica but the application sent to
// the primary fails replica-policy, which takes the read's policy from its caller; the control
// passes.
func TestReplicaViewPlant(t *testing.T) {
	for _, planted := range []bool{false, true} {
		sc := mustLoad(t, "../scenarios/replica-view-policies.yaml")
		sc.Expect.Linearizable = false
		if planted {
			sc.Plant = []scenario.Plant{scenario.PlantReplicaReadOnPrimary}
		}
		res, err := Run(sc, sc.Seed, RunOptions{KeepTrace: true})
		if err != nil {
			t.Fatal(err)
		}
		failed := false
		for _, x := range check.Judge(res).Unexpected {
			failed = failed || x.Checker == scenario.CheckReplicaPolicy
		}
		fired := len(grepTrace(res, "plant "+string(scenario.PlantReplicaReadOnPrimary))) > 0
		if failed != planted || fired != planted {
			t.Errorf("planted %v: the plant fired %v, replica-policy failed %v", planted, fired, failed)
		}
	}
}

// TestSentinelReplicaView: a Sentinel client whose default is Primary asks the Sentinels for
// replicas only when its view's first read needs them (the workload starts at 1 s); the view's
// reads go to the replicas, the others to the primary, and after r3's promotion the view reads
// from r1 and r2.
func TestSentinelReplicaView(t *testing.T) {
	sc := mustLoad(t, "../scenarios/sentinel-replica-view.yaml")
	res, err := Run(sc, sc.Seed, RunOptions{KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations %v, missing %v", v.Unexpected, v.Missing)
	}
	refreshes := grepTrace(res, "replicas refresh")
	if len(refreshes) == 0 || !strings.HasPrefix(refreshes[0], "t=1.") {
		t.Fatalf("first replica refresh %q: want one, when the view's first read came (1 s)", refreshes)
	}
	view, rest := readsByView(res, 0, 5*time.Second)
	if view["r2"] == 0 || view["r3"] == 0 || view["r1"] != 0 {
		t.Errorf("the view's reads before the failover %v: want r2 and r3", view)
	}
	if len(rest) != 1 || rest["primary"] == 0 {
		t.Errorf("the other callers' reads %v: want the primary's only", rest)
	}
	after, _ := readsByView(res, 6*time.Second, res.End)
	if after["r3"] != 0 || after["r1"] == 0 || after["r2"] == 0 {
		t.Errorf("the view's reads after the failover %v: want r1 and r2, not r3", after)
	}
}
