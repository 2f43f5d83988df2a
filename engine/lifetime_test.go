package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
)

// offerConn is a fakeConn that refuses offered commands once it drains, as netio's Conn does.
type offerConn struct{ fakeConn }

func (c *offerConn) Offer(cmd *Command) bool {
	c.mu.Lock()
	drained := c.drained || c.closed
	c.mu.Unlock()
	if drained {
		return false
	}
	c.Send(cmd)
	return true
}

func (c *offerConn) Send(cmd *Command) {
	c.mu.Lock()
	drained := c.drained
	c.mu.Unlock()
	if drained {
		cmd.Complete(errors.New("draining"))
		return
	}
	c.fakeConn.Send(cmd)
}

// readyOffer resolves every pending open with an offerConn.
func (h *harness) readyOffer() map[fsm.ConnID]*offerConn {
	out := map[fsm.ConnID]*offerConn{}
	for _, req := range h.tr.take() {
		c := &offerConn{}
		out[req.Conn] = c
		req.Sink.Ready(req.Conn, c)
	}
	return out
}

// TestLifetimeRecycleReroutesStaleSubmit: a command submitted through a snapshot that still names
// the connection being drained (the window between Drain and the next publication) is neither
// failed nor lost: the connection refuses it through Offer and the loop routes it to the
// published replacement. Then the journal replays every effect of the recycle.
func TestLifetimeRecycleReroutesStaleSubmit(t *testing.T) {
	cfg := Config{Slots: 1, Lifetime: time.Minute, LifetimeJitter: time.Second}
	h := newHarness(t, cfg)
	h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	h.run()
	old := h.readyOffer()
	h.run()
	if n := h.rt.fireAll(); n != 1 {
		t.Fatalf("%d timers armed after the handshake, want the lifetime deadline", n)
	}
	h.run()
	// The replacement becomes ready; before the loop steps it, the old connection starts
	// draining, as it does inside the step that publishes the replacement.
	fresh := h.readyOffer()
	if len(fresh) != 1 {
		t.Fatalf("%d replacements dialed", len(fresh))
	}
	for _, c := range old {
		c.Drain()
	}
	var failed error
	cmd := newCmd(func(c *Command) { failed = c.Err })
	h.eng.Submit(cmd)
	h.run()
	for _, c := range fresh {
		if c.count() != 1 || failed != nil {
			t.Fatalf("the stale submit was not rerouted to the replacement (sent %d, err %v)", c.count(), failed)
		}
	}
	for _, c := range old {
		if c.count() != 0 {
			t.Fatal("the draining connection took a command")
		}
	}
	var replayed []string
	Replay(cfg, h.events, func(_ *fsm.Event, effects []fsm.Effect) {
		var b []byte
		for i := range effects {
			b = append(b, " | "...)
			b = effects[i].AppendTo(b)
		}
		replayed = append(replayed, string(b))
	})
	if len(replayed) != len(h.steps) {
		t.Fatalf("replayed %d steps, recorded %d", len(replayed), len(h.steps))
	}
	for i := range replayed {
		if replayed[i] != h.steps[i] {
			t.Fatalf("step %d replayed to %q, recorded %q", i, replayed[i], h.steps[i])
		}
	}
}

// TestAbortFailsTheConnection: Abort posts a loss: the connection is closed and replaced.
func TestAbortFailsTheConnection(t *testing.T) {
	h := newHarness(t, Config{Slots: 1})
	h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	h.run()
	h.ready()
	var id fsm.ConnID
	for cid := range h.conns {
		id = cid
	}
	h.eng.Abort(id, errors.New("renewal rejected"))
	h.run()
	if !h.conns[id].closed {
		t.Fatal("the aborted connection was not closed")
	}
	if reqs := h.tr.take(); len(reqs) != 1 {
		t.Fatalf("%d replacements dialed, want 1", len(reqs))
	}
	h.eng.Abort(id, errors.New("again")) // a stale id is ignored
	h.run()
}

// stopperConn is a fakeConn that reports when it stopped, as netio's Conn does.
type stopperConn struct{ fakeConn }

func (c *stopperConn) Stopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// TestDisposeAbortsDrainingConnections: a connection drained by a recycle and still finishing its
// commands is closed when the engine is disposed; one that already stopped is forgotten.
func TestDisposeAbortsDrainingConnections(t *testing.T) {
	h := newHarness(t, Config{Slots: 2, Lifetime: time.Minute})
	h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	h.run()
	olds := map[fsm.ConnID]*stopperConn{}
	for _, req := range h.tr.take() {
		c := &stopperConn{}
		olds[req.Conn] = c
		req.Sink.Ready(req.Conn, c)
	}
	h.run()
	h.rt.fireAll()
	h.run()
	h.ready() // both replacements published; both old connections drain
	var finished, slow *stopperConn
	for _, c := range olds {
		if !c.drained {
			t.Fatal("an old connection was not drained")
		}
		if finished == nil {
			finished = c
		} else {
			slow = c
		}
	}
	finished.Close() // it finished draining on its own
	h.eng.Close()
	h.run()
	if !slow.closed {
		t.Fatal("disposal did not abort the connection still draining")
	}
}
