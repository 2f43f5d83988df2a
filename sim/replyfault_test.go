package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// TestSlowAndMalformedReplies: in the shipped scenario, a slow GET keeps the node busy (no
// command is applied while it is), its callers time out unknown; a malformed INCR reply costs
// the connection (a protocol failure) and the INCRs in flight end unknown, though applied.
func TestSlowAndMalformedReplies(t *testing.T) {
	sc := mustLoad(t, "../scenarios/slow-and-malformed-replies.yaml")
	res := run(t, sc, sc.Seed, true)
	var slow []time.Duration
	malformed := 0
	for _, l := range res.Trace {
		switch {
		case strings.Contains(l, " fault slow "):
			at, err := time.ParseDuration(strings.TrimPrefix(strings.Fields(l)[0], "t=") + "s")
			if err != nil {
				t.Fatal(err)
			}
			slow = append(slow, at)
		case strings.Contains(l, " fault malformed "):
			malformed++
		}
	}
	if len(slow) == 0 || malformed == 0 {
		t.Fatalf("%d slow GETs, %d malformed replies", len(slow), malformed)
	}
	// While a slow GET runs, the node applies nothing else.
	for _, s := range slow {
		for _, a := range res.Applies {
			if a.At > s && a.At < s+800*time.Millisecond {
				t.Fatalf("command %d applied at %v while a slow GET from %v kept the node busy", a.CmdID, a.At, s)
			}
		}
	}
	unknownGets := 0
	for _, op := range ops(res, 3*sec, 5*sec) {
		if op.Name == "GET" && op.Outcome == record.OpUnknown {
			unknownGets++
		}
	}
	if unknownGets == 0 {
		t.Fatal("no GET timed out behind the slow commands")
	}
	// The malformed replies cost connections, and only in their window.
	lost := steps(res, fsm.ConnLost, 8*sec, 9*sec+100*time.Millisecond)
	if len(lost) == 0 {
		t.Fatal("no connection lost to a malformed reply")
	}
	for _, s := range lost {
		if !strings.Contains(strings.ToLower(errText(s.Event)), "protocol") {
			t.Fatalf("loss %s is not a protocol failure", s.Event.String())
		}
	}
	applied := map[uint64]bool{}
	for _, a := range res.Applies {
		applied[a.CmdID] = true
	}
	unknownApplied := 0
	for _, op := range ops(res, 8*sec, 9*sec) {
		if op.Name == "INCR" && op.Outcome == record.OpUnknown && applied[op.ID] {
			unknownApplied++
		}
	}
	if unknownApplied == 0 {
		t.Fatal("no INCR applied behind a malformed reply ended unknown")
	}
}
