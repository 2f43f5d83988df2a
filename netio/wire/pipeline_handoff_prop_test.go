package wire

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
)

// TestPipelineDrainMovingProperty drives a pipeline through random sends (single and grouped,
// some of them connection-bound), writer steps (take, hand off, finish a write) and replies, then
// drains it for a MOVING handoff at a random point and runs it to the end. Whatever the
// interleaving:
//   - a moved command was never handed to the flight (still Buffered, never completed by the old
//     connection), and moved commands keep their order;
//   - nothing moves while a connection-bound command is queued, and otherwise every queued
//     command moves;
//   - every command that stays completes exactly once, and the drain completes exactly when the
//     last of them is answered.
func TestPipelineDrainMovingProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var p Pipeline
		completions := map[*engine.Command]int{}
		handed := map[*engine.Command]bool{}
		var all []*engine.Command
		newCmd := func(bound bool) *engine.Command {
			name := "GET"
			if bound {
				name = "AUTH"
			}
			cmd := &engine.Command{Name: name, Frame: resp.AppendCommand(nil, name)}
			cmd.Done = func(c *engine.Command) { completions[c]++ }
			cmd.Enqueued()
			all = append(all, cmd)
			return cmd
		}
		// in flight, handed off and not yet marked written: the range of the last Handoff.
		var first, last uint64
		step := func(op int) {
			switch op {
			case 0: // a single command
				_ = p.Accept(newCmd(rapid.IntRange(0, 9).Draw(t, "bound") == 0))
			case 1: // a group
				n := rapid.IntRange(1, 4).Draw(t, "group")
				g := make([]*engine.Command, n)
				for i := range g {
					g[i] = newCmd(false)
				}
				_ = p.AcceptGroup(g)
			case 2: // the writer takes the queue
				p.Hold(p.Take())
			case 3: // the writer hands off what it holds (its write begins)
				for i := 0; i < p.Holding(); i++ {
					handed[p.held[i]] = true
				}
				first, last, _ = p.Handoff()
			case 4: // the write ends
				p.Wrote(first, last)
			case 5: // a reply
				if p.InFlight() > 0 {
					if err := reply(&p, resp.SimpleString("OK")); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		for range rapid.IntRange(0, 40).Draw(t, "before") {
			step(rapid.IntRange(0, 5).Draw(t, "op"))
		}
		queued := append([]*engine.Command(nil), p.queue...)
		boundQueued := false
		for _, cmd := range queued {
			boundQueued = boundQueued || Stays(cmd)
		}
		moved, owed, ok := p.DrainMoving(nil)
		if !ok {
			t.Fatal("an open pipeline refused to drain")
		}
		if boundQueued && len(moved) != 0 {
			t.Fatalf("%d commands moved with a connection-bound command queued", len(moved))
		}
		if !boundQueued && len(moved) != len(queued) {
			t.Fatalf("%d of %d queued commands moved", len(moved), len(queued))
		}
		for i, cmd := range moved {
			if cmd != queued[i] || handed[cmd] || cmd.Stage() != engine.StageBuffered || completions[cmd] != 0 {
				t.Fatalf("moved command %d: handed %v, stage %v, completions %d", i, handed[cmd], cmd.Stage(), completions[cmd])
			}
		}
		if p.Accept(newCmd(false)) == nil {
			t.Fatal("a draining pipeline accepted a command")
		}
		all = all[:len(all)-1]
		// Run the old connection to the end: write and answer everything it still owes.
		for range 4 * len(all) {
			if p.Drained(p.Answered()) {
				break
			}
			if p.Queued() {
				p.Hold(p.Take())
			}
			if p.Holding() > 0 {
				first, last, _ = p.Handoff()
				p.Wrote(first, last)
			}
			if p.InFlight() > 0 {
				if err := reply(&p, resp.SimpleString("OK")); err != nil {
					t.Fatal(err)
				}
			}
		}
		if !p.Drained(p.Answered()) {
			t.Fatalf("the drain never completed: owes %d, answered %d", owed, p.Answered())
		}
		isMoved := map[*engine.Command]bool{}
		for _, cmd := range moved {
			isMoved[cmd] = true
		}
		for _, cmd := range all {
			want := 1
			if isMoved[cmd] {
				want = 0
			}
			if completions[cmd] != want {
				t.Fatalf("a command (moved %v) completed %d times on the old connection", isMoved[cmd], completions[cmd])
			}
		}
	})
}
