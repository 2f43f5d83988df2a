package engine

import (
	"context"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/fsm"
)

// ReadRoute carries one read through a ReplicaRouter: its selections, at most one per
// candidate, and what each attempt's end means for the router. It is a value (Route returns
// it), so an unhedged read costs no allocation. Its caller owns the waiting: it submits the
// command with Submit, waits for it however its runtime waits (a select in production, the
// host in the simulator), and reports a completed command with Completed.
//
// The protocol, for a read of cmd:
//
//	rt := router.Route(policy, hedgeable)
//	for {
//		target, watch, err := rt.Select(ctx)   // err: *ReadRefusal, ctx's error, or the last acquisition failure
//		if watch != nil { ... a HedgedRead runs it ... }
//		rt.Submit(cmd)
//		... wait for cmd ...
//		if !rt.Completed(cmd, closed) { break }   // true: nothing was sent, select again
//	}
//
// A read is sent once: Completed asks for another selection only when cmd failed to acquire a
// connection before anything was sent.
type ReadRoute struct {
	r         *ReplicaRouter
	policy    fsm.ReadFrom
	hedgeable bool
	// left is how many selections remain; target the last one.
	left, target int
	// acquired is the last selection's acquisition failure (cmd.Err), nil before any.
	acquired error
	// pending is the selection Begin left waiting for a probe (pending.ch non-nil).
	pending pendingSelect
}

// Route starts a read under policy; hedgeable says the command may be hedged (Select watches
// it when the router hedges).
func (r *ReplicaRouter) Route(policy fsm.ReadFrom, hedgeable bool) ReadRoute {
	return ReadRoute{r: r, policy: policy, hedgeable: hedgeable, left: len(r.targets), target: -1}
}

// Select picks the next candidate, waiting (at most fsm.ProbeDeadline) when every candidate
// has a probe pending. A non-nil *ReadWatch says the router watches the read for a hedge: run
// it with NewHedgedRead. The error is ctx's when ctx ended, the previous selection's
// acquisition failure when no other candidate can take the read (so the caller reports the
// original failure), or a *ReadRefusal.
func (rt *ReadRoute) Select(ctx context.Context) (int, *ReadWatch, error) {
	target, w, err, done := rt.Begin()
	if done {
		return target, w, err
	}
	select {
	case a := <-rt.pending.ch:
		rt.pending.answer, rt.pending.ch = a, nil
		return rt.end()
	case <-ctx.Done():
		return -1, nil, rt.Cancel(ctx.Err())
	}
}

// Begin is Select without waiting, for a runtime that polls (the simulator's host): done
// false says every candidate has a probe pending; Answered reports when the answer arrived
// (within fsm.ProbeDeadline), then Finish returns it, or Cancel stops waiting.
func (rt *ReadRoute) Begin() (target int, w *ReadWatch, err error, done bool) {
	if rt.left == 0 {
		return -1, nil, rt.acquired, true
	}
	rt.left--
	rt.pending = rt.r.selectBegin(rt.policy, rt.hedgeable)
	if rt.pending.ch != nil {
		return -1, nil, nil, false
	}
	target, w, err = rt.end()
	return target, w, err, true
}

// Answered reports whether the selection Begin left pending has its answer.
func (rt *ReadRoute) Answered() bool { return len(rt.pending.ch) > 0 }

// Finish returns the answer of the selection Begin left pending, once Answered.
func (rt *ReadRoute) Finish() (int, *ReadWatch, error) {
	rt.pending.answer, rt.pending.ch = <-rt.pending.ch, nil
	return rt.end()
}

// Cancel stops waiting for the selection Begin left pending and returns the read's error: the
// router's refusal when it refused the read before the withdrawal, reason otherwise (an answer
// that routed the read is dropped: nothing was sent).
func (rt *ReadRoute) Cancel(reason error) error {
	if rt.pending.ch != nil && rt.r.selectCancel(&rt.pending) {
		_, _, err := rt.end()
		return err
	}
	rt.pending.ch = nil
	return reason
}

// end turns the selection's answer into Select's results.
func (rt *ReadRoute) end() (int, *ReadWatch, error) {
	target, w, err := rt.r.selectEnd(&rt.pending)
	if err != nil {
		if rt.acquired != nil {
			return -1, nil, rt.acquired
		}
		return -1, nil, err
	}
	rt.target = target
	return target, w, nil
}

// Unusable reports that the last selection could not take the read and nothing was sent (a
// dedicated connection could not be rented from it, or did not answer ROLE as a replica): it
// cools down, and the next Select picks another candidate. err is the failure Select returns
// when no other candidate can take the read.
func (rt *ReadRoute) Unusable(err error) {
	rt.r.Failed(rt.target)
	rt.acquired = err
}

// Target returns the last selection.
func (rt *ReadRoute) Target() int { return rt.target }

// Engine returns the engine of the last selection.
func (rt *ReadRoute) Engine() *Engine { return rt.r.targets[rt.target] }

// Submit sends cmd (Reset by the caller) to the last selection's engine.
func (rt *ReadRoute) Submit(cmd *Command) { rt.r.targets[rt.target].Submit(cmd) }

// Completed reports a completed attempt of the read to the router and says whether the read
// selects again: true when cmd failed to acquire a connection before anything was sent (an
// *AcquireError, not MaybeSent) and the client is not closed; the candidate cools down. A
// replica whose connection failed after the bytes may have left cools down too, and the read
// ends: it is never sent again.
func (rt *ReadRoute) Completed(cmd *Command, closed bool) (again bool) {
	if cmd.Err == nil {
		return false
	}
	var ae *AcquireError
	if !cmd.MaybeSent() && errors.As(cmd.Err, &ae) {
		rt.r.Failed(rt.target)
		if closed {
			return false
		}
		rt.acquired = cmd.Err
		return true
	}
	if rt.target != 0 && !closed {
		rt.r.Failed(rt.target)
	}
	return false
}
