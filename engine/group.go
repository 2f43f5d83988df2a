package engine

import (
	"errors"

	"github.com/respire-go/respire/fsm"
)

// GroupOfferer is an optional interface of a Conn: it takes several commands as one unit.
// OfferGroup queues every command of cmds (each at StageBuffered) so that their frames are
// written back to back, in order, with no other command's bytes between them, and reports
// true; or, when the connection no longer takes commands, it reports false and leaves every
// command untouched. It never takes part of a group.
//
// Groups carry explicit batches: a pipeline that must reach one connection in one write, and
// a MULTI ... EXEC transaction on a connection other callers share, where a command of
// another caller between MULTI and EXEC would join the transaction.
type GroupOfferer interface {
	OfferGroup(cmds []*Command) bool
}

// ErrGroupUnsupported: the connection chosen for a group does not implement GroupOfferer, so
// the group cannot be written as one unit. Nothing was sent.
var ErrGroupUnsupported = errors.New("respire: the connection cannot take a group of commands as one unit")

// ErrMultiOnCluster: a pipeline sent as one command (Multi) was submitted to a Cluster engine,
// which routes each command by its own slot. Nothing was sent.
var ErrMultiOnCluster = errors.New("respire: a Cluster engine cannot take a pipeline as one command")

// SubmitGroup sends cmds, in order, on one connection as one unit (see GroupOfferer), or
// queues them until a connection is ready; it never blocks on the network. Every command
// completes through its own Done, exactly once, and keeps its own stage, so that a connection
// lost in the middle of the group fails the commands that were never written definitely and
// leaves those that were written with an unknown outcome, while those whose replies arrived
// keep them.
//
// cmds[0] leads the group: Withdraw(cmds[0]) abandons the whole group while it waits for a
// connection (the other commands are then the caller's again and will never be sent); the
// other commands must not be withdrawn on their own. A group is one use of the routing
// snapshot, like one command (see Submit), and one waiter when it has to wait.
func (e *Engine) SubmitGroup(cmds []*Command) { e.submitGroup(cmds, false) }

// submitGroup is SubmitGroup; own: the calling goroutine is the group's caller and calls
// ReadOwn next (SubmitGroupReadOwn). It returns the connection that took the group on this
// goroutine, or nil when the group went to the loop (or failed, or was abandoned).
func (e *Engine) submitGroup(cmds []*Command, own bool) Conn {
	if len(cmds) == 0 {
		return nil
	}
	if e.cl != nil {
		if cmds[0].Multi != nil {
			failGroup(cmds, &AcquireError{Outcome: fsm.OutcomeFailed, Err: ErrMultiOnCluster})
			return nil
		}
		e.submitGroupCluster(cmds)
		return nil
	}
	lead := cmds[0]
	s := e.snap.Load()
	n := uint64(len(s.slots))
	start := e.rr.Add(1)
	var passed *slotView
	passedAt := uint64(0)
	for k := uint64(0); k < n; k++ {
		i := (start + k) % n
		v := &s.slots[i]
		if v.conn != nil {
			g, ok := v.conn.(GroupOfferer)
			if !ok {
				failGroup(cmds, &AcquireError{Outcome: fsm.OutcomeFailed, Err: ErrGroupUnsupported})
				return nil
			}
			enqueueOwnGroup(cmds)
			cmds[0].sentOn(v.relax) // the run's caller asks the lead (maint.go: groupSentOn)
			if !offerGroup(g, cmds, own) {
				// The connection began draining after this snapshot was published: nothing
				// left, so the loop routes the group.
				for _, cmd := range cmds {
					cmd.requeue()
				}
				break
			}
			if passed != nil && passed.noticed.CompareAndSwap(false, true) {
				e.post(item{ev: fsm.Event{Kind: fsm.Noticed, Slot: int(passedAt)}})
			}
			return v.conn
		}
		if passed == nil && v.awaitsUse && !v.noticed.Load() {
			passed, passedAt = v, i
		}
	}
	e.demand(fsm.NeedAny, &waiter{cmd: lead, group: cmds})
	return nil
}

// enqueueGroup moves a group to StageBuffered. The lead decides: false means its caller
// abandoned it, and nothing of the group may be sent.
func enqueueGroup(cmds []*Command) bool {
	if !cmds[0].Enqueued() {
		return false
	}
	for _, cmd := range cmds[1:] {
		cmd.Enqueued()
	}
	return true
}

// enqueueOwnGroup moves a group its caller is submitting to StageBuffered, on the caller's
// goroutine: until the connection takes the group, nobody else can see its commands (its caller
// is the only one that could withdraw the lead, and it is busy here), so the stages are written
// plainly instead of by a compare-and-swap per command. The connection's OfferGroup then
// publishes them with the commands.
func enqueueOwnGroup(cmds []*Command) {
	for _, cmd := range cmds {
		cmd.stage.v = uint32(StageBuffered)
	}
}

// failGroup completes every command of a group that never left the engine with err, unless
// the caller abandoned the group first (its lead then belongs to the caller again).
func failGroup(cmds []*Command, err error) {
	if !cmds[0].claimQueued(err) {
		return
	}
	for _, cmd := range cmds[1:] {
		cmd.claimQueued(err)
	}
}

// offerGroup offers cmds to g, as its caller's own group (OwnGroupOfferer) when own and g
// takes one.
func offerGroup(g GroupOfferer, cmds []*Command, own bool) bool {
	if own {
		if o, ok := g.(OwnGroupOfferer); ok {
			return o.OfferOwnGroup(cmds)
		}
	}
	return g.OfferGroup(cmds)
}

// sendGroup hands a granted group to c (on the loop). It reports false when c refused the
// group untouched (it stopped taking commands after the grant): the group is queued again, and
// the caller parks it until c's loss is processed.
func sendGroup(c Conn, cmds []*Command) bool {
	g, ok := c.(GroupOfferer)
	if !ok {
		failGroup(cmds, &AcquireError{Outcome: fsm.OutcomeFailed, Err: ErrGroupUnsupported})
		return true
	}
	if !enqueueGroup(cmds) {
		return true
	}
	groupSentOn(cmds, c) // maint.go
	if !g.OfferGroup(cmds) {
		for _, cmd := range cmds {
			cmd.requeue()
		}
		return false
	}
	return true
}

// completeGroup answers a group's demand (on the loop).
func (e *Engine) completeGroup(f *fsm.Effect, cmds []*Command) {
	switch f.Outcome {
	case fsm.OutcomeGranted:
		if c := e.conns[f.Conn]; c != nil {
			if !sendGroup(c, cmds) {
				e.park(f.Conn, &waiter{cmd: cmds[0], group: cmds})
			}
		} else {
			failGroup(cmds, &AcquireError{Outcome: fsm.OutcomeFailed})
		}
	case fsm.OutcomeCancelled:
		// The caller abandoned the group; it owns every command again.
	default:
		failGroup(cmds, &AcquireError{Outcome: f.Outcome, Err: f.Err})
	}
}
