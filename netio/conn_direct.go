package netio

import "github.com/respire-go/respire/engine"

// directMaxBytes bounds the frames a caller writes itself (writeDirect). The direct path is taken
// only on an idle connection, whose replies have all arrived: the server has read every byte sent
// before, and its replies acknowledged them, so the socket's send queue is empty. Linux gives a
// TCP socket a send buffer of tcp_wmem's default, 16 KiB, before any tuning; a write of at most
// this size therefore completes at once and Send still never waits on the network. That matters
// when a command's Done callback, on the reader goroutine, sends another command: a write that
// waited there would stop the reading the server may be waiting for.
const directMaxBytes = 16 << 10

// directFits reports whether cmds are small enough for the direct path.
func directFits(cmds []*engine.Command) bool {
	n := 0
	for _, cmd := range cmds {
		n += len(cmd.Frame)
	}
	return n > 0 && n <= directMaxBytes
}

// writeDirect writes cmds, which enqueue accepted for the direct path (wire.Pipeline.AcceptDirect),
// on the caller's goroutine. It is called with qmu held, and releases it. The connection was idle:
// nothing queued, nothing in flight, and the writer goroutine parked with nothing held. Clearing
// writerIdle without waking the writer hands the writer's side to this caller, so commands that
// other callers send meanwhile queue behind these, and the writer writes them after this write:
// FIFO holds on the wire as in the flight. Once the write is done the writer's side goes back to
// the writer, which is woken if commands queued meanwhile.
//
// The commands reach the flight before qmu is released. A failure stops the pipeline under qmu,
// so it comes either before AcceptDirect (which then rejects them) or after this handoff; the
// reader's finish then completes them with everything else, in FIFO order (a caller completing
// them itself could overtake the commands in flight ahead of them).
//
// Why: on an idle connection, handing the frames to the writer goroutine costs a goroutine wakeup
// between the caller and the socket. The Go runtime then also wakes an idle thread to look for
// work (wakep), which, on a machine with few cores, competes with the server for a core just
// while the server processes the commands. A caller that is about to wait for its replies has
// nothing better to do than write them.
//
// own: the commands are a group whose caller is this goroutine and calls ReadOwn next
// (OfferOwnGroup): the free read side waits for it without a claim window.
func (c *Conn) writeDirect(cmds []*engine.Command, group, own bool) {
	c.writerIdle = false // the writer stays parked: this caller owns the writer's side
	// The writer's buffer is this caller's while it owns the writer's side.
	for _, cmd := range cmds {
		c.buf = append(c.buf, cmd.Frame...)
	}
	c.fmu.Lock() // lock order: qmu, then fmu (no path takes them the other way round)
	first, last, wasIdle := c.p.HandoffDirect(cmds)
	c.offerReadSide(cmds[0], group) // a group's caller may read the replies itself (conn_callread.go)
	c.qmu.Unlock()
	// From here on the commands belong to the flight: once fmu is released, the reader may
	// complete them at any time.
	c.sys.writerWrites(false) // a caller's own write goes through net (sysio_linux.go)
	if !c.writeHanded(c.buf, first, last, wasIdle) {
		return // failed: the reader completes everything pending (finish)
	}
	if !own {
		c.armClaim(cmds[0])
	}
	c.qmu.Lock()
	switch {
	case c.p.Stopped():
		// The writer was woken to exit; it owns nothing more.
	case c.p.Queued():
		c.qmu.Unlock()
		select {
		case c.wake <- struct{}{}:
		default:
		}
		return
	default:
		c.writerIdle = true
	}
	c.qmu.Unlock()
}
