package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// TestCommandErrors: the shipped command-errors scenario's faults each refuse exactly their
// commands in their windows, without executing them, and SELECT failing alone fails the
// replacements' handshakes until its window ends.
func TestCommandErrors(t *testing.T) {
	sc := mustLoad(t, "../scenarios/command-errors.yaml")
	res := run(t, sc, sc.Seed, false)
	applied := map[uint64]bool{}
	for _, a := range res.Applies {
		applied[a.CmdID] = true
	}
	type window struct {
		from, to time.Duration
		code     string
		hit      func(op record.Op) bool
	}
	windows := []window{
		{2 * sec, 4 * sec, "BUSY", func(op record.Op) bool { return op.Name == "GET" && strings.HasPrefix(op.Keys[0], "k") }},
		{5 * sec, 7 * sec, "OOM", func(op record.Op) bool { return op.Name == "SET" || op.Name == "MSET" }},
		{8 * sec, 9 * sec, "READONLY", func(op record.Op) bool { return op.Name == "INCR" }},
		{8 * sec, 9 * sec, "MOVED", func(op record.Op) bool { return op.Name == "MGET" }},
	}
	for _, w := range windows {
		refused, spared := 0, 0
		// Calls a millisecond inside the window reach the node inside it.
		for _, op := range ops(res, w.from+time.Millisecond, w.to-time.Millisecond) {
			if op.Outcome != record.OpOK {
				t.Fatalf("op %d %s: %s (%s)", op.ID, op.Name, op.Outcome, op.Err)
			}
			switch {
			case w.hit(op):
				if !strings.HasPrefix(op.ServerError, w.code+" ") || applied[op.ID] {
					t.Fatalf("op %d %s %v in the %s window: error %q, applied %v", op.ID, op.Name, op.Keys, w.code, op.ServerError, applied[op.ID])
				}
				refused++
			case strings.HasPrefix(op.ServerError, w.code):
				t.Fatalf("op %d %s %v refused with %s although the fault does not name it", op.ID, op.Name, op.Keys, w.code)
			default:
				spared++
			}
		}
		if refused == 0 || spared == 0 {
			t.Fatalf("%s window: %d refused, %d spared", w.code, refused, spared)
		}
	}
	for _, op := range res.Ops {
		if op.ServerError != "" && (op.Call < 2*sec || op.Call > 9*sec+10*time.Millisecond) {
			t.Fatalf("op %d at %v refused with %q outside every window", op.ID, op.Call, op.ServerError)
		}
	}
	// SELECT refused: the replacements fail in their handshake, with the SELECT error.
	failed := steps(res, fsm.DialFailed, 12*sec, 14*sec)
	if len(failed) == 0 {
		t.Fatal("no replacement failed while SELECT was refused")
	}
	for _, s := range failed {
		if !strings.Contains(errText(s.Event), "DB index is out of range") {
			t.Fatalf("unexpected failure %s", s.Event.String())
		}
	}
	if n := len(steps(res, fsm.HandshakeDone, 12*sec, 14*sec)); n != 0 {
		t.Fatalf("%d handshakes completed while SELECT was refused", n)
	}
	if n := len(steps(res, fsm.HandshakeDone, 14*sec, 16*sec)); n != 2 {
		t.Fatalf("%d slots reconnected after SELECT came back, want 2", n)
	}
}

// TestCommandErrorSetInfoAlone: CLIENT SETINFO refused alone (an ACL without it) does not fail
// the handshake: the client treats SETINFO as optional, as with Redis before 7.2.
func TestCommandErrorSetInfoAlone(t *testing.T) {
	sc := parse(t, `name: setinfo
seed: 4
duration: 4s
client: {connections: 1, reconnect_policy: {initial_delay: 50ms}}
faults:
  - {at: 1s, command_error: {node: r1, commands: ["CLIENT SETINFO"], reply: "NOPERM User has no permissions to run the 'client|setinfo' command"}}
  - {at: 1s, drop: {node: r1}}
workload: {callers: 1, rate: 50/s, keys: 2, counters: 1}
`)
	res := run(t, sc, sc.Seed, true)
	if n := len(steps(res, fsm.DialFailed, 0, res.End+1)); n != 0 {
		t.Fatalf("%d failed dials: SETINFO is optional", n)
	}
	refused := 0
	for _, l := range res.Trace {
		if strings.Contains(l, "fault refused fault=0 node=r1 CLIENT") {
			refused++
		}
	}
	if refused != 2 { // LIB-NAME and LIB-VER of the replacement's handshake
		t.Fatalf("%d SETINFO commands refused, want 2", refused)
	}
	if n := len(steps(res, fsm.HandshakeDone, sec, res.End+1)); n != 1 {
		t.Fatalf("%d reconnections, want 1", n)
	}
}
