package engine

import (
	"sort"

	"github.com/respire-go/respire/fsm"
)

// Offerer is an optional interface of a Conn. A connection can stop taking commands while the
// routing snapshot that callers read still names it: lifetime recycling publishes a replacement
// and drains the old connection in one step, and a caller that loaded the previous snapshot may
// reach the old connection just after it started draining. Offer queues cmd exactly as Send does
// and reports true while the connection takes commands; otherwise it reports false and leaves
// cmd untouched, still at StageBuffered and never written, so that the engine routes it to the
// current connection instead of failing it. Connections that do not implement Offerer get Send.
type Offerer interface {
	Offer(cmd *Command) bool
}

// offerOf returns c's Offerer, or nil.
func offerOf(c Conn) Offerer {
	o, _ := c.(Offerer)
	return o
}

// requeue returns a command that a connection refused through Offer to StageQueued. Only the
// submitting goroutine holds the command at that point: it never reached a connection.
func (c *Command) requeue() {
	c.stage.Store(uint32(StageQueued))
}

// Stopper is an optional interface of a Conn: Stopped reports whether the connection has stopped
// for good (failed, closed, or drained and closed). The engine keeps the connections it drained
// until they stop, so that disposal can abort the commands they still carry (the spec: closing
// the client aborts pending work, drains included); Stopped lets it forget them as they finish.
// A Conn without it is kept until disposal.
type Stopper interface {
	Stopped() bool
}

// keepDraining remembers a connection the loop just drained, forgetting those that have stopped
// meanwhile: the set holds only connections still finishing their commands.
func (e *Engine) keepDraining(id fsm.ConnID, c Conn) {
	for old, d := range e.draining {
		if s, ok := d.(Stopper); ok && s.Stopped() {
			delete(e.draining, old)
		}
	}
	e.draining[id] = c
}

// abortDraining closes, in identifier order, every drained connection that is still finishing
// its commands. It runs when the engine is disposed.
func (e *Engine) abortDraining() {
	ids := make([]fsm.ConnID, 0, len(e.draining))
	for id := range e.draining {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		c := e.draining[id]
		delete(e.draining, id)
		if s, ok := c.(Stopper); !ok || !s.Stopped() {
			c.Close()
		}
	}
}
