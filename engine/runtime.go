package engine

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/respire-go/respire/fsm"
)

// ClockRuntime is the production Runtime: time from a clock.Clock read at this seam only, jitter
// draws from a seeded generator, timers from the clock. Engine tests may pass clock.NewMock().
type ClockRuntime struct {
	clock  clock.Clock
	origin time.Time
	rng    *rand.Rand

	mu     sync.Mutex
	timers map[fsm.TimerID]*clock.Timer
}

// NewClockRuntime returns a runtime on c (clock.New() in production) whose draws come from a
// generator seeded with seed; the same seed gives the same draws.
func NewClockRuntime(c clock.Clock, seed uint64) *ClockRuntime {
	return &ClockRuntime{
		clock:  c,
		origin: c.Now(),
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		timers: make(map[fsm.TimerID]*clock.Timer),
	}
}

// Now implements Runtime.
func (r *ClockRuntime) Now() time.Duration { return r.clock.Since(r.origin) }

// Origin returns the wall-clock time at which Now was zero.
func (r *ClockRuntime) Origin() time.Time { return r.origin }

// Draw implements Runtime. The engine calls it from its loop only.
func (r *ClockRuntime) Draw() float64 { return r.rng.Float64() }

// ArmTimer implements Runtime.
func (r *ClockRuntime) ArmTimer(id fsm.TimerID, after time.Duration, fire func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timers[id] = r.clock.AfterFunc(after, func() {
		r.mu.Lock()
		delete(r.timers, id)
		r.mu.Unlock()
		fire()
	})
}

// CancelTimer implements Runtime.
func (r *ClockRuntime) CancelTimer(id fsm.TimerID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.timers[id]; t != nil {
		t.Stop()
		delete(r.timers, id)
	}
}

// Pending returns the number of armed timers.
func (r *ClockRuntime) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.timers)
}
