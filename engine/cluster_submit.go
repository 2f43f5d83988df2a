package engine

import (
	"sync/atomic"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// The hot path of a Cluster client. A command computes its slot from its own frame (FrameSlot:
// allocation-free, the command table's key positions), reads the published snapshot, and goes
// straight to a ready connection of the node serving the slot, round-robin among its slots.
// Only a command that finds no ready connection (or no node) posts a demand to the loop, where
// the Cluster machine routes it to the node it knows serves the slot, discovering the
// topology first if it has none.

// clusterCmd is a command's Cluster routing state, reset with the command.
type clusterCmd struct {
	// eng is the Cluster engine the command was submitted to: its completions pass through
	// the redirect handling (redirect.go) before its Done.
	eng *Engine
	// routed: slot holds the command's slot (or Keyless).
	routed bool
	slot   int32
	// redirects counts the redirects and rejections followed (at most fsm.ClusterRedirects).
	redirects uint8
	// ask: the next send goes to target preceded by ASKING, as one group.
	ask bool
	// final: the command completes with its reply as it is, without redirect handling.
	final bool
	// target is where a redirect sends the command (zero: the node serving its slot).
	target fsm.Endpoint
	// sender is the node the command was last sent to.
	sender    fsm.Endpoint
	senderNum uint32
	// orig is the first rejection the command got, the answer when recovery fails (nil:
	// none). It is allocated on the first rejection only, so that commands stay small.
	orig *resp.Value
	// node, when set, pins the command to one node (SubmitNode, SubmitRead).
	node uint32
	// read: a replica read (SubmitRead): a MOVED reply completes it instead of being followed.
	read bool
}

// clusterWait is what a Cluster waiter waits for.
type clusterWait struct {
	// on: the waiter belongs to a Cluster engine.
	on bool
	// topology: the command waits for a refresh after a rejection (READONLY, or a MOVED
	// without a usable target), then goes to the slot's owner; readonly fails it when the
	// owner is the node that rejected it.
	topology, readonly bool
	// redirected: the command was rejected before (it holds that rejection in orig); a
	// failure to reach its new node answers it with that rejection. A command only routed
	// again (reroute) has none: such a failure fails it.
	redirected bool
}

// Sender returns the endpoint of the Cluster node a command was last sent to, or the zero
// Endpoint (standalone engines, commands that never left).
func (c *Command) Sender() Endpoint {
	if c.cl.sender.IsZero() {
		return Endpoint{}
	}
	return endpointOf(c.cl.sender)
}

// heldByCluster reports whether a Cluster engine holds cmd after a rejection, with no waiter its
// caller can withdraw (a redirect's demand, a retry's timer). Read it once withdrawn: the engine
// wrote these fields before it made the command abandonable (StageQueued), and writes them no
// more.
func (c *Command) heldByCluster() bool { return c.cl.eng != nil && c.cl.redirects > 0 && c.waiter == 0 }

// Redirects returns how many redirects and rejections a Cluster command followed.
func (c *Command) Redirects() int { return int(c.cl.redirects) }

// submitCluster is Submit for a Cluster engine.
func (e *Engine) submitCluster(cmd *Command) { e.submitClusterAs(cmd, nil) }

// submitClusterAs is submitCluster; with own (cmd as a group of one, see routeAs) it returns
// the connection that took cmd as its caller's own, which the caller asks next (readOwn), or
// nil.
func (e *Engine) submitClusterAs(cmd *Command, own []*Command) Conn {
	cs := &cmd.cl
	if !cs.routed {
		slot, err := FrameSlot(cmd.Frame)
		if err != nil {
			cmd.failQueued(err)
			return nil
		}
		cs.routed, cs.slot, cs.eng = true, int32(slot), e
	}
	if !cmd.Enqueued() {
		return nil // abandoned by its caller
	}
	return e.routeAs(cmd, true, own)
}

// route sends a command that the engine holds (StageBuffered, not abandonable) to the node it
// belongs to, or turns it into a demand. It is called by a redirect on a reader goroutine, by a
// retry timer and by the loop.
func (e *Engine) route(cmd *Command) { e.routeFrom(cmd, false) }

// routeFrom is route; caller says that the submitting caller runs it, so that the caller can
// withdraw the demand it may become.
func (e *Engine) routeFrom(cmd *Command, caller bool) { e.routeAs(cmd, caller, nil) }

// routeAs is routeFrom. own, when not nil, is cmd as a group of one whose caller runs routeAs
// and reads the reply itself next (SubmitReadOwn): a ready connection takes it as that caller's
// own group (OwnGroupOfferer), and routeAs returns that connection; otherwise it returns nil.
func (e *Engine) routeAs(cmd *Command, caller bool, own []*Command) Conn {
	cs := &cmd.cl
	s := e.cl.snap.Load()
	if s.closed {
		cmd.stage.Store(uint32(StageQueued))
		cmd.failQueued(&AcquireError{Outcome: fsm.OutcomeClosed})
		return nil
	}
	idx := -1
	switch {
	case !cs.target.IsZero():
		if i, ok := s.byAddr[cs.target]; ok {
			idx = i
		}
	case cs.node != 0:
		idx = s.cmap.Index(cs.node)
	case cs.slot >= 0:
		idx = s.cmap.Owner(int(cs.slot))
	default:
		idx = s.anyReadyPrimary(e.cl)
	}
	if idx >= 0 && idx < len(s.nodes) {
		if sent, reader := e.sendToNodeAs(&s.nodes[idx], cmd, own); sent {
			return reader
		}
	}
	// Only a rejection the command got can answer it when its new node cannot be reached:
	// reroutes (reroute) count against the budget too, but leave no reply behind.
	e.demandCluster(cmd, clusterWait{on: true, redirected: cs.orig != nil}, caller)
	return nil
}

// anyReadyPrimary returns the index of a primary with a ready connection, rotating among them,
// or -1.
func (s *clusterSnap) anyReadyPrimary(cl *clusterState) int {
	n := uint64(len(s.primaries))
	if n == 0 {
		return -1
	}
	start := cl.timers.Add(1)
	for k := uint64(0); k < n; k++ {
		i := s.primaries[(start+k)%n]
		if s.nodes[i].ready() {
			return i
		}
	}
	return -1
}

// sendToNodeAs hands a held command to a ready connection of node v, rotating among its slots,
// and reports whether it did; with own (see routeAs) it also returns the connection that took
// cmd as its caller's own group, or nil when the connection took it otherwise. A slot it passed
// that awaits use is noticed (one attempt per use, as for a standalone client).
func (e *Engine) sendToNodeAs(v *nodeView, cmd *Command, own []*Command) (bool, Conn) {
	n := uint32(len(v.slots))
	if n == 0 {
		return false, nil
	}
	start := v.rr.Add(1)
	var passed *slotView
	passedAt := uint32(0)
	for k := uint32(0); k < n; k++ {
		i := (start + k) % n
		sv := &v.slots[i]
		if sv.conn == nil {
			if passed == nil && sv.awaitsUse && !sv.noticed.Load() {
				passed, passedAt = sv, i
			}
			continue
		}
		cmd.cl.sender, cmd.cl.senderNum = v.addr, v.num
		var reader Conn
		if cmd.cl.read && !cmd.cl.ask && int(i) < len(v.readOnly) {
			if !e.deliverRead(sv.conn, cmd, v.readOnly[i]) {
				return false, nil
			}
		} else if sent, ownRead := e.deliverAs(sv.conn, cmd, own); !sent {
			return false, nil
		} else if ownRead {
			reader = sv.conn
		}
		if passed != nil && passed.noticed.CompareAndSwap(false, true) {
			e.post(item{ev: fsm.Event{Kind: fsm.Noticed, Machine: fsm.MachineNodeMux, Node: v.num, Slot: int(passedAt)}})
		}
		return true, reader
	}
	return false, nil
}

// deliver gives a held command to conn (preceded by ASKING after an ASK redirect) and reports
// whether conn took it; a connection that stopped taking commands leaves it untouched.
func (e *Engine) deliver(conn Conn, cmd *Command) bool {
	sent, _ := e.deliverAs(conn, cmd, nil)
	return sent
}

// deliverAs is deliver; with own (see routeAs), a connection that takes groups as their
// caller's own (OwnGroupOfferer) takes cmd as one, and ownRead reports it: the caller must
// then ask the connection's MayRead, and call its ReadOwn when that reports true.
func (e *Engine) deliverAs(conn Conn, cmd *Command, own []*Command) (sent, ownRead bool) {
	cmd.sentOn(relaxOf(conn)) // a Cluster node connection relaxes too (maint.go)
	if cmd.cl.ask {
		return e.deliverAsking(conn, cmd), false
	}
	if own != nil {
		if o, ok := conn.(OwnGroupOfferer); ok {
			sent = o.OfferOwnGroup(own)
			return sent, sent
		}
	}
	if o := offerOf(conn); o != nil {
		return o.Offer(cmd), false
	}
	conn.Send(cmd)
	return true, false
}

// askingFrame is the encoded ASKING command.
var askingFrame = []byte("*1\r\n$6\r\nASKING\r\n")

// deliverAsking sends ASKING and cmd to conn as one group, so that no other command comes
// between them: ASKING applies to the next command on the connection only.
func (e *Engine) deliverAsking(conn Conn, cmd *Command) bool {
	g, ok := conn.(GroupOfferer)
	if !ok {
		cmd.cl.ask = false // no way to send ASKING safely: the redirect fails with its reply
		e.answer(cmd)
		return true
	}
	asking := &Command{Name: "ASKING", Frame: askingFrame, Done: func(*Command) {}}
	asking.Enqueued()
	return g.OfferGroup([]*Command{asking, cmd})
}

// demandCluster makes a held command wait for the loop: the Cluster machine routes it to the
// node serving its slot (or its redirect target, or its pinned node), connecting first. Only a
// demand made on the submitting caller's goroutine (caller) can be withdrawn by it; the others
// stay with the machine until it answers them.
func (e *Engine) demandCluster(cmd *Command, wait clusterWait, caller bool) {
	cs := &cmd.cl
	ev := fsm.Event{Kind: fsm.Demanded, Machine: fsm.MachineNodeMux, Slot: int(cs.slot), Endpoint: cs.target, Node: cs.node}
	if wait.topology {
		ev = fsm.Event{Kind: fsm.Demanded, Machine: fsm.MachineCluster, Need: fsm.NeedTopology, Slot: int(cs.slot), Node: cs.senderNum}
		if cs.slot < 0 {
			ev.Slot = 0
		}
	}
	ev.Waiter = fsm.WaiterID(e.waiterSeq.Add(1))
	w := &waiter{cmd: cmd, cl: wait}
	cmd.waiter = 0
	if caller {
		cmd.waiter = ev.Waiter
	}
	// From here the caller may abandon the command; nothing below touches it.
	cmd.stage.Store(uint32(StageQueued))
	e.post(item{ev: ev, waiter: w})
}

// completeCluster answers a Cluster waiter (on the loop).
func (e *Engine) completeCluster(f *fsm.Effect, w *waiter) {
	cmd := w.cmd
	if f.Outcome == fsm.OutcomeCancelled {
		return // the caller abandoned the command; it owns it again
	}
	if !cmd.Enqueued() {
		return // abandoned while it waited
	}
	cs := &cmd.cl
	switch {
	case w.cl.topology && f.Outcome == fsm.OutcomeGranted:
		if w.cl.readonly && f.Node == cs.senderNum {
			e.answer(cmd) // the refresh found the same node: READONLY stands
			return
		}
		cs.target, cs.ask = fsm.Endpoint{}, false
		e.routeAfterStep(cmd)
	case f.Outcome == fsm.OutcomeGranted:
		c := e.conns[f.Conn]
		if c == nil {
			e.reroute(cmd, &AcquireError{Outcome: fsm.OutcomeFailed})
			return
		}
		cs.sender, cs.senderNum = f.Endpoint, f.Node
		if cs.read && !cs.ask {
			if e.cl.readOnly == nil {
				e.cl.readOnly = make(map[fsm.ConnID]*atomic.Bool)
			}
			if !e.deliverRead(c, cmd, e.cl.readOnlyFlag(f.Conn, e.cl.readOnly)) {
				e.reroute(cmd, &AcquireError{Outcome: fsm.OutcomeFailed})
			}
		} else if !e.deliver(c, cmd) {
			e.reroute(cmd, &AcquireError{Outcome: fsm.OutcomeFailed})
		}
	case f.Outcome == fsm.OutcomeClosed && !e.closed:
		// The node retired before it took the command: route it again, within the budget. Past
		// it, the command failed to find a node; OutcomeClosed would say the engine closed.
		e.reroute(cmd, &AcquireError{Outcome: fsm.OutcomeFailed, Err: ErrNodeRetired})
	case w.cl.redirected || w.cl.topology:
		e.answer(cmd)
	default:
		cmd.stage.Store(uint32(StageQueued))
		cmd.failQueued(&AcquireError{Outcome: f.Outcome, Err: f.Err})
	}
}

// reroute routes a held command again after its node could not take it, counting against the
// redirect budget; past the budget it fails with err (or its rejection, if it had one).
func (e *Engine) reroute(cmd *Command, err error) {
	cs := &cmd.cl
	if cs.redirects >= fsm.ClusterRedirects {
		if cs.orig != nil {
			e.answer(cmd)
			return
		}
		cmd.stage.Store(uint32(StageQueued))
		cmd.failQueued(err)
		return
	}
	cs.redirects++
	cs.target, cs.ask = fsm.Endpoint{}, false
	e.routeAfterStep(cmd)
}

// routeAfterStep routes a held command once the loop's current step is over: the map and the
// routes that step changes are then published, so that the command sees them.
func (e *Engine) routeAfterStep(cmd *Command) {
	e.post(item{call: func() { e.route(cmd) }})
}

// answer completes a held command with the first rejection it got (or its current reply),
// without further redirect handling. Only a command that was rejected is answered: its
// rejection is in cs.orig (redirect keeps it before any path here), never a missing reply.
func (e *Engine) answer(cmd *Command) {
	cs := &cmd.cl
	cs.final = true
	if cs.orig != nil {
		cmd.Reply, cs.orig = *cs.orig, nil
	}
	cmd.stage.Store(uint32(StageAwaitingReply))
	cmd.Complete(nil)
}

// SubmitNode sends cmd to the Cluster node numbered num (a node of ClusterMap), for commands
// that must run on every primary; it fails with ErrNotCluster on a standalone engine. Like
// Submit, it never blocks, and the command completes through its Done exactly once.
func (e *Engine) SubmitNode(cmd *Command, num uint32) {
	if e.cl == nil {
		cmd.failQueued(ErrNotCluster)
		return
	}
	e.submitPinned(cmd, num, Keyless, false)
}

// ErrNotCluster: a Cluster operation on a standalone engine.
var ErrNotCluster = errors.New("respire: not a Cluster client")

// ErrNodeRetired: the Cluster node a command was routed to left the topology before it took the
// command, and routing it again found no node to take it within the redirect budget. It is the
// cause of a failed *AcquireError: the command was never sent.
var ErrNodeRetired = errors.New("respire: the Cluster node retired before it took the command")

// RentSlot asks the dedicated pool of the Cluster node serving slot (Keyless: any primary) for
// an exclusive connection, as Rent does for a standalone engine.
func (e *Engine) RentSlot(slot int, notify func(Grant)) fsm.WaiterID {
	if e.cl == nil {
		return e.Rent(notify)
	}
	return e.demandOn(fsm.MachineNodePool, fsm.Event{Kind: fsm.Demanded, Slot: slot}, &waiter{notify: notify})
}

// submitGroupCluster is SubmitGroup for a Cluster engine: the group goes, as one unit, to the
// node serving the slot its commands share (keyless commands, such as MULTI and EXEC, go with
// them; a group without keys goes to any primary). Commands in different slots fail the group
// with a *CrossSlotError before anything is sent. A group's replies are its commands' own: a
// MOVED or ASK answers its entry, which is never sent again.
func (e *Engine) submitGroupCluster(cmds []*Command) {
	slot := Keyless
	for _, cmd := range cmds {
		s, err := FrameSlot(cmd.Frame)
		if err == nil && s != Keyless && slot != Keyless && s != slot {
			err = &CrossSlotError{Command: cmd.Name, ExpectedSlot: slot, ConflictingSlot: s}
		}
		if err != nil {
			failGroup(cmds, err)
			return
		}
		if s != Keyless {
			slot = s
		}
	}
	s := e.cl.snap.Load()
	idx := s.cmap.Owner(slot)
	if slot == Keyless {
		idx = s.anyReadyPrimary(e.cl)
	}
	if !s.closed && idx >= 0 && idx < len(s.nodes) {
		v := &s.nodes[idx]
		if n := uint32(len(v.slots)); n > 0 {
			start := v.rr.Add(1)
			for k := uint32(0); k < n; k++ {
				sv := &v.slots[(start+k)%n]
				if sv.conn == nil {
					continue
				}
				g, ok := sv.conn.(GroupOfferer)
				if !ok {
					failGroup(cmds, &AcquireError{Outcome: fsm.OutcomeFailed, Err: ErrGroupUnsupported})
					return
				}
				if !enqueueGroup(cmds) {
					return
				}
				groupSentOn(cmds, sv.conn) // a node connection relaxes too (maint.go)
				if g.OfferGroup(cmds) {
					return
				}
				for _, cmd := range cmds {
					cmd.requeue()
				}
				break
			}
		}
	}
	e.demandOn(fsm.MachineNodeMux, fsm.Event{Kind: fsm.Demanded, Slot: slot}, &waiter{cmd: cmds[0], group: cmds})
}
