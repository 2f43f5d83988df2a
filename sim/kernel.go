package sim

import (
	"math/rand/v2"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/stream"
	"github.com/respire-go/respire/sim/workload"
)

// action is something the scheduler runs at a virtual time. arg is the value given when the event
// was scheduled (a generation, a sub-kind, an index), so that one long-lived object can receive
// several kinds of events without a closure per event. run reports whether the event did anything;
// stale events (a cancelled timer, an invalidated delivery) report false and are not counted.
type action interface {
	Run(arg uint64) bool
}

// event is one entry of the scheduler's heap.
type event struct {
	at  time.Duration
	seq uint64
	act action
	arg uint64
}

// kernel is the virtual clock and the event heap (4-ary, see heapArity). Events run in order of time, then of scheduling
// sequence, so that two events at the same instant run in the order they were scheduled.
type kernel struct {
	now  time.Duration
	seq  uint64
	heap []event
}

// Now returns the virtual time.
func (k *kernel) Now() time.Duration { return k.now }

// schedule runs act.Run(arg) at time at (not before now).
func (k *kernel) schedule(at time.Duration, act action, arg uint64) {
	if at < k.now {
		at = k.now
	}
	k.seq++
	k.heap = append(k.heap, event{at: at, seq: k.seq, act: act, arg: arg})
	k.up(len(k.heap) - 1)
}

// after runs act.Run(arg) after d.
func (k *kernel) after(d time.Duration, act action, arg uint64) { k.schedule(k.now+d, act, arg) }

// next returns the time of the earliest event, and false when the heap is empty.
func (k *kernel) next() (time.Duration, bool) {
	if len(k.heap) == 0 {
		return 0, false
	}
	return k.heap[0].at, true
}

// pop removes the earliest event, advances the clock to it and returns it.
func (k *kernel) pop() event {
	h := k.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = event{}
	k.heap = h[:last]
	if last > 0 {
		k.down(0)
	}
	k.now = top.at
	return top
}

func (a *event) before(b *event) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// The heap is 4-ary: half the depth of a binary heap, so a pop moves an event through fewer
// levels; (at, seq) is a total order, so the order of pops does not depend on the arity.
const heapArity = 4

func (k *kernel) up(i int) {
	h := k.heap
	for i > 0 {
		p := (i - 1) / heapArity
		if !h[i].before(&h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (k *kernel) down(i int) {
	h := k.heap
	n := len(h)
	for {
		first := heapArity*i + 1
		if first >= n {
			return
		}
		m := first
		for c := first + 1; c < first+heapArity && c < n; c++ {
			if h[c].before(&h[m]) {
				m = c
			}
		}
		if !h[m].before(&h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// scheduler is the kernel as the workload schedules on it.
type scheduler struct{ k *kernel }

var _ workload.Scheduler = scheduler{}

// Now implements workload.Scheduler.
func (s scheduler) Now() time.Duration { return s.k.now }

// Schedule implements workload.Scheduler.
func (s scheduler) Schedule(at time.Duration, a workload.Actor, arg uint64) { s.k.schedule(at, a, arg) }

// After implements workload.Scheduler.
func (s scheduler) After(d time.Duration, a workload.Actor, arg uint64) { s.k.after(d, a, arg) }

// simRuntime implements engine.Runtime on the kernel: virtual time, draws from the engine stream,
// timers on the event heap. Plants may distort timer delays (late-timers, early-dial).
type simRuntime struct {
	w      *world
	rng    rand.PCG
	timers map[fsm.TimerID]*simTimer
	// scale multiplies every timer delay (2 for the late-timers plant, 0 for early-dial).
	scale int64
}

// simTimer is one armed engine timer.
type simTimer struct {
	rt        *simRuntime
	id        fsm.TimerID
	fire      func()
	cancelled bool
}

// Now implements engine.Runtime.
func (r *simRuntime) Now() time.Duration { return r.w.k.now }

// Draw implements engine.Runtime with the engine stream.
func (r *simRuntime) Draw() float64 { return stream.Unit(&r.rng) }

// ArmTimer implements engine.Runtime: the fire callback runs from a scheduler event.
func (r *simRuntime) ArmTimer(id fsm.TimerID, after time.Duration, fire func()) {
	t := &simTimer{rt: r, id: id, fire: fire}
	if old := r.timers[id]; old != nil {
		old.cancelled = true
	}
	r.timers[id] = t
	r.w.k.after(time.Duration(int64(after)*r.scale), t, 0)
}

// CancelTimer implements engine.Runtime.
func (r *simRuntime) CancelTimer(id fsm.TimerID) {
	if t := r.timers[id]; t != nil {
		t.cancelled = true
		delete(r.timers, id)
	}
}

func (t *simTimer) Run(uint64) bool {
	if t.cancelled {
		return false
	}
	delete(t.rt.timers, t.id)
	t.fire()
	return true
}
