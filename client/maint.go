package client

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio"
)

// maintTransport sets the maintenance relaxation bounds of the transport configuration from the
// shared resolver's outcome (MaintenanceRelaxedTimeout, MaintenanceWindowTimeout), as the
// simulator does; the handshake's opt-in (MaintenanceNotifications) came with r.Handshake.
func (o *Options) maintTransport(t *netio.TransportConfig, r *config.Resolved) {
	t.Maintenance = r.Relaxation
}

// relaxedWait is called when a command's own timeout fired at fired, or when its relaxation
// shrank: if the connection it was handed to is in a maintenance window (see fsm.Relaxation), it
// returns the channel of the relaxed deadline, re-arming the call's timer, the channel closed
// when a notice ends or shortens the window (engine.Relax.Shrunk), and true. Otherwise the
// command times out.
//
// The command's start is its own deadline minus CommandTimeout, so that commands carry no start
// time on the hot path. The first relaxed answer records it in the call.
func (c *Client) relaxedWait(cl *call, fired time.Time) (<-chan time.Time, <-chan struct{}, bool) {
	r := cl.cmd.Relax()
	if r == nil {
		return nil, nil, false
	}
	if cl.relaxStart.IsZero() {
		cl.relaxStart = fired.Add(-c.opts.CommandTimeout)
	}
	shrunk, ok := relaxTimer(r, cl.timer, cl.relaxStart, c.opts.CommandTimeout)
	if !ok {
		return nil, nil, false
	}
	return cl.timer.C, shrunk, true
}

// awaitReply waits for a routed read's reply (a replica read, standalone, Sentinel or Cluster),
// its command timeout or ctx, with relaxedWait's rule: while the connection that took the
// command is in a maintenance window, the timeout is extended as a single command's is.
// answered reports that the reply came (the call's timer is stopped); otherwise ctxErr is ctx's
// error when the caller stopped waiting, nil when the timeout passed.
func (c *Client) awaitReply(ctx context.Context, cl *call) (answered bool, ctxErr error) {
	timeout := c.armTimeout(cl)
	cl.relaxStart = time.Time{}
	var shrunk <-chan struct{} // the window keeping the command alive shrank
	for {
		select {
		case <-cl.done:
			if cl.timer != nil {
				cl.timer.Stop()
			}
			return true, nil
		case <-ctx.Done():
			return false, ctx.Err()
		case fired := <-timeout:
			if relaxed, ch, ok := c.relaxedWait(cl, fired); ok {
				timeout, shrunk = relaxed, ch
				continue
			}
			return false, nil
		case <-shrunk:
			if relaxed, ch, ok := c.relaxedWait(cl, time.Now()); ok {
				timeout, shrunk = relaxed, ch
				continue
			}
			cl.timer.Stop()
			return false, nil
		}
	}
}

// relaxTimer is the one rule of every caller whose own timeout own, counted from start, fired
// or whose relaxation shrank (a single command, a batch's run, a dedicated connection's
// commands): if r (the relaxation of the connection that took the commands; nil: none) keeps
// them alive (engine.Relax.Extend), it re-arms t for when to ask again and returns the channel
// closed when a notice ends or shortens the window, and true. Otherwise the commands time out
// now (false). Callers reach it only once their timer fired, never on the hot path.
func relaxTimer(r *engine.Relax, t *time.Timer, start time.Time, own time.Duration) (<-chan struct{}, bool) {
	now := time.Now()
	wake, shrunk, ok := relaxAt(r, now, start, own)
	if !ok {
		return nil, false
	}
	t.Reset(wake.Sub(now))
	return shrunk, true
}

// relaxAt is relaxTimer's rule without its clock and timer, for a caller that tells the time
// itself (a simulated client's waits, in virtual time: waitRelaxedSim): at now, if r keeps the
// commands started at start with own timeout alive, it returns when to ask again, the channel
// closed when a notice ends or shortens the window, and true; otherwise false.
func relaxAt(r *engine.Relax, now, start time.Time, own time.Duration) (time.Time, <-chan struct{}, bool) {
	if r == nil {
		return time.Time{}, nil, false
	}
	shrunk := r.Shrunk()
	wake, ok := r.Extend(now, start, own)
	if !ok {
		return time.Time{}, nil, false
	}
	return wake, shrunk, true
}

// groupDeadline is the deadline of a batch's run, or of the commands a dedicated connection
// sends in one round trip: the budget own from when the wait began, extended while the
// connection that took the commands is in a maintenance window. Every command of the run
// started with it and has the same own timeout, so one deadline, max(own, relaxed) from the
// run's start, is each command's. Its zero value has no timeout.
type groupDeadline struct {
	t   *time.Timer
	own time.Duration
	// start is the run's start, recorded when the own budget fired (fired minus own), so that
	// the wait reads no clock before it.
	start time.Time
	// shrunk is closed when the window keeping the run alive shrinks (engine.Relax.Shrunk).
	shrunk <-chan struct{}
}

// deadlineTimers keeps the timers of finished waits for the next ones: a batch's run that waits
// takes one instead of allocating a timer and its channel. A stopped timer delivers no stale
// value after Reset (Go 1.23's timers), so a reused one fires only for its new wait.
var deadlineTimers sync.Pool

// arm starts the budget own (zero: none).
func (gd *groupDeadline) arm(own time.Duration) {
	gd.own = own
	if own > 0 {
		if t, ok := deadlineTimers.Get().(*time.Timer); ok {
			t.Reset(own)
			gd.t = t
		} else {
			gd.t = time.NewTimer(own)
		}
	}
}

// stop releases the timer, for the next wait to reuse.
func (gd *groupDeadline) stop() {
	if gd.t != nil {
		gd.t.Stop()
		deadlineTimers.Put(gd.t)
		gd.t = nil
	}
}

// fired returns the channel of the deadline (nil without a budget).
func (gd *groupDeadline) fired() <-chan time.Time {
	if gd.t == nil {
		return nil
	}
	return gd.t.C
}

// expired is called when the deadline fired at at (or, at is zero, when the window shrank): it
// reports false when r, the relaxation of the run's connection, keeps the run alive, the timer
// re-armed for when to ask again; true when the run timed out.
func (gd *groupDeadline) expired(r *engine.Relax, at time.Time) bool {
	if gd.start.IsZero() {
		gd.start = at.Add(-gd.own)
	}
	shrunk, ok := relaxTimer(r, gd.t, gd.start, gd.own)
	gd.shrunk = shrunk
	return !ok
}

// maintWarn returns the engine's warning for a MOVING grace that closed an old connection with
// commands unanswered, logged at Warn on Logger (nil without a logger). It names the connection,
// never a command, key or value.
func (o *Options) maintWarn() func(fsm.ConnID) {
	l := o.Logger
	if l == nil {
		return nil
	}
	return func(id fsm.ConnID) {
		l.Warn("respire: MOVING grace ended; closing the old connection with commands unanswered (they fail with an unknown outcome)",
			slog.Uint64("conn", uint64(id)))
	}
}
