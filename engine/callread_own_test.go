package engine

import (
	"context"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
)

// ownConn is a groupConn that also takes its callers' own groups and lets them read.
type ownConn struct {
	groupConn
	own   int
	reads []*Command // the lead of every ReadOwn
	read  bool       // what ReadOwn reports
	// refuse: MayRead reports false (the group went through the writer).
	refuse bool
	// deadlines are the deadlines ReadOwn got.
	deadlines []time.Time
}

func (c *ownConn) MayRead(*Command) bool { return !c.refuse }

func (c *ownConn) OfferOwnGroup(cmds []*Command) bool {
	if !c.OfferGroup(cmds) {
		return false
	}
	c.mu.Lock()
	c.own++
	c.mu.Unlock()
	return true
}

func (c *ownConn) ReadOwn(_ context.Context, lead, _ *Command, deadline time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads = append(c.reads, lead)
	c.deadlines = append(c.deadlines, deadline)
	return c.read
}

// TestSubmitGroupReadOwnAsksTheConnectionThatTookIt: SubmitGroupReadOwn offers the group as its
// caller's own (OwnGroupOfferer) and asks that same connection, and no other, to let the caller
// read; SubmitGroup offers it as a plain group; a group that has to wait for a connection is
// read by nobody (nothing took it on the caller's goroutine).
func TestSubmitGroupReadOwnAsksTheConnectionThatTookIt(t *testing.T) {
	h := newHarness(t, Config{Slots: 2})
	h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	h.run()
	conns := map[fsm.ConnID]*ownConn{}
	for _, req := range h.tr.take() {
		c := &ownConn{read: true}
		conns[req.Conn] = c
		req.Sink.Dialed(req.Conn)
		req.Sink.Ready(req.Conn, c)
	}
	h.run()
	cmds := group(3, &doneLog{})
	at := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	if done, deadline := h.eng.SubmitGroupReadOwn(context.Background(), cmds, func() time.Time { return at }); !done || !deadline.Equal(at) {
		t.Fatalf("SubmitGroupReadOwn reported %v with deadline %v; the connection's ReadOwn reported true, read within %v", done, deadline, at)
	}
	took := 0
	for _, c := range conns {
		switch {
		case c.own == 1 && c.groups == 1:
			took++
			if len(c.reads) != 1 || c.reads[0] != cmds[0] || !c.deadlines[0].Equal(at) {
				t.Fatalf("the connection that took the group was asked to read %v within %v", c.reads, c.deadlines)
			}
		case c.own != 0 || c.groups != 0 || len(c.reads) != 0:
			t.Fatalf("another connection was used: %d own, %d groups, %d reads", c.own, c.groups, len(c.reads))
		}
	}
	if took != 1 {
		t.Fatalf("%d connections took the group as its caller's own, want 1", took)
	}
	h.eng.SubmitGroup(group(2, &doneLog{}))
	own, groups := 0, 0
	for _, c := range conns {
		own, groups = own+c.own, groups+c.groups
	}
	if own != 1 || groups != 2 {
		t.Fatalf("SubmitGroup: %d own offers and %d groups, want 1 and 2", own, groups)
	}
}

// TestSubmitGroupReadOwnWithoutAConnection: a group that waits for a connection is not read by
// its caller: SubmitGroupReadOwn reports false and asks nobody.
func TestSubmitGroupReadOwnWithoutAConnection(t *testing.T) {
	h := newHarness(t, Config{Slots: 1})
	asked := false
	if done, deadline := h.eng.SubmitGroupReadOwn(context.Background(), group(2, &doneLog{}),
		func() time.Time { asked = true; return time.Unix(1, 0) }); done || !deadline.IsZero() || asked {
		t.Fatalf("SubmitGroupReadOwn with no connection: done %v, deadline %v, deadline asked %v", done, deadline, asked)
	}
}

// TestSubmitGroupReadOwnOnlyWhenMayRead: a connection whose MayRead turns the caller away (the
// group went through its writer) is not asked to read, the deadline is not computed (the clock
// is not read for a caller among many), and SubmitGroupReadOwn reports false with no deadline.
func TestSubmitGroupReadOwnOnlyWhenMayRead(t *testing.T) {
	h := newHarness(t, Config{Slots: 1})
	h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	h.run()
	var conns []*ownConn
	for _, req := range h.tr.take() {
		c := &ownConn{read: true, refuse: true}
		conns = append(conns, c)
		req.Sink.Dialed(req.Conn)
		req.Sink.Ready(req.Conn, c)
	}
	h.run()
	if len(conns) != 1 {
		t.Fatalf("%d connections, want 1", len(conns))
	}
	asked := false
	done, deadline := h.eng.SubmitGroupReadOwn(context.Background(), group(2, &doneLog{}),
		func() time.Time { asked = true; return time.Unix(1, 0) })
	if done || !deadline.IsZero() || asked || len(conns[0].reads) != 0 || conns[0].own != 1 {
		t.Fatalf("done %v, deadline %v, deadline asked %v, %d reads asked, %d own offers; want false, none, no, 0, 1",
			done, deadline, asked, len(conns[0].reads), conns[0].own)
	}
}
