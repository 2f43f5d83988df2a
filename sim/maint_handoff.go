package sim

import "github.com/respire-go/respire/engine"

var _ engine.MoveDrainer = (*simConn)(nil)

// DrainMove implements engine.MoveDrainer with netio's rule (wire.Pipeline.DrainMoving): the
// connection drains, and the commands still queued (sent during the current action, not yet
// flushed, so never written) go back to the engine, which sends them on the slot's replacement.
// A trace line counts them when there are any.
func (c *simConn) DrainMove() []*engine.Command {
	if c.sub != nil {
		c.Drain()
		return nil
	}
	c.engineClosed = true
	if c.clientClosed || c.p.Draining() {
		return nil
	}
	moved, _, _ := c.p.DrainMoving(nil)
	c.traceClose("drain")
	if len(moved) > 0 {
		w := c.w
		w.tr.End(w.tr.Begin("conn moved").Uint("conn", uint64(c.id)).Int("cmds", len(moved)))
	}
	if c.drained() {
		c.closeClient(c.p.ClosedError())
	}
	return moved
}
