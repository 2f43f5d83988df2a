package check

import (
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

func intp(n int) *int { return &n }

// TestDialsControl: the dial expectations count the dials to one endpoint within their window;
// a dial inside a "max 0" window and too few dials in a "min" window are violations.
func TestDialsControl(t *testing.T) {
	sc := &scenario.Scenario{Expect: scenario.Expect{Dials: []scenario.DialExpect{
		{Endpoint: "a1:6379", After: ms(100), Max: intp(0)},
		{Endpoint: "a9:6379", After: ms(50), Before: ms(200), Min: intp(2), Max: intp(3)},
	}}}
	clean := &record.Result{Scenario: sc, End: ms(300), Dials: []record.Dial{
		{Endpoint: "a1:6379", At: ms(10)}, {Endpoint: "a1:6379", At: ms(99)}, // before the window
		{Endpoint: "a9:6379", At: ms(60)}, {Endpoint: "a9:6379", At: ms(150)},
		{Endpoint: "a9:6379", At: ms(200)}, // the window ends before 200ms
		{Endpoint: "b1:6379", At: ms(150)},
	}}
	expectViolations(t, Dials{}, clean)
	planted := &record.Result{Scenario: sc, End: ms(300), Dials: []record.Dial{
		{Endpoint: "a1:6379", At: ms(100)}, {Endpoint: "a1:6379", At: ms(250)},
		{Endpoint: "a9:6379", At: ms(60)},
	}}
	expectViolations(t, Dials{}, planted, "2 dials to a1:6379 from 100ms (at most 0", "1 dials to a9:6379 from 50ms to 200ms (at least 2")
}

// TestNoReplayAfterRedirect: a command may be written again after a node answered it with a
// reply that proves it did not run (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, READONLY...), and only
// then: another error reply, or a proof before the first write, does not allow it.
func TestNoReplayAfterRedirect(t *testing.T) {
	sends := []record.Send{{CmdID: 1, Conn: 1, At: ms(1)}, {CmdID: 1, Conn: 2, At: ms(5)}, {CmdID: 1, Conn: 3, At: ms(9)}}
	clean := &record.Result{Sends: sends, Applies: []record.Apply{{CmdID: 1, At: ms(10)}},
		Served: []record.ReplyRecord{{CmdID: 1, Conn: 1, At: ms(2), Code: "MOVED"}, {CmdID: 1, Conn: 2, At: ms(6), Code: "ASK"}}}
	expectViolations(t, NoReplay{}, clean)
	wrongCode := &record.Result{Sends: sends[:2], Served: []record.ReplyRecord{{CmdID: 1, Conn: 1, At: ms(2), Code: "ERR"}}}
	expectViolations(t, NoReplay{}, wrongCode, "with no reply proving it did not run")
	early := &record.Result{Sends: sends[1:], Served: []record.ReplyRecord{{CmdID: 1, Conn: 1, At: ms(2), Code: "MOVED"}}}
	expectViolations(t, NoReplay{}, early, "written again on conn 3")
}

// TestPairingAfterRedirect: a command written again after a redirect completes with its last
// write's reply, so FIFO order is judged on its last write; a reordered reply still fails.
func TestPairingAfterRedirect(t *testing.T) {
	ops := []record.Op{{ID: 1, Outcome: record.OpOK, Return: ms(9)}, {ID: 2, Outcome: record.OpOK, Return: ms(4)}}
	clean := &record.Result{Ops: ops, Sends: []record.Send{{CmdID: 1, Conn: 1, At: ms(1)}, {CmdID: 2, Conn: 1, At: ms(2)},
		{CmdID: 1, Conn: 1, At: ms(6)}}}
	expectViolations(t, Pairing{}, clean)
	reordered := &record.Result{Ops: ops, Sends: []record.Send{{CmdID: 1, Conn: 1, At: ms(1)}, {CmdID: 2, Conn: 1, At: ms(2)}}}
	expectViolations(t, Pairing{}, reordered, "op 2 completed before op 1 written earlier")
	// Found by TestRandomClusterRunsKeepEveryInvariant: op 1's last write was answered
	// CLUSTERDOWN, and op 1 completed later with that rejection, when its node could not be
	// reached for the retry; that completion pairs with no write.
	rejected := &record.Result{Ops: ops, Sends: reordered.Sends,
		Served: []record.ReplyRecord{{CmdID: 1, Conn: 1, At: ms(1), Code: "CLUSTERDOWN"}, {CmdID: 2, Conn: 1, At: ms(3)}}}
	expectViolations(t, Pairing{}, rejected)
}

// TestRetiredControl: a dial to an endpoint more than the grace after a conclusive reply stopped
// naming it is a violation; within the grace, after a reply names it again, or to a seed, it is
// not; a partial reply decides nothing.
func TestRetiredControl(t *testing.T) {
	full := func(hosts ...string) *fsm.TopologyReply {
		r := &fsm.TopologyReply{}
		per := fsm.SlotCount / len(hosts)
		for i, h := range hosts {
			last := (i+1)*per - 1
			if i == len(hosts)-1 {
				last = fsm.SlotCount - 1
			}
			r.Shards = append(r.Shards, fsm.ReplyShard{Ranges: []fsm.SlotRange{{First: uint16(i * per), Last: uint16(last)}},
				Nodes: []fsm.Node{{Addr: fsm.Endpoint{Host: h, Port: 6379}}}})
		}
		return r
	}
	partial := &fsm.TopologyReply{Shards: []fsm.ReplyShard{{Ranges: []fsm.SlotRange{{First: 0, Last: 9}},
		Nodes: []fsm.Node{{Addr: fsm.Endpoint{Host: "b1", Port: 6379}}}}}}
	steps := []record.Step{
		{Event: fsm.Event{Kind: fsm.Replied, At: ms(0), Reply: full("a1", "b1")}},
		{Event: fsm.Event{Kind: fsm.Replied, At: ms(100), Reply: full("a9", "b1")}},   // a1 leaves
		{Event: fsm.Event{Kind: fsm.Replied, At: ms(200), Reply: partial}},            // decides nothing
		{Event: fsm.Event{Kind: fsm.Replied, At: ms(30000), Reply: full("a1", "b1")}}, // a1 is back
	}
	c := Retired{Grace: ms(1000), Seeds: []string{"seed:6379"}}
	clean := &record.Result{Steps: steps, Dials: []record.Dial{
		{Endpoint: "a1:6379", At: ms(1050)}, // within the grace
		{Endpoint: "a1:6379", At: ms(30000)}, {Endpoint: "a9:6379", At: ms(5000)}, {Endpoint: "seed:6379", At: ms(5000)},
	}}
	expectViolations(t, c, clean)
	planted := &record.Result{Steps: steps, Dials: []record.Dial{{Endpoint: "a1:6379", At: ms(1101)}, {Endpoint: "a1:6379", At: ms(29999)}}}
	expectViolations(t, c, planted, "dial to a1:6379, which left the topology at 100ms", "dial to a1:6379")
}
