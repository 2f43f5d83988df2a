package netio

import (
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
)

// stallChunk is the largest piece of a write under a write-stall bound: each piece gets a fresh
// deadline, so the bound limits a stall (no progress), not the duration of a large write.
const stallChunk = 64 << 10

// idleReadBound is the idle-read bound a Conn watches: TransportConfig.IdleReadTimeout for
// command-slot connections, none for the others. A dedicated connection's blocking command
// legitimately waits without a byte for as long as its own timeout says; a pub/sub connection's
// SubConn applies the bound itself, only while acknowledgements are owed.
func idleReadBound(req *engine.OpenRequest, cfg *TransportConfig) time.Duration {
	if req.Machine != fsm.MachineMux {
		return 0
	}
	return max(cfg.IdleReadTimeout, 0)
}

// idleReader is the source of a watched connection's RESP reader. Before each read of the socket
// it makes sure that, when replies are pending, the read deadline is at least the bound away;
// after each read it records the progress. A deadline that expires is a liveness failure only if
// replies are pending and no progress was made for the bound; otherwise it is a stale deadline,
// which is cleared or moved, and the read goes on.
type idleReader struct{ c *Conn }

// Read implements io.Reader.
func (r idleReader) Read(p []byte) (int, error) {
	c := r.c
	if !c.watching {
		return c.nc.Read(p)
	}
	c.fmu.Lock()
	if c.p.InFlight() > 0 {
		c.armRead(time.Now())
	}
	c.fmu.Unlock()
	last := false
	for {
		n, err := c.nc.Read(p)
		if n > 0 {
			c.fmu.Lock()
			c.p.Progress(c.since(time.Now()))
			c.fmu.Unlock()
			return n, err
		}
		if err == nil || !isTimeout(err) {
			return n, err
		}
		if last {
			return n, &LivenessError{Op: "read", Budget: c.idleRead, Err: err}
		}
		if !c.staleDeadline() {
			// No byte was read for the bound, which does not mean none arrived: a process that
			// did not run meanwhile (a loaded or throttled machine) finds the deadline expired
			// and its replies in the socket buffer. One more read, with a deadline a moment
			// away, takes them; only a socket with nothing to read fails the connection.
			last = true
			c.fmu.Lock()
			c.readArmed = time.Now().Add(lastReadWait)
			_ = c.nc.SetReadDeadline(c.readArmed)
			c.fmu.Unlock()
		}
	}
}

// lastReadWait is how long the read that confirms an idle-read failure waits for bytes: they
// are in the socket buffer already when the process, not the peer, was late.
const lastReadWait = time.Millisecond

// armRead makes the read deadline at least the bound away from now, moving it to 1.25 times the
// bound when less than the bound remains. Call it with fmu held.
func (c *Conn) armRead(now time.Time) {
	if !c.readArmed.IsZero() && c.readArmed.Sub(now) >= c.idleRead {
		return
	}
	c.readArmed = now.Add(c.idleRead + c.idleRead/4)
	_ = c.nc.SetReadDeadline(c.readArmed)
}

// staleDeadline handles an expired read deadline: it reports true, having cleared or moved the
// deadline, when the expiry is no liveness failure (nothing pending, or progress within the
// bound), and false when the connection must fail.
func (c *Conn) staleDeadline() bool {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	idle := c.p.Idle(c.since(time.Now()), c.idleRead)
	switch {
	case !idle.Pending:
		c.readArmed = time.Time{}
		_ = c.nc.SetReadDeadline(c.readArmed)
		return true
	case !idle.Expired:
		c.readArmed = c.origin.Add(idle.Due + c.idleRead/4)
		_ = c.nc.SetReadDeadline(c.readArmed)
		return true
	}
	return false
}

// write writes b to the socket, under the write-stall bound when there is one: before each piece
// the write deadline is made at least the bound away (moved to 1.25 times the bound when less
// remains).
func (c *Conn) write(b []byte) error {
	if c.writeStall <= 0 {
		_, err := c.nc.Write(b)
		return err
	}
	for len(b) > 0 {
		piece := b[:min(len(b), stallChunk)]
		if now := time.Now(); c.writeArmed.IsZero() || c.writeArmed.Sub(now) < c.writeStall {
			c.writeArmed = now.Add(c.writeStall + c.writeStall/4)
			if err := c.nc.SetWriteDeadline(c.writeArmed); err != nil {
				return err
			}
		}
		n, err := c.nc.Write(piece)
		b = b[n:]
		if err != nil {
			if isTimeout(err) {
				return &LivenessError{Op: "write", Budget: c.writeStall, Err: err}
			}
			return err
		}
	}
	return nil
}
