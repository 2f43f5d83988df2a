package sim

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// TestReplicaBlockingReadLoss: every blocking read rents from a replica, whose connection
// answered ROLE before the XREAD was written on it; the reads waiting on r2 when it dies end
// unknown and are never written again; while r2 is down the reads rent from r3, and r2 takes
// reads again after its restart; after r2's promotion a connection rented from it fails its
// ROLE check and no read is written on r2. The run passes every checker (dedicated-no-resend and the
// pool model of each replica's pool among them).
func TestReplicaBlockingReadLoss(t *testing.T) {
	sc := mustLoad(t, "../scenarios/replica-blocking-read-loss.yaml")
	res, err := Run(sc, sc.Seed, RunOptions{KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	v := check.Judge(res)
	if !v.Pass() {
		t.Fatalf("violations %v, missing %v", v.Unexpected, v.Missing)
	}
	nodes := connNodesOf(res)
	checked := map[uint64]time.Duration{} // the connections whose ROLE check passed, and when
	for _, l := range grepTrace(res, "dop role") {
		if strings.Contains(l, "err=") {
			continue
		}
		f := strings.Fields(l)
		at, _ := time.ParseDuration(strings.TrimPrefix(f[0], "t=") + "s")
		for _, x := range f {
			if c, ok := strings.CutPrefix(x, "conn="); ok {
				id, _ := strconv.ParseUint(c, 10, 64)
				if _, seen := checked[id]; !seen {
					checked[id] = at
				}
			}
		}
	}
	sends := map[uint64][]record.Send{}
	for _, s := range res.Sends {
		sends[s.CmdID] = append(sends[s.CmdID], s)
	}
	byNode := map[string]int{}
	lost, during, back := 0, 0, 0
	for _, op := range res.Dedicated {
		for _, c := range op.Cmds {
			if c.Name != "XREAD" {
				continue
			}
			for _, s := range sends[c.ID] {
				node := nodes[uint64(s.Conn)]
				byNode[node]++
				if at, ok := checked[uint64(s.Conn)]; !ok || at > s.At || record.CandidateOf(s.Conn) == 0 {
					t.Errorf("op %d: XREAD on conn %d (%s) at %v without a passed ROLE check before it", op.ID, s.Conn, node, s.At)
				}
				switch {
				case node == "r2" && s.At < 3*time.Second && op.Outcome == record.DedicatedUnknown:
					lost++
				case s.At > 3100*time.Millisecond && s.At < 5*time.Second:
					if node != "r3" {
						t.Errorf("op %d: XREAD on %s at %v while r2 is down: want r3", op.ID, node, s.At)
					}
					during++
				case node == "r2" && s.At > 5*time.Second && s.At < 8500*time.Millisecond:
					back++
				case node == "r2" && s.At >= 8500*time.Millisecond:
					t.Errorf("op %d: XREAD on r2 at %v, after its promotion", op.ID, s.At)
				}
			}
		}
	}
	// After r2's promotion, a connection rented from it failed its ROLE check (the router had
	// not revalidated r2 yet) and was discarded; the read went to r3.
	rejected := false
	for _, l := range grepTrace(res, "dop role") {
		rejected = rejected || (strings.Contains(l, "err=") && strings.HasPrefix(l, "t=8."))
	}
	if !rejected {
		t.Error("no ROLE check failed after r2's promotion: the scenario does not exercise the rejection")
	}
	if byNode["r1"] != 0 || lost == 0 || during == 0 || back == 0 {
		t.Fatalf("XREADs by node %v; %d lost with r2, %d while it was down, %d on r2 after its restart: want none on r1 and each of the others",
			byNode, lost, during, back)
	}
}

// TestReplicaBlockingReadResendPlant: a blocking read on a replica whose connection died,
// written again on a new connection by the resend-blocking plant, fails dedicated-no-resend;
// the control passes.
func TestReplicaBlockingReadResendPlant(t *testing.T) {
	for _, planted := range []bool{false, true} {
		sc := mustLoad(t, "../scenarios/replica-blocking-read-loss.yaml")
		if planted {
			sc.Plant = []scenario.Plant{scenario.PlantResendBlocking}
		}
		res, err := Run(sc, sc.Seed, RunOptions{KeepTrace: true})
		if err != nil {
			t.Fatal(err)
		}
		failed := false
		for _, x := range check.Judge(res).Unexpected {
			failed = failed || x.Checker == check.CheckDedicatedNoResend
		}
		fired := len(grepTrace(res, "plant resend-blocking")) > 0
		if failed != planted || fired != planted {
			t.Errorf("planted %v: the plant fired %v, dedicated-no-resend failed %v", planted, fired, failed)
		}
	}
}

// TestReplicaBlockingReadDeterministic: the same seed gives the same trace.
func TestReplicaBlockingReadDeterministic(t *testing.T) {
	sc := mustLoad(t, "../scenarios/replica-blocking-read-loss.yaml")
	a, err := Run(sc, 9, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(sc, 9, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.TraceHash != b.TraceHash {
		t.Fatalf("trace hashes %x and %x for one seed", a.TraceHash, b.TraceHash)
	}
}
