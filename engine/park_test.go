package engine

import (
	"errors"
	"testing"
)

// stoppingConn is a fakeConn that implements Offerer: once stopped, it refuses offered commands
// untouched, as a netio connection does between its failure and the loop's processing of it.
type stoppingConn struct {
	fakeConn
	stopped bool
}

func (c *stoppingConn) Offer(cmd *Command) bool {
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		return false
	}
	c.Send(cmd)
	return true
}

// TestGrantOfAStoppedConnectionWaitsForItsLoss: a command granted a connection that has stopped
// taking commands, but whose loss the loop has not processed yet, is neither sent nor failed: it
// waits for the loss and goes to the replacement. Before parking, it failed with a definite
// connection error although a replacement was coming.
func TestGrantOfAStoppedConnectionWaitsForItsLoss(t *testing.T) {
	h := newHarness(t, Config{Slots: 1})
	h.eng.Acquire(0, func(Grant) {})
	h.run()
	var first *stoppingConn
	for _, req := range h.tr.take() {
		first = &stoppingConn{}
		req.Sink.Dialed(req.Conn)
		req.Sink.Ready(req.Conn, first)
		h.run()
		first.mu.Lock()
		first.stopped = true // it failed; Lost is on its way
		first.mu.Unlock()
		var done *Command
		cmd := newCmd(func(c *Command) { done = c })
		h.eng.Submit(cmd)
		h.run()
		if done != nil || cmd.Stage() != StageQueued || len(h.eng.parked[req.Conn]) != 1 {
			t.Fatalf("granted a stopped connection: done=%v stage=%v parked=%d", done != nil, cmd.Stage(), len(h.eng.parked[req.Conn]))
		}
		req.Sink.Lost(req.Conn, errors.New("reset"))
		h.run()
		if len(h.eng.parked) != 0 {
			t.Fatalf("the loss did not release the parked command")
		}
		h.ready() // the replacement
		if done != nil || cmd.Stage() != StageAwaitingReply {
			t.Fatalf("the parked command did not go to the replacement: done=%v stage=%v", done != nil, cmd.Stage())
		}
		for id, c := range h.conns {
			if c.count() != 1 {
				t.Fatalf("replacement %d got %d commands, want the parked one", id, c.count())
			}
		}
	}
	if first == nil {
		t.Fatal("no connection was opened")
	}
}
