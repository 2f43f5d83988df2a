package engine

import (
	"context"
	"sort"
	"strconv"
	"strings"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/plant"
	"github.com/respire-go/respire/netio/resp"
)

// Identity is what a fence needs to know about a connection: the id the server gave it (CLIENT
// ID) and the address it was actually connected to.
type Identity struct {
	// ClientID is the connection's server-side id.
	ClientID int64
	// Peer is the physical peer: the resolved address, not the configured name.
	Peer Endpoint
}

// Identified is an optional interface of a Conn that records its identity for fences. The engine
// tracks the connections that asked for their identity (Fenceable) and asks one that ended
// whether it left replies outstanding (Unanswered); when it did, the connection owes a fence
// (fsm.Fence), identified or not: an unidentified one makes Settle answer fsm.ErrNoIdentity.
// Connections that do not implement Identified, or did not ask, are not tracked, and Settle
// answers for them as for a connection that drained: callers check that fences are enabled
// before they settle.
type Identified interface {
	// Fenceable reports whether the connection asked for its CLIENT ID (fences are enabled).
	Fenceable() bool
	// Identity returns the connection's identity and whether its CLIENT ID is known.
	Identity() (Identity, bool)
	// Unanswered reports whether the connection ended with commands written whose replies
	// never came. It is read only after the connection stopped: after Close returned, or once
	// Lost was reported.
	Unanswered() bool
}

// KillError is the failure of a fence's CLIENT KILL: the server's error reply. The message is
// the server's and names no key, value or credential.
type KillError struct {
	// Message is the server's error reply (its code first).
	Message string
}

// Error implements error.
func (e *KillError) Error() string { return "respire: fence CLIENT KILL rejected: " + e.Message }

// fenceState is the loop's bookkeeping for fences: the identified connections that may still end
// with replies outstanding, and the Settle waiters whose connection has not ended yet.
type fenceState struct {
	// tracked are the ready connections implementing Identified, until they end (or stop with
	// nothing outstanding).
	tracked map[fsm.ConnID]Identified
	// pending are Settle waiters for a connection that has not ended yet, by connection.
	pending map[fsm.ConnID][]settleWait
}

// settleWait is a Settle waiter the loop holds until its connection ends.
type settleWait struct {
	id fsm.WaiterID
	w  *waiter
}

// Settle waits, on the loop, for the fence of connection conn: notify receives OutcomeGranted
// once nothing conn accepted can still execute (its fence was acknowledged, or it owed none),
// OutcomeFailed with fsm.ErrNoIdentity when conn ended without a known CLIENT ID, OutcomeFailed
// with the kill's error when the fence's own attempt was refused (the obligation stays and is
// retried), or OutcomeClosed when the engine was disposed first. A connection that has not ended
// yet is waited for. Withdraw the wait with Cancel(fsm.MachineFence, id).
func (e *Engine) Settle(conn fsm.ConnID, notify func(Grant)) fsm.WaiterID {
	id := fsm.WaiterID(e.waiterSeq.Add(1))
	w := &waiter{notify: notify}
	e.post(item{call: func() {
		if e.closed {
			notify(Grant{Outcome: fsm.OutcomeClosed, Err: fsm.ErrFenceDisposed})
			return
		}
		if _, live := e.fc.tracked[conn]; live {
			if e.fc.pending == nil {
				e.fc.pending = map[fsm.ConnID][]settleWait{}
			}
			e.fc.pending[conn] = append(e.fc.pending[conn], settleWait{id: id, w: w})
			return
		}
		e.post(item{ev: fsm.Event{Kind: fsm.Demanded, Machine: fsm.MachineFence, Waiter: id, Conn: conn}, waiter: w})
	}})
	return id
}

// withdrawSettle removes a Settle waiter the loop still holds, answering it cancelled, and
// reports whether it found it.
func (e *Engine) withdrawSettle(id fsm.WaiterID) bool {
	for conn, ws := range e.fc.pending {
		for i, s := range ws {
			if s.id == id {
				e.fc.pending[conn] = append(ws[:i], ws[i+1:]...)
				if len(e.fc.pending[conn]) == 0 {
					delete(e.fc.pending, conn)
				}
				s.w.notify(Grant{Outcome: fsm.OutcomeCancelled})
				return true
			}
		}
	}
	return false
}

// cancelSettle withdraws Settle waiter id: the loop's own, or the machine's.
func (e *Engine) cancelSettle(id fsm.WaiterID) {
	e.post(item{call: func() {
		if !e.withdrawSettle(id) {
			e.post(item{ev: fsm.Event{Kind: fsm.Withdrew, Machine: fsm.MachineFence, Waiter: id}})
		}
	}})
}

