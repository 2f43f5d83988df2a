package simtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/simbind"
	"github.com/respire-go/respire/sim"
	"github.com/respire-go/respire/sim/record"
)

// Task states.
const (
	taskNew     = iota // created, not started: runnable
	taskWaiting        // parked at a yield point
	taskDone           // returned, failed or aborted
)

// wakeAbort ends a parked task (runtime.Goexit) when a run stops abnormally.
const wakeAbort simbind.Wake = -1

// task is one goroutine of the application's code: the body, or one started with Env.Go or
// Env.AfterFunc. Exactly one task (or the scheduler) runs at a time.
type task struct {
	id    int
	fn    func()
	state int
	wake  chan simbind.Wake
	// What a parked task waits for: ready (nil: nothing but its budget or ctx), ctx, and a
	// budget whose expiry sets timedOut. gen invalidates the budget's event once the task
	// resumed.
	ready    func() bool
	ctx      context.Context
	timedOut bool
	gen      uint64
	// where says where the task is parked, for reports ("client call", "sleep", ...).
	where string
}

// sched runs the tasks one at a time over the host: when no task can run, the world advances
// by one event. Among the tasks that can run, a generator seeded with the run's seed picks the
// next one, so that a seed replays the same interleaving and different seeds explore others.
type sched struct {
	host  *sim.Host
	rng   *rand.Rand
	tasks []*task
	// current is the task running, or nil while the scheduler runs. Only the goroutine holding
	// the turn reads or writes the world and the tasks; handing the turn over is a channel
	// operation, which orders every access.
	current  *task
	yield    chan struct{}
	watchdog time.Duration
	// timer is the watchdog's timer, reused from one turn to the next.
	timer *time.Timer
	end   time.Duration
	env   *Env
}

func newSched(host *sim.Host, seed uint64, watchdog, end time.Duration) *sched {
	return &sched{
		host:     host,
		rng:      rand.New(rand.NewPCG(seed, 0x73696d74657374)), // "simtest"
		yield:    make(chan struct{}),
		watchdog: watchdog,
		end:      end,
	}
}

// spawn creates a task that starts when the scheduler picks it.
func (s *sched) spawn(fn func()) *task {
	t := &task{id: len(s.tasks) + 1, fn: fn, state: taskNew, wake: make(chan simbind.Wake, 1)}
	s.tasks = append(s.tasks, t)
	s.host.Note("task", "spawn", "id="+strconv.Itoa(t.id))
	go s.start(t)
	return t
}

// start is a task's goroutine: it waits for its first turn, runs fn and hands the turn back.
func (s *sched) start(t *task) {
	if w := <-t.wake; w == wakeAbort {
		t.state = taskDone
		s.yield <- struct{}{}
		return
	}
	defer func() {
		if r := recover(); r != nil {
			s.env.fail(fmt.Sprintf("task %d panicked: %v\n%s", t.id, r, debug.Stack()))
		}
		t.state = taskDone
		s.current = nil
		s.yield <- struct{}{}
	}()
	t.fn()
}

// The scheduler is the client's host (simbind.Host): the world's seams, and its own waits.
var _ simbind.Host = (*sched)(nil)

// Bind implements simbind.Host.
func (s *sched) Bind(r *config.Resolved) (engine.Runtime, engine.Transport, func(*fsm.Event, []fsm.Effect), error) {
	return s.host.Bind(r)
}

// BindPubSub implements simbind.Host.
func (s *sched) BindPubSub(r engine.PubSubReceiver) { s.host.BindPubSub(r) }

// BindSentinel implements simbind.Host.
func (s *sched) BindSentinel(r *engine.SentinelReceiver) { s.host.BindSentinel(r) }

// Attach implements simbind.Host.
func (s *sched) Attach(eng *engine.Engine) { s.host.Attach(eng) }

// CommandID implements simbind.Host.
func (s *sched) CommandID() uint64 { return s.host.CommandID() }

// Closed implements simbind.Host.
func (s *sched) Closed() { s.host.Closed() }

// MaintNow implements simbind.Host: virtual time on the maintenance relaxation's clock.
func (s *sched) MaintNow() time.Time { return record.MaintEpoch.Add(s.host.Now()) }

// Wait implements simbind.Host for the client's waits, and the package's own yield points: the
// running task parks until ready, ctx's end or the budget, and the scheduler runs.
func (s *sched) Wait(ctx context.Context, ready func() bool, timeout time.Duration) simbind.Wake {
	return s.park("client call", ctx, ready, timeout)
}

