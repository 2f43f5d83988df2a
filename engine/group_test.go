package engine

import (
	"errors"
	"sync"
	"testing"

	"github.com/respire-go/respire/fsm"
)

// groupConn is a fakeConn that takes groups as one unit.
type groupConn struct {
	fakeConn
	groups  int
	refuses bool
}

func (c *groupConn) OfferGroup(cmds []*Command) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.refuses {
		return false
	}
	for _, cmd := range cmds {
		cmd.Writing()
		cmd.Written()
	}
	c.sent = append(c.sent, cmds...)
	c.groups++
	return true
}

// readyGroups resolves every pending open with a groupConn.
func (h *harness) readyGroups() map[fsm.ConnID]*groupConn {
	out := map[fsm.ConnID]*groupConn{}
	for _, req := range h.tr.take() {
		c := &groupConn{}
		out[req.Conn] = c
		req.Sink.Dialed(req.Conn)
		req.Sink.Ready(req.Conn, c)
	}
	h.run()
	return out
}

type doneLog struct {
	mu   sync.Mutex
	cmds []*Command
}

func (l *doneLog) done(c *Command) { l.mu.Lock(); l.cmds = append(l.cmds, c); l.mu.Unlock() }

func group(n int, l *doneLog) []*Command {
	out := make([]*Command, n)
	for i := range out {
		out[i] = newCmd(l.done)
	}
	return out
}

// TestGroupOnAReadyConnection: a group goes to one connection as one offer, in order, without
// touching the loop; concurrent groups never interleave.
func TestGroupOnAReadyConnection(t *testing.T) {
	h := newHarness(t, Config{Slots: 2})
	h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	h.run()
	conns := h.readyGroups()
	before := h.eng.Journal().Total()
	var wg sync.WaitGroup
	groups := make([][]*Command, 8)
	for g := range groups {
		groups[g] = group(5, &doneLog{})
		wg.Add(1)
		go func(cmds []*Command) {
			defer wg.Done()
			h.eng.SubmitGroup(cmds)
		}(groups[g])
	}
	wg.Wait()
	h.run()
	if after := h.eng.Journal().Total(); after != before {
		t.Fatalf("groups on healthy connections reached the loop: %d events", after-before)
	}
	offers := 0
	for _, c := range conns {
		offers += c.groups
		// Every group's commands are adjacent, in order.
		for i := 0; i < len(c.sent); i += 5 {
			first := c.sent[i]
			var owner []*Command
			for _, g := range groups {
				if g[0] == first {
					owner = g
				}
			}
			if owner == nil {
				t.Fatalf("command %d does not lead a group: groups interleaved", i)
			}
			for k := range owner {
				if c.sent[i+k] != owner[k] {
					t.Fatalf("group split or reordered at %d+%d", i, k)
				}
			}
		}
	}
	if offers != len(groups) {
		t.Fatalf("%d offers for %d groups", offers, len(groups))
	}
}

// TestGroupWaitsForAConnection: a group submitted before any connection is one demand, sent as
// one unit once a connection is ready.
func TestGroupWaitsForAConnection(t *testing.T) {
	h := newHarness(t, Config{Slots: 1})
	cmds := group(3, &doneLog{})
	h.eng.SubmitGroup(cmds)
	h.run()
	demands := 0
	for _, ev := range h.events {
		if ev.Kind == fsm.Demanded {
			demands++
		}
	}
	if demands != 1 {
		t.Fatalf("%d demands for one group", demands)
	}
	for _, cmd := range cmds {
		if cmd.Stage() != StageQueued {
			t.Fatalf("stage %v before a connection", cmd.Stage())
		}
	}
	conns := h.readyGroups()
	for _, c := range conns {
		if c.groups != 1 || len(c.sent) != 3 || c.sent[0] != cmds[0] || c.sent[2] != cmds[2] {
			t.Fatalf("granted group: %d offers, %d commands", c.groups, len(c.sent))
		}
	}
}

