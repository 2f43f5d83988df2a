package engine

import (
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
)

// moverConn is an offerConn that hands back its queued commands on DrainMove, as netio's Conn
// does with those its writer never took, and hosts a relaxation.
type moverConn struct {
	offerConn
	queued []*Command
	relax  *Relax
	moves  int
}

func (c *moverConn) DrainMove() []*Command {
	c.moves++
	c.Drain()
	q := c.queued
	c.queued = nil
	return q
}

func (c *moverConn) Relax() *Relax { return c.relax }

// readyMovers resolves every pending open with a moverConn.
func (h *harness) readyMovers() []*moverConn {
	var out []*moverConn
	for _, req := range h.tr.take() {
		c := &moverConn{relax: NewRelax(fsm.MaintConfig{RelaxedTimeout: time.Second, WindowTimeout: time.Minute})}
		out = append(out, c)
		req.Sink.Ready(req.Conn, c)
	}
	h.run()
	return out
}

// movingHandoff connects one slot, announces MOVING on it and returns the old connection, with
// two commands it accepted but never wrote, and the dialed replacement's open requests.
func movingHandoff(t *testing.T) (*harness, *moverConn, []*Command) {
	h := newHarness(t, Config{Slots: 1})
	h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	h.run()
	olds := h.readyMovers()
	if len(olds) != 1 {
		t.Fatalf("%d connections", len(olds))
	}
	old := olds[0]
	var cmds []*Command
	for range 2 {
		cmd := newCmd(nil)
		cmd.Reset()
		cmd.Enqueued()
		cmd.sentOn(old.relax)
		cmds = append(cmds, cmd)
	}
	old.queued = cmds
	sink{h.eng}.Moving(h.eng.conns0(), fsm.MakeEndpoint("10.0.0.9", 6380), 10*time.Second)
	h.run()
	return h, old, cmds
}

// conns0 returns the id of the only connection the engine holds.
func (e *Engine) conns0() fsm.ConnID {
	for id := range e.conns {
		return id
	}
	return 0
}

// TestMovingMovesUnwrittenCommandsToTheReplacement: when MOVING's replacement is published, the
// old connection drains through DrainMove and the commands it hands back are sent on the
// replacement, in order, with the replacement's relaxation.
func TestMovingMovesUnwrittenCommandsToTheReplacement(t *testing.T) {
	h, old, cmds := movingHandoff(t)
	fresh := h.readyMovers()
	if len(fresh) != 1 {
		t.Fatalf("%d replacements dialed", len(fresh))
	}
	nc := fresh[0]
	if old.moves != 1 || !old.drained {
		t.Fatalf("the old connection: DrainMove %d times, drained %v", old.moves, old.drained)
	}
	if nc.count() != 2 || nc.sent[0] != cmds[0] || nc.sent[1] != cmds[1] {
		t.Fatalf("the replacement took %d commands, want the two moved, in order", nc.count())
	}
	for _, cmd := range cmds {
		if cmd.Relax() != nc.relax {
			t.Fatal("a moved command kept the old connection's relaxation")
		}
	}
	if old.count() != 0 {
		t.Fatal("the old connection wrote a moved command")
	}
}

// TestMovingMoveFallsBackToADefiniteFailure: a replacement that refuses the moved commands (it
// stopped taking commands in between) leaves them to the old connection, which rejects them:
// they fail at Buffered, never written, never lost.
func TestMovingMoveFallsBackToADefiniteFailure(t *testing.T) {
	h, old, cmds := movingHandoff(t)
	var failed []*Command
	for _, cmd := range cmds {
		cmd.Done = func(c *Command) { failed = append(failed, c) }
	}
	for _, req := range h.tr.take() {
		c := &moverConn{}
		c.drained = true // refuses every offer
		req.Sink.Ready(req.Conn, c)
	}
	h.run()
	if old.moves != 1 || len(failed) != 2 {
		t.Fatalf("DrainMove %d times, %d commands failed; want 1 and 2", old.moves, len(failed))
	}
	for _, cmd := range failed {
		if cmd.Err == nil || cmd.FinalStage() != StageBuffered || cmd.MaybeSent() {
			t.Fatalf("a refused moved command ended with %v at %v, want a definite failure", cmd.Err, cmd.FinalStage())
		}
	}
}

// TestMovingLateHandshakeMovesThenCloses: a replacement whose handshake finishes after the grace
// still takes the commands the old connection never wrote; the old connection is then closed at
// once.
func TestMovingLateHandshakeMovesThenCloses(t *testing.T) {
	h, old, cmds := movingHandoff(t)
	if n := h.rt.fireAll(); n != 1 {
		t.Fatalf("%d timers fired, want the grace", n)
	}
	h.run()
	fresh := h.readyMovers()
	if len(fresh) != 1 || old.moves != 1 || fresh[0].count() != 2 || fresh[0].sent[0] != cmds[0] {
		t.Fatalf("%d replacements, DrainMove %d times: the unwritten commands did not move", len(fresh), old.moves)
	}
	if !old.closed {
		t.Fatal("the old connection was not closed after a handshake that finished past the grace")
	}
}