// park parks the running task (see Wait); where names the yield point in reports.
func (s *sched) park(where string, ctx context.Context, ready func() bool, timeout time.Duration) simbind.Wake {
	t := s.current
	if t == nil {
		panic("simtest: a client call or a simtest wait outside a task: start goroutines with Env.Go")
	}
	t.state, t.ready, t.ctx, t.timedOut, t.where = taskWaiting, ready, ctx, false, where
	t.gen++
	if timeout > 0 {
		gen := t.gen
		s.host.After(timeout, func() {
			if t.gen == gen {
				t.timedOut = true
			}
		})
	}
	s.current = nil
	s.yield <- struct{}{}
	w := <-t.wake
	if w == wakeAbort {
		runtime.Goexit()
	}
	return w
}

// exitTask ends the calling task (Env.Fatalf).
func exitTask() { runtime.Goexit() }

// wakeOf reports whether t can run, and with which wake.
func wakeOf(t *task) (simbind.Wake, bool) {
	switch t.state {
	case taskNew:
		return simbind.Ready, true
	case taskWaiting:
		switch {
		case t.ready != nil && t.ready():
			return simbind.Ready, true
		case t.ctx != nil && t.ctx.Err() != nil:
			return simbind.Cancelled, true
		case t.timedOut:
			return simbind.TimedOut, true
		}
	}
	return 0, false
}

var wakeWords = [...]string{simbind.Ready: "ready", simbind.Cancelled: "cancelled", simbind.TimedOut: "timed-out"}

// resume gives t the turn and waits until it parks or ends. It reports false if t kept the turn
// longer than the watchdog allows, in real time.
func (s *sched) resume(t *task, w simbind.Wake) bool {
	s.host.Note("task", "run", "id="+strconv.Itoa(t.id), wakeWords[w])
	t.gen++ // a budget event still in the heap is stale now
	t.state = taskWaiting
	t.ready, t.ctx, t.timedOut = nil, nil, false
	s.current = t
	t.wake <- w
	if s.timer == nil {
		s.timer = time.NewTimer(s.watchdog)
	} else {
		s.timer.Reset(s.watchdog)
	}
	select {
	case <-s.yield:
		s.timer.Stop()
		return true
	case <-s.timer.C:
		return false
	}
}

// loop runs the tasks until every one ended. It returns an error when the run cannot go on: the
// tasks wait for something that can no longer happen, the run passed the scenario's duration,
// the event budget ran out, or a task blocked outside a yield point.
func (s *sched) loop() (stuck *task, err error) {
	var ready []*task
	var wakes []simbind.Wake
	for {
		ready, wakes = ready[:0], wakes[:0]
		live := 0
		for _, t := range s.tasks {
			if t.state == taskDone {
				continue
			}
			live++
			if w, ok := wakeOf(t); ok {
				ready, wakes = append(ready, t), append(wakes, w)
			}
		}
		if live == 0 {
			return nil, nil
		}
		if len(ready) > 0 {
			i := 0
			if len(ready) > 1 {
				i = s.rng.IntN(len(ready))
			}
			t := ready[i]
			if !s.resume(t, wakes[i]) {
				return t, fmt.Errorf("simtest: task %d ran for %v of real time without yielding: it blocks outside "+
					"simtest's yield points (a channel, a mutex, time.Sleep, or a client feature the simulator does not support)",
					t.id, s.watchdog)
			}
			s.host.Settle()
			continue
		}
		at, ok := s.host.Next()
		if !ok {
			return nil, fmt.Errorf("simtest: deadlock: %s wait for something that can no longer happen", s.describeWaiting())
		}
		if at > s.end {
			return nil, fmt.Errorf("simtest: the run reached the scenario's duration (%v) while %s still wait", s.end, s.describeWaiting())
		}
		if _, err := s.host.Step(); err != nil {
			return nil, err
		}
	}
}

// describeWaiting lists the tasks still waiting and where.
func (s *sched) describeWaiting() string {
	out := ""
	for _, t := range s.tasks {
		if t.state != taskWaiting {
			continue
		}
		if out != "" {
			out += ", "
		}
		out += "task " + strconv.Itoa(t.id) + " (" + t.where + ")"
	}
	if out == "" {
		return "no task"
	}
	return out
}

// abort ends every task still parked (runtime.Goexit in its goroutine, which runs its deferred
// calls). It must not be called while a task holds the turn.
func (s *sched) abort() {
	for _, t := range s.tasks {
		if t.state == taskDone {
			continue
		}
		t.wake <- wakeAbort
		<-s.yield
	}
}
