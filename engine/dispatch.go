package engine

import "sync"

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

// Done is closed once the dispatcher's goroutine has ended.
func (d *Dispatcher) Done() <-chan struct{} { return d.done }
