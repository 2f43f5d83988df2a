package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// identConn is a fakeConn with an identity; unanswered says how it ended.
type identConn struct {
	fakeConn
	id         int64
	unanswered bool
}

func (c *identConn) Identity() (Identity, bool) {
	return Identity{ClientID: c.id, Peer: Endpoint{Host: "10.1.2.3", Port: 6380}}, c.id != 0
}
func (c *identConn) Unanswered() bool { return c.unanswered }
func (c *identConn) Fenceable() bool  { return true }

// readyIdent resolves the pending opens with identified connections.
func (h *harness) readyIdent(id int64) map[fsm.ConnID]*identConn {
	out := map[fsm.ConnID]*identConn{}
	for _, req := range h.tr.take() {
		c := &identConn{id: id}
		out[req.Conn] = c
		req.Sink.Dialed(req.Conn)
		req.Sink.Ready(req.Conn, c)
	}
	h.run()
	return out
}

func (h *harness) trace() string { return strings.Join(h.steps, "\n") }

// TestEngineHostsFences: a Settle for a live connection waits for its end; the connection's
// loss with replies outstanding posts its obligation; the fence dials the captured peer (not the
// configured endpoint), kills the id, and only the kill's answer grants the Settle. The journal
// replays to the same effects.
func TestEngineHostsFences(t *testing.T) {
	h := newHarness(t, Config{Slots: 1})
	h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	h.run()
	conns := h.readyIdent(41)
	var dead fsm.ConnID
	for id := range conns {
		dead = id
	}
	var got []Grant
	h.eng.Settle(dead, func(g Grant) { got = append(got, g) })
	h.run()
	if len(got) != 0 {
		t.Fatalf("Settle answered while its connection was alive: %+v", got)
	}
	conns[dead].unanswered = true
	sink{h.eng}.Lost(dead, errors.New("reset"))
	h.run()
	if len(got) != 0 {
		t.Fatalf("Settle answered before the fence: %+v", got)
	}
	var fenceReq *OpenRequest
	for _, req := range h.tr.take() {
		if req.Machine == fsm.MachineFence {
			r := req
			fenceReq = &r
		} else {
			// The slot's replacement.
			req.Sink.Ready(req.Conn, &fakeConn{})
		}
	}
	if fenceReq == nil || fenceReq.Endpoint != (Endpoint{Host: "10.1.2.3", Port: 6380}) {
		t.Fatalf("fence dial %+v; trace:\n%s", fenceReq, h.trace())
	}
	ctl := &fakeConn{}
	fenceReq.Sink.Ready(fenceReq.Conn, ctl)
	h.run()
	if ctl.count() != 1 || string(ctl.sent[0].Frame) != string(resp.AppendCommand(nil, "CLIENT", "KILL", "ID", "41")) {
		t.Fatalf("control connection got %d commands; trace:\n%s", ctl.count(), h.trace())
	}
	ctl.sent[0].Reply = resp.Int(1)
	ctl.sent[0].Complete(nil)
	h.run()
	if len(got) != 1 || got[0].Outcome != fsm.OutcomeGranted || !ctl.closed {
		t.Fatalf("after the kill's answer: %+v closed %v; trace:\n%s", got, ctl.closed, h.trace())
	}
	var replayed []string
	Replay(h.eng.Config(), h.events, func(_ *fsm.Event, effects []fsm.Effect) {
		var b []byte
		for i := range effects {
			b = append(b, " | "...)
			b = effects[i].AppendTo(b)
		}
		replayed = append(replayed, string(b))
	})
	if strings.Join(replayed, "\n") != h.trace() {
		t.Fatalf("replay diverged:\n%s\n--- original:\n%s", strings.Join(replayed, "\n"), h.trace())
	}
}

// TestEngineSettleWithoutObligation: a connection that ended with everything answered owes
// nothing, an unidentified one cannot be fenced, and disposal answers a waiting Settle.
func TestEngineSettleWithoutObligation(t *testing.T) {
	h := newHarness(t, Config{Slots: 2})
	h.eng.Acquire(fsm.NeedAll, func(Grant) {})
	h.run()
	conns := h.readyIdent(0)
	var ids []fsm.ConnID
	for id := range conns {
		ids = append(ids, id)
	}
	if ids[0] > ids[1] {
		ids[0], ids[1] = ids[1], ids[0]
	}
	answered, unidentified := ids[0], ids[1]
	conns[unidentified].unanswered = true
	var a, u []Grant
	h.eng.Settle(answered, func(g Grant) { a = append(a, g) })
	h.eng.Settle(unidentified, func(g Grant) { u = append(u, g) })
	sink{h.eng}.Lost(answered, errors.New("reset"))
	sink{h.eng}.Lost(unidentified, errors.New("reset"))
	h.run()
	if len(a) != 1 || a[0].Outcome != fsm.OutcomeGranted {
		t.Fatalf("drained connection: %+v", a)
	}
	if len(u) != 1 || !errors.Is(u[0].Err, fsm.ErrNoIdentity) {
		t.Fatalf("unidentified connection: %+v", u)
	}
	// A Settle still waiting when the engine closes is answered closed.
	h.readyIdent(7)
	var live fsm.ConnID
	for id := range h.eng.conns {
		live = id
	}
	var d []Grant
	h.eng.Settle(live, func(g Grant) { d = append(d, g) })
	h.run()
	h.eng.Close()
	h.run()
	if len(d) != 1 || d[0].Outcome != fsm.OutcomeClosed {
		t.Fatalf("disposal: %+v", d)
	}
}
