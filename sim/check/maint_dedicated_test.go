package check

import (
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// notices7 returns notices as conn 7 received them.
func notices7(ns ...record.MaintEvent) []record.MaintEvent {
	out := make([]record.MaintEvent, 0, len(ns))
	for _, n := range ns {
		n.Kind, n.Conn = record.MaintNotice, 7
		out = append(out, n)
	}
	return out
}

// TestMaintRelaxedBatchesAndRoundTrips: a batch is judged as one command from its call on the
// connection of its lead command; a dedicated round trip from when its step was sent, each step
// ending when the next is sent; on both edges, as single commands are. Round trips are judged
// only with RoundTrips.
func TestMaintRelaxedBatchesAndRoundTrips(t *testing.T) {
	s := time.Second
	c := MaintRelaxed{CommandTimeout: s, Relaxed: 5 * s, Window: 10 * s}
	migrating := record.MaintEvent{At: s, Notice: fsm.MaintMigrating, Time: 20 * s}
	migrated := record.MaintEvent{At: 4 * s, Notice: fsm.MaintMigrated}
	batch := func(call, ret time.Duration, outcome string, ns ...record.MaintEvent) *record.Result {
		r := &record.Result{End: time.Minute, Maint: notices7(ns...)}
		r.Batches = []record.BatchOp{{ID: 1, Cmds: []uint64{record.BatchIDBase + 1, record.BatchIDBase + 2}, Call: call, Return: ret, Outcome: outcome}}
		r.Sends = []record.Send{{CmdID: record.BatchIDBase + 1, Conn: 7, At: call}, {CmdID: record.BatchIDBase + 2, Conn: 7, At: call}}
		return r
	}
	// A transaction: step 0 sent at call, step 1 sent at next (0: none), the op ending at ret.
	tx := func(call, next, ret time.Duration, errText string, ns ...record.MaintEvent) *record.Result {
		r := &record.Result{End: time.Minute, Maint: notices7(ns...)}
		op := record.DedicatedOp{ID: 1, Kind: "TX", Call: call, Return: ret, Outcome: record.DedicatedOK, Err: errText}
		op.Cmds = []record.DedicatedCmd{{ID: 1, Name: "WATCH", Conn: 7, Sent: call}, {ID: 2, Name: "GET", Conn: 7, Sent: call}}
		if next > 0 {
			op.Cmds = append(op.Cmds, record.DedicatedCmd{ID: 3, Name: "MULTI", Conn: 7, Sent: next})
		}
		if errText != "" {
			op.Outcome = record.DedicatedUnknown
		}
		r.Dedicated = []record.DedicatedOp{op}
		return r
	}
	const rtTimedOut = "sim: command timed out (round trip)"
	rt := c
	rt.RoundTrips = true
	for _, tc := range []struct {
		name    string
		c       MaintRelaxed
		r       *record.Result
		violate bool
	}{
		{"batch relaxed timeout at call+relaxed", c, batch(2*s, 7*s, record.BatchTimeout, migrating), false},
		{"batch timeout at its own budget in a window", c, batch(2*s, 3*s, record.BatchTimeout, migrating), true},
		{"batch ended by MIGRATED", c, batch(2*s, 4*s, record.BatchTimeout, migrating, migrated), false},
		{"batch relaxed past MIGRATED", c, batch(2*s, 6*s, record.BatchOK, migrating, migrated), true},
		{"batch completed within the relaxed budget", c, batch(2*s, 3500*time.Millisecond, record.BatchOK, migrating), false},
		{"batch late without notices", c, batch(2*s, 4*s, record.BatchOK), true},
		{"withdrawn batch not judged", c, batch(2*s, 3*s, record.BatchWithdraw, migrating), false},
		{"round trip relaxed timeout", rt, tx(2*s, 0, 7*s, rtTimedOut, migrating), false},
		{"round trip timeout at its own budget in a window", rt, tx(2*s, 0, 3*s, rtTimedOut, migrating), true},
		{"first step completed past MIGRATED", rt, tx(2*s, 6*s, 6*s+100*time.Millisecond, "", migrating, migrated), true},
		{"second step ended by MIGRATED, from its own send", rt, tx(2*s, 2500*time.Millisecond, 4*s, rtTimedOut, migrating, migrated), false},
		{"second step at its own budget from its send in a window", rt, tx(2*s, 2500*time.Millisecond, 3500*time.Millisecond, rtTimedOut, migrating, migrated), true},
		{"first step late, before any window", rt, tx(0, 1500*time.Millisecond, 2*s, ""), true},
		{"round trips not judged without RoundTrips", c, tx(2*s, 0, 3*s, rtTimedOut, migrating), false},
	} {
		got := len(tc.c.Check(tc.r)) > 0
		if got != tc.violate {
			t.Errorf("%s: violation %v, want %v (%v)", tc.name, got, tc.violate, tc.c.Check(tc.r))
		}
	}
}
