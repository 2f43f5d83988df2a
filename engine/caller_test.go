package engine

import (
	"errors"
	"testing"

	"github.com/respire-go/respire/fsm"
)

// TestCallerProtocol walks the three ways a caller's wait can end when it gives up: withdrawn
// before any connection took the command, left to the connection that owns it, or beaten by the
// completion.
func TestCallerProtocol(t *testing.T) {
	h := newHarness(t, Config{Slots: 1})
	answered := 0
	late := 0
	done := func(c *Command) {
		if c.Answered() {
			answered++
		} else {
			late++
		}
	}

	// Withdrawn: no connection is ready, the command waits in the engine.
	queued := newCmd(done)
	queued.Reset()
	h.eng.Submit(queued)
	h.run()
	a := h.eng.Abandon(queued)
	if a.Wait || a.Verdict != VerdictFailed || a.Stage != StageQueued || !a.Owned || !queued.Left() {
		t.Fatalf("withdrawn: %+v", a)
	}
	h.run()
	h.ready()
	if h.conns[firstConn(h)].count() != 0 || answered+late != 0 {
		t.Fatal("a withdrawn command was sent or completed")
	}
	// Should a withdrawn command ever complete (it must not), the completion is not the
	// caller's until it resets the command.
	if queued.Answered() {
		t.Fatal("a completion of a withdrawn command reached the caller")
	}

	// Left: the connection owns the command; its completion comes late and is nobody's.
	owned := newCmd(done)
	owned.Reset()
	h.eng.Submit(owned)
	a = h.eng.Abandon(owned)
	if a.Wait || a.Verdict != VerdictUnknown || a.Stage != StageAwaitingReply || a.Owned || !owned.Left() {
		t.Fatalf("left: %+v", a)
	}
	owned.Complete(nil)
	if late != 1 || answered != 0 {
		t.Fatalf("the late completion must see the caller gone: answered=%d late=%d", answered, late)
	}

	// Beaten: the completion came first; the caller waits for it and owns the command.
	beaten := newCmd(done)
	beaten.Reset()
	h.eng.Submit(beaten)
	beaten.Complete(nil)
	if a = h.eng.Abandon(beaten); !a.Wait || answered != 1 {
		t.Fatalf("beaten: %+v answered=%d", a, answered)
	}

	// Reset makes a command's caller wait again.
	beaten.Reset()
	if beaten.Left() || !beaten.Answered() || beaten.Answered() {
		t.Fatal("Answered must report true once per Reset")
	}
}

func TestVerdict(t *testing.T) {
	c := newCmd(nil)
	c.Reset()
	c.Complete(nil)
	if c.Verdict() != VerdictReplied {
		t.Fatalf("reply: %v", c.Verdict())
	}
	c.Reset()
	c.Enqueued()
	c.Complete(errors.New("closed"))
	if c.Verdict() != VerdictFailed {
		t.Fatalf("buffered failure: %v", c.Verdict())
	}
	c.Reset()
	c.Enqueued()
	c.Writing()
	c.Complete(errors.New("reset"))
	if c.Verdict() != VerdictUnknown || c.Verdict().String() != "unknown" {
		t.Fatalf("writing failure: %v", c.Verdict())
	}
}

// firstConn returns the id of the harness's only connection.
func firstConn(h *harness) (id fsm.ConnID) {
	for id = range h.conns {
		return id
	}
	return 0
}
