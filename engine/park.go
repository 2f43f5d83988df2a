package engine

import (
	"slices"

	"github.com/respire-go/respire/fsm"
)

// A grant can name a connection that has just stopped taking commands: it failed (a read error,
// a reply that did not fit its command), and its loss is on the way to the loop, but the machine
// has not seen it yet. The connection then refuses the granted command untouched (Offerer), so
// the command never left. Rather than fail it, the engine parks its waiter on that connection
// and demands again once the loop has processed the loss (ConnLost), when the machine no longer
// grants the dead connection: a caller never fails only because it raced a connection's failure
// with the loop. A connection the engine closes or drains itself is never granted, so only a
// loss can release a parked waiter; disposal releases them all (they then fail as closed).

// park holds w until id's loss is processed.
func (e *Engine) park(id fsm.ConnID, w *waiter) {
	if e.parked == nil {
		e.parked = make(map[fsm.ConnID][]*waiter)
	}
	e.parked[id] = append(e.parked[id], w)
}

// unpark demands again for the waiters parked on id, in the order they were parked.
func (e *Engine) unpark(id fsm.ConnID) {
	ws := e.parked[id]
	if len(ws) == 0 {
		return
	}
	delete(e.parked, id)
	for _, w := range ws {
		e.demand(fsm.NeedAny, w)
	}
}

// unparkAll demands again for every parked waiter (disposal: the demands then fail as closed).
func (e *Engine) unparkAll() {
	ids := make([]fsm.ConnID, 0, len(e.parked))
	for id := range e.parked {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		e.unpark(id)
	}
}
