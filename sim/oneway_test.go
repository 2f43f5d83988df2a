package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

func parse(t *testing.T, data string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse([]byte(data))
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	return sc
}

const onewayHead = `name: one-way
seed: 9
duration: 8s
client: {connections: 1, command_timeout: 5s}
workload: {callers: 2, rate: 100/s, keys: 4, counters: 1}
faults:
`

// TestOneWayToNode: a partition towards the node holds the commands (nothing is applied in the
// window, then the held bytes arrive at the heal) while nothing is reset.
func TestOneWayToNode(t *testing.T) {
	res := run(t, parse(t, onewayHead+"  - {at: 2s, blackhole: {node: r1, for: 2s, direction: to_node}}\n"), 9, false)
	from, to := 2*time.Second+time.Millisecond, 4*time.Second
	atHeal := 0
	for _, a := range res.Applies {
		if a.At > from && a.At < to {
			t.Fatalf("command %d applied at %v through a partition towards the node", a.CmdID, a.At)
		}
		if a.At >= to && a.At < to+10*time.Millisecond {
			atHeal++
		}
	}
	if atHeal == 0 {
		t.Fatal("the held commands were not applied at the heal")
	}
	if n := len(steps(res, fsm.ConnLost, 0, res.End+1)); n != 0 {
		t.Fatalf("%d connections lost: a partition resets nothing", n)
	}
}

// TestOneWayToClient: a partition towards the client lets the commands through (they are
// applied in the window) but holds the replies until the heal.
func TestOneWayToClient(t *testing.T) {
	res := run(t, parse(t, onewayHead+"  - {at: 2s, blackhole: {node: r1, for: 2s, direction: to_client}}\n"), 9, false)
	from, to := 2*time.Second+time.Millisecond, 4*time.Second
	applied := 0
	for _, a := range res.Applies {
		if a.CmdID != 0 && a.At > from && a.At < to {
			applied++
		}
	}
	if applied == 0 {
		t.Fatal("no command applied while only the replies were held")
	}
	waited := 0
	for _, op := range ops(res, from, to) {
		if op.Outcome != record.OpOK {
			t.Fatalf("op %d: %s", op.ID, op.Outcome)
		}
		if op.Return < to {
			t.Fatalf("op %d called at %v got its reply at %v, through a partition towards the client", op.ID, op.Call, op.Return)
		}
		waited++
	}
	if waited == 0 {
		t.Fatal("no operation was called in the window")
	}
}

// TestSynRetransmitted: a connect whose SYN is black-holed is retransmitted after 1s, then 2s
// more, as TCP does; the retransmission after the heal connects well within the connect
// timeout. Before, the SYN was lost for good and the attempt failed at its connect deadline.
func TestSynRetransmitted(t *testing.T) {
	sc := parse(t, `name: syn
seed: 3
duration: 12s
client: {connections: 1, connect_timeout: 5s, command_timeout: 1s, reconnect_policy: {initial_delay: 100ms}}
workload: {callers: 1, rate: 20/s, keys: 2, counters: 1}
faults:
  - {at: 3s, drop: {node: r1}}
  - {at: 3050ms, blackhole: {node: r1, for: 1500ms}}
`)
	res := run(t, sc, sc.Seed, true)
	if n := len(steps(res, fsm.DialFailed, 0, res.End+1)); n != 0 {
		t.Fatalf("%d failed dials: the retransmitted SYN should connect", n)
	}
	dials := effects(res, fsm.Dial, 3*time.Second, 4*time.Second)
	if len(dials) != 1 {
		t.Fatalf("%d dials after the drop, want 1", len(dials))
	}
	var retrans []string
	for _, l := range res.Trace {
		if strings.Contains(l, "conn retransmit") {
			retrans = append(retrans, l)
		}
	}
	// The dial leaves at 3.1s: its SYN is held, retransmitted at 4.1s (still held) and at 6.1s.
	if len(retrans) != 2 || !strings.HasPrefix(retrans[0], "t=4.1") || !strings.HasPrefix(retrans[1], "t=6.1") {
		t.Fatalf("retransmissions: %q", retrans)
	}
	ready := steps(res, fsm.HandshakeDone, 3*time.Second, res.End+1)
	if len(ready) != 1 || ready[0].Event.At < 6100*time.Millisecond || ready[0].Event.At > 6200*time.Millisecond {
		t.Fatalf("handshakes after the drop: %v", ready)
	}
}

// TestOneWayScenario: in the shipped one-way partition, the replacement's SYN-ACK is held and
// retransmitted by the node, and commands applied behind the partition end unknown.
func TestOneWayScenario(t *testing.T) {
	sc := mustLoad(t, "../scenarios/one-way-partition.yaml")
	res := run(t, sc, sc.Seed, true)
	synAcks := 0
	for _, l := range res.Trace {
		if strings.Contains(l, "conn retransmit") && strings.HasSuffix(l, "syn-ack") {
			synAcks++
		}
	}
	if synAcks == 0 {
		t.Fatal("no SYN-ACK retransmitted behind the partition towards the client")
	}
	applied := map[uint64]bool{}
	for _, a := range res.Applies {
		applied[a.CmdID] = true
	}
	unknownApplied := 0
	for _, op := range ops(res, 4*time.Second, 7*time.Second) {
		if op.Outcome == record.OpUnknown && applied[op.ID] {
			unknownApplied++
		}
	}
	if unknownApplied == 0 {
		t.Fatal("no command applied behind the partition ended unknown")
	}
}