// TestGroupWithdrawnWhileWaiting: withdrawing the lead abandons the whole group: nothing is
// sent and no Done runs.
func TestGroupWithdrawnWhileWaiting(t *testing.T) {
	h := newHarness(t, Config{Slots: 1})
	l := &doneLog{}
	cmds := group(3, l)
	h.eng.SubmitGroup(cmds)
	h.run()
	if !h.eng.Withdraw(cmds[0]) {
		t.Fatal("a waiting group could not be withdrawn")
	}
	h.run()
	conns := h.readyGroups()
	for _, c := range conns {
		if len(c.sent) != 0 {
			t.Fatalf("a withdrawn group was sent: %d commands", len(c.sent))
		}
	}
	if len(l.cmds) != 0 {
		t.Fatalf("Done ran for %d commands of a withdrawn group", len(l.cmds))
	}
}

// TestGroupFailsAsAWhole: when no connection can be had, every command of the group completes
// at StageQueued with the acquisition error: definitely not sent.
func TestGroupFailsAsAWhole(t *testing.T) {
	h := newHarness(t, Config{Slots: 1, Policy: &fsm.Policy{MaxAttempts: 1}})
	l := &doneLog{}
	cmds := group(3, l)
	h.eng.SubmitGroup(cmds)
	h.run()
	h.fail("refused")
	h.rt.fireAll()
	h.run()
	h.fail("refused")
	if len(l.cmds) != 3 {
		t.Fatalf("%d of 3 commands completed", len(l.cmds))
	}
	for _, cmd := range cmds {
		var ae *AcquireError
		if !errors.As(cmd.Err, &ae) || cmd.MaybeSent() || cmd.FinalStage() != StageQueued {
			t.Fatalf("command: err=%v stage=%v", cmd.Err, cmd.FinalStage())
		}
	}
}

// TestGroupNeedsAGroupConnection: a connection that cannot take a group as one unit fails it
// before anything is sent, rather than writing it piecemeal.
func TestGroupNeedsAGroupConnection(t *testing.T) {
	h := newHarness(t, Config{Slots: 1})
	h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	h.run()
	h.ready() // plain fakeConns
	l := &doneLog{}
	cmds := group(2, l)
	h.eng.SubmitGroup(cmds)
	for _, c := range h.conns {
		if c.count() != 0 {
			t.Fatal("a group was sent piecemeal")
		}
	}
	if len(l.cmds) != 2 || !errors.Is(cmds[1].Err, ErrGroupUnsupported) || cmds[1].MaybeSent() {
		t.Fatalf("group on a plain connection: %d done, err=%v", len(l.cmds), cmds[1].Err)
	}
}

// TestGroupRefusedByADrainingConnection: a connection that refuses the offer (it started
// draining) leaves the group untouched and the loop routes it.
func TestGroupRefusedByADrainingConnection(t *testing.T) {
	h := newHarness(t, Config{Slots: 1})
	h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	h.run()
	conns := h.readyGroups()
	for _, c := range conns {
		c.refuses = true
	}
	cmds := group(2, &doneLog{})
	h.eng.SubmitGroup(cmds)
	for _, cmd := range cmds {
		if cmd.Stage() != StageQueued {
			t.Fatalf("refused group at stage %v, want queued", cmd.Stage())
		}
	}
	from := len(h.events)
	h.run()
	if got := h.kinds(from); len(got) != 1 || got[0] != fsm.Demanded {
		t.Fatalf("refused group stepped %v, want one demand", got)
	}
}

// TestGroupFailsOnClose: closing the engine fails a waiting group as closed.
func TestGroupFailsOnClose(t *testing.T) {
	h := newHarness(t, Config{Slots: 1})
	l := &doneLog{}
	cmds := group(2, l)
	h.eng.SubmitGroup(cmds)
	h.run()
	h.eng.Close()
	h.run()
	if len(l.cmds) != 2 {
		t.Fatalf("%d of 2 commands completed at close", len(l.cmds))
	}
	var ae *AcquireError
	if !errors.As(cmds[1].Err, &ae) || ae.Outcome != fsm.OutcomeClosed {
		t.Fatalf("closed group: %v", cmds[1].Err)
	}
}
