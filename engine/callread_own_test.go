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
}

func (c *ownConn) OfferOwnGroup(cmds []*Command) bool {
	if !c.OfferGroup(cmds) {
		return false
	}
	c.mu.Lock()
	c.own++
	c.mu.Unlock()
	return true
}

func (c *ownConn) ReadOwn(_ context.Context, lead, _ *Command, _ time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads = append(c.reads, lead)
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
	if !h.eng.SubmitGroupReadOwn(context.Background(), cmds, time.Time{}) {
		t.Fatal("SubmitGroupReadOwn reported false; the connection's ReadOwn reported true")
	}
	took := 0
	for _, c := range conns {
		switch {
		case c.own == 1 && c.groups == 1:
			took++
			if len(c.reads) != 1 || c.reads[0] != cmds[0] {
				t.Fatalf("the connection that took the group was asked to read %v", c.reads)
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
	if h.eng.SubmitGroupReadOwn(context.Background(), group(2, &doneLog{}), time.Time{}) {
		t.Fatal("SubmitGroupReadOwn reported true with no connection")
	}
}
