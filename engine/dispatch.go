package engine

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Dispatcher delivers observations to a callback in order, on its own goroutine, so that the
// event loop never waits for an observer and an observer may close the client.
//
// Its queue has no capacity limit, as the spec requires for lifecycle delivery: observations are
// small, and a slow observer delays only itself. Keep callbacks short and hand expensive work to
// an application queue with its own capacity policy.
type Dispatcher struct {
	fn     func(StateChange)
	mu     sync.Mutex
	queue  []StateChange
	wake   chan struct{}
	closed bool
	done   chan struct{}
	// gid is the id of the dispatcher's goroutine, the one callbacks run on (see Stop).
	gid atomic.Uint64
}

// NewDispatcher starts a dispatcher calling fn for each observation.
func NewDispatcher(fn func(StateChange)) *Dispatcher {
	d := &Dispatcher{fn: fn, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go d.run()
	return d
}

// Observe queues c for delivery. It never blocks.
func (d *Dispatcher) Observe(c StateChange) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.queue = append(d.queue, c)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *Dispatcher) run() {
	defer close(d.done)
	d.gid.Store(goroutineID())
	var batch []StateChange
	for {
		<-d.wake
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			return
		}
		batch, d.queue = d.queue, batch[:0]
		d.mu.Unlock()
		for i := range batch {
			d.mu.Lock()
			closed := d.closed
			d.mu.Unlock()
			if closed {
				return
			}
			d.fn(batch[i])
			batch[i] = StateChange{}
		}
	}
}

// Close suppresses every queued observation and stops the dispatcher. It does not wait for a
// callback in flight, which may be the caller of Close; Done is closed when the goroutine ends.
func (d *Dispatcher) Close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	d.queue = nil
	d.mu.Unlock()
	// Wake the goroutine so it sees closed; the channel itself is never closed, so a racing
	// Observe cannot send on a closed channel.
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Stop closes the dispatcher and waits for a callback in flight to return, so that no
// observation reaches the callback after Stop returns. Called from the callback itself (an
// observer closing the client), it does not wait, which would never end; the callback's own
// caller then sees no further observation either, since the dispatcher stops once it returns.
func (d *Dispatcher) Stop() {
	d.Close()
	if goroutineID() != d.gid.Load() {
		<-d.done
	}
}

// goroutineID returns the id of the calling goroutine, from the header line of its stack
// ("goroutine 42 [running]:"). It is only used by Stop, once per client, to tell a callback
// closing its own client from another goroutine.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) {
		return 0
	}
	var id uint64
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

// Done is closed once the dispatcher's goroutine has ended.
func (d *Dispatcher) Done() <-chan struct{} { return d.done }
