package sim

import (
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio"
)

// The simulated connections honour client.connection_idle_read_timeout in virtual time, exactly as netio's
// connections do with socket deadlines: a command-slot connection that has replies pending
// (commands written and not answered) and receives no byte for the bound is aborted with an
// *IOError caused by a *netio.LivenessError, like any other read failure: written commands end
// with an unknown outcome and Lost is reported, so the engine replaces the connection. New
// commands do not postpone the bound. Dedicated connections are not watched, as in netio; nor
// are the simulated pub/sub connections (netio's SubConn watches them while acknowledgements are
// owed).

// watchIdle starts the idle-read clock of c: its replies just became pending.
func (c *simConn) watchIdle() {
	bound := c.w.cfg.IdleReadTimeout
	if bound <= 0 || c.phase != phaseReady || c.machine != fsm.MachineMux {
		return
	}
	c.idleFrom = c.w.k.now
	if !c.idleArmed {
		c.idleArmed = true
		c.w.k.after(bound, c, connIdleCheck)
	}
}

// idleCheck runs when the idle-read bound may have expired: it aborts the connection if replies
// are still pending and no byte arrived for the bound, re-arms itself if bytes arrived meanwhile,
// and stops when nothing is pending (the next write arms it again).
func (c *simConn) idleCheck() bool {
	c.idleArmed = false
	if c.clientClosed || c.phase != phaseReady || c.qhead >= c.flushed {
		return false
	}
	bound := c.w.cfg.IdleReadTimeout
	if due := c.idleFrom + bound; c.w.k.now < due {
		c.idleArmed = true
		c.w.k.schedule(due, c, connIdleCheck)
		return false
	}
	c.lose(c.ioError("read", &netio.LivenessError{Op: "read", Budget: bound, Err: errTimeout("read")}))
	return true
}

// Offer implements engine.Offerer, as netio's connections do: a draining or closed connection
// refuses the command and leaves it untouched, for the engine to route elsewhere.
func (c *simConn) Offer(cmd *engine.Command) bool {
	if c.clientClosed || c.draining {
		return false
	}
	c.Send(cmd)
	return true
}

// OfferGroup implements engine.GroupOfferer. The simulator runs one action at a time, so the
// commands queued here are written together at the end of the action, with nothing between
// them.
func (c *simConn) OfferGroup(cmds []*engine.Command) bool {
	if c.clientClosed || c.draining {
		return false
	}
	for _, cmd := range cmds {
		c.Send(cmd)
	}
	return true
}

var (
	_ engine.Offerer      = (*simConn)(nil)
	_ engine.GroupOfferer = (*simConn)(nil)
)

// The write-stall bound (client.gathered_write_stall_timeout, inheriting client.connection_idle_read_timeout) needs a
// writer that can stall: network.send_buffer models the socket buffers. Once more than that many
// written bytes have not reached the node, the write is stalled; each delivery to the node is
// progress and restarts the clock, and the stall ends when the bytes in flight drop to the buffer
// again. A stall that lasts the bound aborts the connection with a write *netio.LivenessError,
// like netio's per-piece write deadline. Every connection is watched, as in netio.

// writeStallBound is the write bound after its inheritance of the idle-read bound (the
// resolver's, as in the client); zero means off.
func (c *simConn) writeStallBound() time.Duration { return c.w.cfg.WriteStallTimeout }

// unsent returns the bytes written on c that have not reached the node.
func (c *simConn) unsent() uint64 {
	p := &c.up
	return p.offset() - (p.base + uint64(p.ready))
}

// watchStall runs after a write: it starts the stall clock when the bytes in flight exceed the
// modelled buffers.
func (c *simConn) watchStall() {
	limit := c.w.sc.Network.SendBuffer
	bound := c.writeStallBound()
	if limit <= 0 || bound <= 0 || c.stalled || c.up.dead || c.unsent() <= uint64(limit) {
		return
	}
	c.stalled = true
	c.stallFrom = c.w.k.now
	if !c.stallArmed {
		c.stallArmed = true
		c.w.k.after(bound, c, connStallCheck)
	}
}

// progressed runs when written bytes reach the node.
func (c *simConn) progressed() {
	if !c.stalled {
		return
	}
	if c.unsent() <= uint64(c.w.sc.Network.SendBuffer) {
		c.stalled = false
		return
	}
	c.stallFrom = c.w.k.now
}

// stallCheck aborts the connection if its write made no progress for the bound.
func (c *simConn) stallCheck() bool {
	c.stallArmed = false
	if !c.stalled || c.clientClosed {
		return false
	}
	bound := c.writeStallBound()
	if due := c.stallFrom + bound; c.w.k.now < due {
		c.stallArmed = true
		c.w.k.schedule(due, c, connStallCheck)
		return false
	}
	c.stalled = false
	err := c.ioError("write", &netio.LivenessError{Op: "write", Budget: bound, Err: errTimeout("write")})
	if c.phase != phaseReady {
		c.failAttempt(c.connectError(c.stage(), true, bound, err))
		return true
	}
	c.lose(err)
	return true
}

// Stopped implements engine.Stopper, as netio's connections do.
func (c *simConn) Stopped() bool { return c.clientClosed }

var _ engine.Stopper = (*simConn)(nil)
