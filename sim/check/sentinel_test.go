package check

import (
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// TestPolicyRenewal: a Sentinel client's new generation renews the exhausted slot (the real
// Mux's renewal, recorded), whose next dial is an initial one: no violation. The same dial
// without the renewal is a dial after exhaustion.
func TestPolicyRenewal(t *testing.T) {
	p := &fsm.Policy{InitialDelay: 100 * time.Millisecond, BackoffMultiplier: 2, MaxDelay: time.Second, JitterRatio: 0.2, MaxAttempts: 3}
	mr := exhaustRun(p)
	mr.now += time.Second
	mr.step(fsm.Event{Kind: fsm.Published, Machine: fsm.MachineMux, Sentinel: &fsm.SentinelData{Generation: 2}})
	mr.now += time.Second
	mr.step(fsm.Event{Kind: fsm.Demanded, Waiter: 2})
	dialed := false
	for _, f := range mr.steps[len(mr.steps)-1].Effects {
		dialed = dialed || (f.Kind == fsm.Dial && f.Attempt == 0)
	}
	if !dialed {
		t.Fatal("the renewed slot did not dial at once")
	}
	expectViolations(t, Policy{Policy: p}, &record.Result{Steps: mr.steps})

	control := exhaustRun(p)
	control.steps = append(control.steps, record.Step{Event: fsm.Event{Kind: fsm.Demanded, At: 10 * time.Second},
		Effects: []fsm.Effect{{Kind: fsm.Dial, Slot: 0, Conn: 99}}})
	expectViolations(t, Policy{Policy: p}, &record.Result{Steps: control.steps}, "dialed after exhaustion")
}
