package engine

import (
	"testing"

	"github.com/respire-go/respire/fsm"
)

// replyingConn completes every command it is sent before Send returns, as a real connection can
// when the sender writes the frame itself and the reply comes back before the sender's goroutine
// runs again (netio's direct write on an idle connection, from the event loop's grant).
type replyingConn struct{ sent int }

func (c *replyingConn) Send(cmd *Command) {
	c.sent++
	cmd.Writing()
	cmd.Written()
	cmd.Complete(nil)
}
func (c *replyingConn) Drain() {}
func (c *replyingConn) Close() {}

// TestGrantSeesItsStepPublished: whoever learns of a grant (a queued command's reply, an Acquire
// callback) learns it after the routes of the step that granted it are published, so that
// Connected and the hot path agree with the outcome. The loop used to publish only at the end of
// the step, after executing the grants; a command granted on a new connection could then complete
// while Connected still reported false. TestKillAndRestartUnderPolicy (client) saw it once the
// first command after a reconnection could be written on the loop's goroutine: Ping succeeded,
// then IsConnected reported false. Without the publication before Complete effects, both checks
// below fail (checked).
func TestGrantSeesItsStepPublished(t *testing.T) {
	h := newHarness(t, Config{Slots: 1})
	var connectedAtReply []bool
	cmd := newCmd(func(*Command) { connectedAtReply = append(connectedAtReply, h.eng.Connected()) })
	h.eng.Submit(cmd)
	var connectedAtGrant []bool
	h.eng.Acquire(fsm.NeedAny, func(g Grant) {
		connectedAtGrant = append(connectedAtGrant, g.Outcome == fsm.OutcomeGranted && h.eng.Connected())
	})
	h.run()
	if h.eng.Connected() {
		t.Fatal("connected before any connection was ready")
	}
	conn := &replyingConn{}
	for _, req := range h.tr.take() {
		req.Sink.Dialed(req.Conn)
		req.Sink.Ready(req.Conn, conn)
	}
	h.run()
	if conn.sent != 1 || len(connectedAtReply) != 1 || len(connectedAtGrant) != 1 {
		t.Fatalf("the grant did not run as the test needs: sent %d, replies %d, grants %d",
			conn.sent, len(connectedAtReply), len(connectedAtGrant))
	}
	if !connectedAtReply[0] {
		t.Error("a command granted on the new connection completed while Connected reported false")
	}
	if !connectedAtGrant[0] {
		t.Error("an Acquire callback was granted while Connected reported false")
	}
}
