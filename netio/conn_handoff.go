package netio

import "github.com/respire-go/respire/engine"

var _ engine.MoveDrainer = (*Conn)(nil)

// DrainMove implements engine.MoveDrainer: Drain for a MOVING handoff. The connection stops
// taking commands and hands back, in the order they were sent, the commands still waiting for
// its writer (never written, at engine.StageBuffered), for the engine to send on the replacement;
// see wire.Pipeline.DrainMoving for what stays. What stays drains here, and the connection
// closes once it is answered. It returns nil when the connection was not open.
func (c *Conn) DrainMove() []*engine.Command {
	c.qmu.Lock()
	moved, accepted, ok := c.p.DrainMoving(nil)
	c.qmu.Unlock()
	if !ok {
		return nil
	}
	c.draining.Store(true)
	if c.completed.Load() == accepted {
		c.shutdown(c.closedErr, true)
	}
	return moved
}
