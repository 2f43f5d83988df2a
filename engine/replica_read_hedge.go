package engine

import (
	"sync/atomic"
)

// HedgedRead runs a read the router watches for a hedge (ReadRoute.Select returned a
// *ReadWatch): the original attempt goes to the selected candidate, a hedge goes where the
// router says, and the router's settlement picks the attempt whose outcome completes the read.
// The caller's command is never sent: each attempt is a copy (hedging allocates), and the
// winner's reply is the caller's to take.
//
// It is driven from one goroutine at a time, by polling: Step handles whatever happened (an
// attempt ended, the router sent a signal) without blocking, and Wake is signalled whenever
// there is something new to handle. Production waits on Wake in a select with its context and
// timeout; the simulator polls it from its host.
type HedgedRead struct {
	r    hedgeHost
	w    *ReadWatch
	orig *Command
	att  [2]hedgeAttempt
	n    int
	// settled is set once the router settled the read; win is the settled attempt's index, or -1
	// when the router closed.
	settled bool
	win     int
}

// hedgeAttempt is one copy of a hedged read on its way to a candidate.
type hedgeAttempt struct {
	cmd      Command
	target   int
	done     atomic.Bool
	reported bool
}

// hedgeHost is where a hedged read's attempts go and whom their ends are reported to: a
// standalone or Sentinel client's ReplicaRouter, or the router of a Cluster shard.
type hedgeHost interface {
	// hedgeSubmit sends an attempt (Reset) to candidate target; hedgeAbandon lets it go.
	hedgeSubmit(target int, cmd *Command)
	hedgeAbandon(target int, cmd *Command)
	// hedgeFailed reports that candidate target's connection failed an attempt.
	hedgeFailed(target int)
	// hedgeEnded reports an attempt's end; hedgeWithdraw that the caller left.
	hedgeEnded(w *ReadWatch, target int, ok bool)
	hedgeWithdraw(w *ReadWatch)
}

func (r *ReplicaRouter) hedgeSubmit(target int, cmd *Command)  { r.targets[target].Submit(cmd) }
func (r *ReplicaRouter) hedgeAbandon(target int, cmd *Command) { r.targets[target].Abandon(cmd) }
func (r *ReplicaRouter) hedgeFailed(target int)                { r.Failed(target) }
func (r *ReplicaRouter) hedgeEnded(w *ReadWatch, target int, ok bool) {
	r.Ended(w, target, ok)
}
func (r *ReplicaRouter) hedgeWithdraw(w *ReadWatch) { r.Withdraw(w) }

// NewHedgedRead returns the hedged run of cmd, selected by rt with watch w. Call Start.
func NewHedgedRead(rt *ReadRoute, w *ReadWatch, cmd *Command) *HedgedRead {
	return &HedgedRead{r: rt.r, w: w, orig: cmd, win: -1}
}

// Wake is signalled when Step has something to handle.
func (h *HedgedRead) Wake() <-chan struct{} { return h.w.wake }

// Start sends the original attempt to the selected candidate.
func (h *HedgedRead) Start(target int) { h.send(target) }

func (h *HedgedRead) send(target int) {
	a := &h.att[h.n]
	h.n++
	a.target = target
	a.cmd.Name, a.cmd.Expect, a.cmd.ID = h.orig.Name, h.orig.Expect, h.orig.ID
	a.cmd.Frame = append([]byte(nil), h.orig.Frame...)
	wake := h.w.wake
	a.cmd.Done = func(*Command) {
		a.done.Store(true)
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	a.cmd.Reset()
	h.r.hedgeSubmit(target, &a.cmd)
}

// Step reports the attempts that ended to the router, sends the hedge the router asks for, and
// reports whether the router settled the read. It never blocks.
func (h *HedgedRead) Step() (settled bool) {
	for {
		progressed := false
		for i := range h.n {
			a := &h.att[i]
			if a.reported || !a.done.Load() {
				continue
			}
			a.reported, progressed = true, true
			if a.cmd.Err != nil {
				h.r.hedgeFailed(a.target)
			}
			h.r.hedgeEnded(h.w, a.target, a.cmd.Err == nil && !a.cmd.Reply.IsError())
		}
		select {
		case s := <-h.w.Signals:
			progressed = true
			if !s.Settle {
				if h.n < len(h.att) {
					h.send(s.Target)
				}
				continue
			}
			h.settled = true
			for i := range h.n {
				if h.att[i].target == s.Target && h.att[i].reported {
					h.win = i
				}
			}
			return true
		default:
		}
		if !progressed {
			return h.settled
		}
	}
}

// Result returns the settled attempt's command (its Reply, Err and FinalStage are the read's
// outcome) and its candidate; nil and -1 when the router closed before settling. Call it after
// Step reported the settlement.
func (h *HedgedRead) Result() (*Command, int) {
	if h.win < 0 {
		return nil, -1
	}
	return &h.att[h.win].cmd, h.att[h.win].target
}

// Release lets the attempts that did not win go: one still queued is withdrawn, one a
// connection owns keeps its response slot until it ends.
func (h *HedgedRead) Release() {
	for i := range h.n {
		if i != h.win && !h.att[i].done.Load() {
			h.r.hedgeAbandon(h.att[i].target, &h.att[i].cmd)
		}
	}
}

// Leave ends a read whose caller stopped waiting: the router stops watching it and every
// attempt in flight is let go. It returns what Orphaned returns, for the caller's error: sent
// counts every attempt, so an original attempt that was sent and then failed (its connection
// lost) still makes the outcome unknown while its hedge waits for a connection.
func (h *HedgedRead) Leave() (target int, sent bool, stage Stage) {
	target, sent, stage = h.Orphaned()
	h.r.hedgeWithdraw(h.w)
	h.win = -1
	h.Release()
	return target, sent, stage
}

// Orphaned describes a read whose router closed before any attempt settled it (Result returns
// nil): the original attempt's candidate, whether the bytes of any attempt may have left, and
// the original attempt's stage, so that the caller reports an unknown outcome rather than a
// definite failure when the read may have run.
func (h *HedgedRead) Orphaned() (target int, sent bool, stage Stage) {
	orig := &h.att[0]
	stage = orig.cmd.Stage()
	if orig.done.Load() {
		stage = orig.cmd.FinalStage()
	}
	return orig.target, h.Sent(), stage
}

// Sent reports whether the bytes of any attempt may have left (the read may have run
// somewhere), so that a caller never selects again after it.
func (h *HedgedRead) Sent() bool {
	for i := range h.n {
		a := &h.att[i]
		if a.done.Load() && a.cmd.MaybeSent() || !a.done.Load() && a.cmd.Stage() >= StageBuffered {
			return true
		}
	}
	return false
}

// Relax returns the relaxation host of the connection that attempt i (0: the original, 1: the
// hedge) was handed to, or nil when there is no such attempt, it has ended, or its connection
// has none. A caller whose timeout fired asks it for each attempt, as a single command's caller
// asks Command.Relax. Call it from the goroutine that drives the read.
func (h *HedgedRead) Relax(i int) *Relax {
	if i < 0 || i >= h.n {
		return nil
	}
	a := &h.att[i]
	if a.done.Load() {
		return nil
	}
	return a.cmd.Relax()
}