// fenceReady starts tracking a connection whose handshake finished, when it records its
// identity, forgetting tracked ones that stopped with nothing outstanding.
func (e *Engine) fenceReady(id fsm.ConnID, c Conn) {
	ic, ok := c.(Identified)
	if !ok || !ic.Fenceable() || fsm.MachineOf(uint64(id)) == fsm.MachineFence {
		return
	}
	if e.fc.tracked == nil {
		e.fc.tracked = map[fsm.ConnID]Identified{}
	}
	for old, t := range e.fc.tracked {
		if s, ok := t.(Stopper); ok && s.Stopped() && !t.Unanswered() && len(e.fc.pending[old]) == 0 {
			delete(e.fc.tracked, old)
		}
	}
	e.fc.tracked[id] = ic
}

// fenceEnded runs once connection id has stopped (lost, or closed by the loop): when it left
// replies outstanding, its obligation is posted (Owed), and its Settle waiters ask the machine
// after it.
func (e *Engine) fenceEnded(id fsm.ConnID) {
	t, ok := e.fc.tracked[id]
	if !ok {
		return
	}
	delete(e.fc.tracked, id)
	if t.Unanswered() {
		ident, known := t.Identity()
		d := &fsm.FenceData{Owed: id, Peer: fsm.Endpoint{Host: ident.Peer.Host, Port: ident.Peer.Port}}
		if known {
			d.ClientID = ident.ClientID
		}
		e.post(item{ev: fsm.Event{Kind: fsm.Owed, Machine: fsm.MachineFence, Conn: id, Fence: d}})
	}
	ws := e.fc.pending[id]
	delete(e.fc.pending, id)
	for _, s := range ws {
		e.post(item{ev: fsm.Event{Kind: fsm.Demanded, Machine: fsm.MachineFence, Waiter: s.id, Conn: id}, waiter: s.w})
	}
}

// fenceDisposed answers the Settle waiters the loop still holds: the engine is closing.
func (e *Engine) fenceDisposed() {
	conns := make([]fsm.ConnID, 0, len(e.fc.pending))
	for c := range e.fc.pending {
		conns = append(conns, c)
	}
	sort.Slice(conns, func(i, j int) bool { return conns[i] < conns[j] })
	for _, c := range conns {
		for _, s := range e.fc.pending[c] {
			s.w.notify(Grant{Outcome: fsm.OutcomeClosed, Err: fsm.ErrFenceDisposed})
		}
		delete(e.fc.pending, c)
	}
}

// fenceOpen opens a fence's control connection straight to the peer the effect names, with the
// transport's own connect timeout, bypassing any Sentinel or Cluster routing.
func (e *Engine) fenceOpen(f *fsm.Effect) {
	ctx, cancel := context.WithCancel(context.Background())
	e.opening[f.Conn] = cancel
	e.opens.Add(1)
	e.deps.Transport.Open(ctx, OpenRequest{Conn: f.Conn, Slot: -1, Attempt: f.Attempt,
		Endpoint: endpointOf(f.Endpoint), Machine: fsm.MachineFence, Sink: sink{e}})
}

// fenceKill sends CLIENT KILL ID on the ready control connection of a Kill effect; the answer
// comes back as a Killed event.
func (e *Engine) fenceKill(f *fsm.Effect) {
	id := f.Conn
	c := e.conns[id]
	if c == nil {
		e.post(item{ev: fsm.Event{Kind: fsm.Killed, Conn: id, Err: errNoQueryConn}})
		return
	}
	if e.deps.Plants.Fire(plant.FenceSkipKill, uint64(id)) {
		// Planted: the kill counts as answered though it was never sent.
		e.post(item{ev: fsm.Event{Kind: fsm.Killed, Conn: id, Class: fsm.Transient}})
		return
	}
	cmd := &Command{Name: "CLIENT KILL", Frame: resp.AppendCommand(nil, "CLIENT", "KILL", "ID", strconv.FormatInt(f.Fence.ClientID, 10))}
	cmd.Done = func(cmd *Command) {
		ev := fsm.Event{Kind: fsm.Killed, Conn: id}
		ev.Class, ev.Err = judgeKill(cmd)
		cmd.Reply = resp.Value{}
		e.post(item{ev: ev})
	}
	cmd.Enqueued()
	c.Send(cmd)
}

// judgeKill reads the answer of CLIENT KILL ID: any count proves the connection is gone (1: it
// was killed now; 0: it had already gone), and so does "No such client". A connection failure is
// transient; other server errors are permanent unless their code is transient.
func judgeKill(cmd *Command) (fsm.FailureClass, error) {
	if cmd.Err != nil {
		return fsm.Transient, cmd.Err
	}
	v := &cmd.Reply
	switch {
	case v.Kind == resp.KindInteger:
		return fsm.Transient, nil
	case v.IsError():
		msg := v.ErrorMessage()
		if strings.Contains(strings.ToLower(msg), "no such client") {
			return fsm.Transient, nil
		}
		switch v.ErrorCode() {
		case "LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN", "CLUSTERDOWN":
			return fsm.Transient, &KillError{Message: msg}
		}
		return fsm.Permanent, &KillError{Message: msg}
	}
	return fsm.Permanent, &KillError{Message: "unexpected " + v.Kind.String() + " reply"}
}
