package fsm

import "time"

// The refresh scheduler (spec "Cluster topology refresh", "Periodic Cluster refresh").
//
// Every refresh is a discovery round; the scheduler decides when one starts:
//   - periodically, RefreshInterval minus up to 10 % (the event's draw) after the last round
//     ended, starting after the first topology; zero disables this timer only;
//   - when the ready connection of a primary is lost, at most once per ClusterLossSpacing (1 s):
//     a loss within a second of the last loss-triggered round waits for the second to end;
//   - on a MOVED redirect, debounced ClusterMovedDebounce (5 s): a MOVED within 5 s of the last
//     round's start reuses that round and waits for the 5 s to end, then one round serves every
//     MOVED of the window;
//   - on demand (a READONLY reply, or a caller that needs a fresh topology);
//   - after a failed round, on a backoff of 5 s doubling to 60 s until a round succeeds; while it
//     runs, every other trigger waits for it (a demand fails at once with the last failure).
//
// Triggers that arrive while a round runs share it. A failed round keeps the last map.

// refreshTrigger says why a refresh was asked for.
type refreshTrigger uint8

const (
	// triggerInitial: a demand needs the first topology.
	triggerInitial refreshTrigger = iota
	triggerPeriodic
	triggerMoved
	triggerLoss
	triggerRetry
	triggerDemand
)

// refresher is the Cluster machine's refresh scheduler.
type refresher struct {
	interval time.Duration
	// periodic, debounce, loss and retry are the scheduler's timers (0: not armed).
	periodic, debounce, loss, retry TimerID
	// failures counts consecutive failed rounds since the last success.
	failures int
	lastErr  error
	// lastStart is when the last round started (started: one did).
	lastStart time.Duration
	started   bool
	// lastLoss is when the last round triggered by a lost primary started.
	lastLoss time.Duration
	lossed   bool
}

// backingOff reports whether the retry after a failed round is pending.
func (r *refresher) backingOff() bool { return r.retry != 0 }

// retryBackoff is the wait after consecutive failed rounds.
var retryBackoff = backoff{first: ClusterRetryFirst, max: ClusterRetryMax}

// trigger asks for a refresh for reason t (see the top of this file).
func (r *refresher) trigger(c *Cluster, t refreshTrigger, ev *Event, out *Outbox) {
	if c.round.running {
		return
	}
	now := ev.At
	switch t {
	case triggerInitial:
		if c.known {
			return
		}
	case triggerPeriodic, triggerDemand:
		if !c.known || r.backingOff() {
			return
		}
	case triggerRetry:
	case triggerMoved:
		if !c.known || r.backingOff() {
			return
		}
		if r.started && now-r.lastStart < ClusterMovedDebounce {
			if r.debounce == 0 {
				r.debounce = r.arm(c, r.lastStart+ClusterMovedDebounce-now, out)
			}
			return
		}
	case triggerLoss:
		if !c.known || r.backingOff() {
			return
		}
		if r.lossed && now-r.lastLoss < ClusterLossSpacing {
			if r.loss == 0 {
				r.loss = r.arm(c, r.lastLoss+ClusterLossSpacing-now, out)
			}
			return
		}
		r.lossed, r.lastLoss = true, now
	}
	r.start(c, ev, out)
}

// start begins a round: it covers every MOVED and loss waiting for their spacing.
func (r *refresher) start(c *Cluster, ev *Event, out *Outbox) {
	r.started, r.lastStart = true, ev.At
	r.cancel(&r.debounce, out)
	r.cancel(&r.loss, out)
	c.round.start(c, ev, out)
}

// timer handles one of the scheduler's timers; a stale one is ignored.
func (r *refresher) timer(c *Cluster, ev *Event, out *Outbox) {
	switch ev.Timer {
	case r.periodic:
		r.periodic = 0
		r.trigger(c, triggerPeriodic, ev, out)
	case r.debounce:
		r.debounce = 0
		r.trigger(c, triggerMoved, ev, out)
	case r.loss:
		r.loss = 0
		r.lossed = false
		r.trigger(c, triggerLoss, ev, out)
	case r.retry:
		r.retry = 0
		r.trigger(c, triggerRetry, ev, out)
	}
}

// succeeded records a successful round: the backoff ends and the periodic timer restarts.
func (r *refresher) succeeded(c *Cluster, ev *Event, out *Outbox) {
	r.failures, r.lastErr = 0, nil
	r.cancel(&r.retry, out)
	r.armPeriodic(c, ev, out)
}

// failed records a failed round (once a topology is known): the periodic timer stops, and the
// retry waits on the backoff.
func (r *refresher) failed(c *Cluster, err error, ev *Event, out *Outbox) {
	r.failures++
	r.lastErr = err
	r.cancel(&r.periodic, out)
	r.cancel(&r.retry, out)
	r.retry = r.arm(c, retryBackoff.wait(r.failures), out)
}

// armPeriodic (re)arms the periodic timer: the interval minus up to ClusterRefreshJitter of it.
func (r *refresher) armPeriodic(c *Cluster, ev *Event, out *Outbox) {
	r.cancel(&r.periodic, out)
	if r.interval <= 0 {
		return
	}
	r.periodic = r.arm(c, PeriodicRefreshDelay(r.interval, spread(ev.Draw, 1)), out)
}

// PeriodicRefreshDelay is the wait before a periodic refresh: interval minus up to
// ClusterRefreshJitter of it, draw (clamped to [0, 1)) choosing how much.
func PeriodicRefreshDelay(interval time.Duration, draw float64) time.Duration {
	return interval - time.Duration(float64(interval)*ClusterRefreshJitter*clampDraw(draw))
}

func (r *refresher) arm(c *Cluster, after time.Duration, out *Outbox) TimerID {
	t := c.ids.timer()
	f := out.push(ArmTimer)
	f.Timer, f.After = t, after
	return t
}

func (r *refresher) cancel(t *TimerID, out *Outbox) {
	if *t != 0 {
		out.push(CancelTimer).Timer = *t
		*t = 0
	}
}

// stop cancels every timer of the scheduler.
func (r *refresher) stop(out *Outbox) {
	for _, t := range []*TimerID{&r.periodic, &r.debounce, &r.loss, &r.retry} {
		r.cancel(t, out)
	}
}
