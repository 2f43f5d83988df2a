package netio

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/respire-go/respire/engine"
)

// The caller-reads mode.
//
// A caller that wrote its own group on an idle connection (conn_direct.go) and is about to wait
// for the replies can read them itself, on its own goroutine (ReadOwn, reached through
// engine.Engine.SubmitGroupReadOwn). Without it, the replies wake the reader goroutine, which
// wakes the caller: two hand-offs per round trip, and on a machine with few cores the runtime
// wakes an idle thread for each. With it, a lone sequential caller writes, sleeps in its own
// read and wakes with its replies, as a connection without a reader goroutine would.
//
// One goroutine at a time owns the read side: the socket's read half, the RESP reader with the
// reply it may be in the middle of, the scratch value and the count of replies delivered. The
// side is in one of three states, changed only under fmu (with the flight):
//
//   - sideReader: the reader goroutine owns it (reading, or about to).
//   - sideFree: the reader goroutine is parked off the socket, owning nothing; nothing is in
//     flight and no byte is buffered. A caller whose group is the one written directly since
//     (the ticket) may take the side; anything else that puts replies in flight gives the side
//     back to the reader goroutine first (resumeForWriter). The park timer gives it back too
//     when nobody took it: parkIdle after the side became free, so that an idle connection is
//     watched again (a server closing it, a push) within about a millisecond; claimWindow after
//     a direct write, in case its writer is not a caller that reads (the engine's loop granting
//     a waiting command, a Done callback). A group its caller writes as its own (OfferOwnGroup,
//     from engine.Engine.SubmitGroupReadOwn) has no claim window: that caller's ReadOwn comes
//     next, and takes the side or gives it back.
//   - sideCaller: a caller reads (ReadOwn). It stops once its last command completed, its
//     deadline passed, or the connection failed, and then leaves the side free (nothing in
//     flight, nothing buffered) or gives it back to the reader goroutine.
//
// The reader goroutine parks only when a caller asked to read and could not (want): a
// connection whose callers never read keeps its reader on the socket, as before. Once callers
// overlap (the writer puts commands in flight behind others), the next busyRequests requests
// are ignored: with several callers the side would mostly travel back and forth. A failure met
// by a reading caller is handed to the reader goroutine (rerr), which fails the connection and
// completes what is pending exactly as if it had met the failure itself (run, finish). A RESP
// reader resumes a value where a read error (the caller's deadline) cut it, so the reader
// goroutine continues the reply the caller stopped in. Replies stay in FIFO order: whoever
// holds the side completes the oldest command in flight.
//
// A read blocked on the socket does not watch a context. A caller whose context can end
// registers context.AfterFunc once it holds the side, for that read only (numbered: reading);
// the context's end moves the socket's read deadline into the past (interrupt), which stops the
// read as the caller's own deadline would, and the reader goroutine continues the reply. The
// watch is stopped when the read ends, and a late one finds another read number and does nothing.
//
// The mode is off on connections whose reading has other duties on the reader goroutine: a
// push handler or maintenance notices (which promise the reader goroutine), and the idle-read
// watchdog (which owns the socket's read deadline, here the caller's). A caller's deadline is
// the socket's read deadline: on a socket that refuses one, callers with a deadline do not read.
//
// Timers. A lone caller runs thousands of round trips a second, and each change of a runtime
// timer (the park timer, the socket's read deadline) may wake an idle thread of the Go runtime
// to watch the new time, which on a two-core machine competes with the server for a core. So
// the mode changes timers as little as it can. The park timer is lazy: the side's due time is
// recorded (due) and the timer moved only when it would fire too late for it; when it fires
// early, on a side that is no longer free or whose due time moved later, it is re-armed for
// the new due time or left off. A reading caller keeps the read deadline the last caller set
// when it falls within the second half of its own budget (never later than its own deadline):
// a read stopped early by it is one the reader goroutine continues, as at the caller's own
// deadline. The deadline is cleared when the reader goroutine takes the side back.

// Read side states.
const (
	sideReader int32 = iota
	sideFree
	sideCaller
)

// parkIdle is how long the read side stays free before the reader goroutine takes it back and
// watches the idle socket again (a variable for tests, which need it long enough to act on a free
// side; connections copy it when they start).
var parkIdle = time.Millisecond

// claimWindow is how long the side stays free after a direct write for its caller to take it.
// The caller asks right after the write returns; an unclaimed side goes back to the reader
// goroutine about when a loopback round trip ends. A variable for tests, copied at start.
var claimWindow = 50 * time.Microsecond

// callRead is the caller-reads state of a Conn.
type callRead struct {
	// on: the connection may lend its read side (set by start, before the goroutines).
	on bool
	// idle and claim are parkIdle and claimWindow when the connection started.
	idle, claim time.Duration
	// want: a caller asked to read its group and the side was not free; the reader goroutine
	// parks when the flight next empties. Cleared when the reader goroutine takes the side
	// back.
	want atomic.Bool

	// Guarded by fmu.
	// busy counts down the requests to read that are ignored since the writer last put
	// commands in flight behind others (callers overlap: lending the side would only add
	// hand-offs); a lone caller's requests count again once it reaches zero. The engine asks
	// ReadOwn only for groups that MayRead admits, the last written directly, so those are the
	// requests counted.
	busy   int
	side   int32
	ticket *engine.Command // the lead of the direct group whose caller may take the side
	last   *engine.Command // the lead of the last direct group, free side or not
	rerr   error           // the failure a reading caller met, for the reader goroutine
	// noDeadline: the socket refused a read deadline (a net.Conn from a custom dial hook may not
	// support them): a caller with a deadline could not stop its read in time, so it never
	// reads.
	noDeadline bool

	// resume gives the side back to the parked reader goroutine: sent once by whoever moves
	// the side to sideReader while the reader goroutine waits.
	resume chan struct{}
	// park gives the free side back to the reader goroutine when nobody took it.
	park *time.Timer

	// due is when a free side goes back to the reader goroutine (zero: not while it stays as
	// it is: a caller reads, or a direct write is in progress); armedAt is when the park timer
	// fires (zero: stopped or fired). Guarded by fmu.
	due, armedAt time.Time
	// deadline is the read deadline a reading caller left on the socket (zero: none). Only the
	// owner of the side touches it, and the watch on a reading caller's context (interrupt,
	// under fmu, after the caller set it).
	deadline time.Time

	// reading numbers the callers' reads (under fmu), moving on when each starts and ends: a
	// context's watch cuts the read it was registered for only while that read holds the side.
	reading uint64
	// cut: the reading caller's context ended and its read was cut short (interrupt).
	cut atomic.Bool
	// lastDirect mirrors last for MayRead, which reads it without fmu. Written under fmu.
	lastDirect atomic.Pointer[engine.Command]

	// reads counts the groups callers read themselves, resets the moves of the park timer
	// (tests).
	reads, resets atomic.Uint64
}

// dueAt records when a free side goes back to the reader goroutine, moving the park timer only
// when it would fire later than that or not at all. Called with fmu held.
func (c *Conn) dueAt(now, due time.Time) {
	c.cr.due = due
	if c.cr.armedAt.IsZero() || c.cr.armedAt.After(due) {
		c.cr.park.Reset(due.Sub(now))
		c.cr.armedAt = due
		c.cr.resets.Add(1)
	}
}

// init decides whether c lends its read side. Called by start.
func (r *callRead) init(c *Conn) {
	r.on = c.push == nil && c.relax == nil && !c.watching
	if !r.on {
		return
	}
	r.idle, r.claim = parkIdle, claimWindow
	r.resume = make(chan struct{}, 1)
	r.park = time.NewTimer(time.Hour)
	r.park.Stop()
}

// parkReader frees the read side when nothing is in flight and nothing buffered: the reader
// goroutine then waits in parked. It reports whether it did. Reader goroutine.
func (c *Conn) parkReader() bool {
	if c.rd.Buffered() > 0 {
		return false
	}
	c.fmu.Lock()
	defer c.fmu.Unlock()
	if c.p.InFlight() > 0 || c.failed.Load() {
		return false
	}
	c.cr.side = sideFree
	c.cr.ticket = nil
	now := time.Now()
	c.dueAt(now, now.Add(c.cr.idle))
	return true
}

// parked waits until the reader goroutine owns the read side again: given back (resume), or
// taken back when the park timer fires on a free side. It returns the failure a reading caller
// met, if any, for readLoop to fail the connection with.
func (c *Conn) parked() error {
	for {
		select {
		case <-c.cr.resume:
		case <-c.cr.park.C:
			c.fmu.Lock()
			c.cr.armedAt = time.Time{}
			free := c.cr.side == sideFree && !c.cr.due.IsZero()
			if free {
				if now := time.Now(); now.Before(c.cr.due) {
					c.dueAt(now, c.cr.due) // fired for an earlier due time: not yet
					free = false
				} else {
					c.cr.side = sideReader
					c.cr.ticket = nil
					c.cr.due = time.Time{}
				}
			}
			c.fmu.Unlock()
			if !free {
				continue // a caller reads, a direct write is in progress, or the side is on its way back (resume)
			}
		}
		if !c.cr.deadline.IsZero() {
			// A caller's read deadline stays on the socket for the next caller; the reader
			// goroutine reads without one.
			_ = c.nc.SetReadDeadline(time.Time{})
			c.cr.deadline = time.Time{}
		}
		c.cr.want.Store(false)
		c.fmu.Lock()
		err := c.cr.rerr
		c.fmu.Unlock()
		return err
	}
}

// giveBack moves the side to the reader goroutine and wakes it. Call it with fmu held, with the
// side free or a caller's.
func (c *Conn) giveBack() {
	c.cr.side = sideReader
	c.cr.ticket = nil
	c.cr.due = time.Time{}    // the park timer, if it still runs, finds nothing to do
	c.cr.resume <- struct{}{} // never blocks: one send per wait of the reader goroutine
}

// keepDeadline reports whether the read deadline a previous caller left on the socket serves a
// caller whose deadline is deadline (zero: none): it is no later than deadline and leaves at
// least half of the time to it, so that it rarely stops the read early (and never late). Called
// by the owner of the side.
func (c *Conn) keepDeadline(deadline time.Time) bool {
	kept := c.cr.deadline
	if kept.IsZero() || deadline.IsZero() {
		return kept.Equal(deadline)
	}
	return !kept.After(deadline) && time.Until(kept) >= deadline.Sub(kept)
}

// interrupt cuts short the caller's read numbered read, whose context ended, if that read still
// holds the side: the socket's read deadline moves into the past, which ends the read as the
// caller's own deadline would, and stays recorded (deadline) so that the next owner of the side
// sets its own. Run by context.AfterFunc on a goroutine of its own.
func (c *Conn) interrupt(read uint64) {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	if c.cr.side != sideCaller || c.cr.reading != read {
		return
	}
	c.cr.cut.Store(true)
	_ = c.nc.SetReadDeadline(pastDeadline)
	c.cr.deadline = pastDeadline
}

// busyRequests is how many requests to read are ignored after callers were seen to overlap.
const busyRequests = 256

// resumeForWriter gives a free side back to the reader goroutine before the writer puts replies
// in flight: only a direct writer's own caller may read them. overlap: the writer put commands
// in flight behind others, so several callers are active. Called with fmu held.
func (c *Conn) resumeForWriter(overlap bool) {
	if overlap && c.cr.on {
		c.cr.busy = busyRequests
		c.cr.want.Store(false)
	}
	if c.cr.side == sideFree {
		c.giveBack()
	}
}

// offerReadSide records lead, whose commands a caller writes directly on an idle connection, as
// the group whose caller may take a free read side. A single command (Send, Offer) has no caller
// that reads: a free side goes back to the reader goroutine at once. Called with fmu held, after
// the handoff.
func (c *Conn) offerReadSide(lead *engine.Command, group bool) {
	if !c.cr.on {
		return
	}
	if !group {
		c.resumeForWriter(false)
		return
	}
	c.cr.last = lead
	c.cr.lastDirect.Store(lead)
	if c.cr.side == sideFree {
		c.cr.ticket = lead
		c.cr.due = time.Time{} // until the write is done (armClaim)
	}
}

// armClaim starts the claim window of lead's free side once its direct write is done: the write
// itself may take longer than the window on a loaded machine.
func (c *Conn) armClaim(lead *engine.Command) {
	if !c.cr.on {
		return
	}
	c.fmu.Lock()
	if c.cr.side == sideFree && c.cr.ticket == lead {
		now := time.Now()
		c.dueAt(now, now.Add(c.cr.claim))
	}
	c.fmu.Unlock()
}

// wakeParked gives a free side back to the reader goroutine once the connection failed or
// closed, so that it fails and completes what is pending (run, finish).
func (c *Conn) wakeParked() {
	c.fmu.Lock()
	if c.cr.side == sideFree {
		c.giveBack()
	}
	c.fmu.Unlock()
}

// MayRead implements engine.CallerReader: only the caller of the last group written directly on
// an idle connection (offerReadSide) may read, and a group that went through the writer behind
// others never does. It reads one atomic: with many callers, most of them are turned away here
// without the flight lock, and without a read deadline to compute.
func (c *Conn) MayRead(lead *engine.Command) bool {
	return c.cr.on && c.cr.lastDirect.Load() == lead
}

// ReadOwn implements engine.CallerReader: when lead leads the group this caller just wrote on
// an idle connection and the read side is free, the caller takes it and reads replies until
// last completes, deadline passes (zero: none), ctx ends, the connection fails, or last left
// the connection with nothing more in flight there (a Cluster redirect, run by the completion
// the caller read, sent it on); it then leaves the side free, or gives it back to the reader
// goroutine when other replies are pending. It reports whether last completed. When the side
// is not free for lead it returns false at once, and asks the reader goroutine to free the side
// the next time nothing is in flight. A caller with a deadline, or with a context that can end,
// never reads a socket that refused a read deadline: it returns false at once and the reader
// goroutine reads its replies.
//
// A context that can end is watched with context.AfterFunc, registered only once the caller
// holds the side: its end moves the socket's read deadline into the past (interrupt), which
// cuts the read short as the caller's own deadline would; the reader goroutine continues the
// reply.
func (c *Conn) ReadOwn(ctx context.Context, lead, last *engine.Command, deadline time.Time) bool {
	if !c.cr.on {
		return false
	}
	cancellable := ctx.Done() != nil
	c.fmu.Lock()
	if c.cr.noDeadline && (!deadline.IsZero() || cancellable) {
		if c.cr.side == sideFree && c.cr.ticket == lead {
			c.giveBack() // its replies are pending: the reader goroutine reads them
		}
		c.fmu.Unlock()
		return false
	}
	if c.cr.side != sideFree || c.cr.ticket != lead {
		switch {
		case c.cr.busy > 0:
			c.cr.busy--
		case c.cr.last == lead:
			c.cr.want.Store(true)
		}
		c.fmu.Unlock()
		return false
	}
	c.cr.side = sideCaller
	c.cr.ticket = nil
	c.cr.due = time.Time{}
	c.cr.reading++ // this read's number, for its context's watch (interrupt)
	read := c.cr.reading
	if at := c.cr.armedAt; !at.IsZero() && time.Until(at) < c.cr.idle/2 {
		// A claim window's timer would fire during the read, waking the reader goroutine for
		// nothing; the idle timer of an earlier read, further off, is left to run.
		c.cr.park.Stop()
		c.cr.armedAt = time.Time{}
	}
	c.fmu.Unlock()

	if !c.keepDeadline(deadline) {
		c.cr.deadline = time.Time{}
		if err := c.nc.SetReadDeadline(deadline); err == nil {
			c.cr.deadline = deadline
		} else {
			// Reading without the deadline could outlast it (the command timeout) without end:
			// the reader goroutine reads instead, as it does for callers that wait.
			c.fmu.Lock()
			c.cr.noDeadline = true
			c.giveBack()
			c.fmu.Unlock()
			return false
		}
	}
	c.cr.reads.Add(1)
	c.cr.cut.Store(false) // an earlier read's interrupt that came too late may have left it set
	var stop func() bool
	if cancellable {
		// Registered after the deadline above: the watch writes the deadline too.
		stop = context.AfterFunc(ctx, func() { c.interrupt(read) })
	}
	var fail error
	c.sys.readerReads(false) // a caller's own reads go through net (sysio_linux.go)
	for last.Stage() != engine.StageDone {
		if err := c.rd.Read(&c.scratch); err != nil {
			if !isTimeout(err) || (deadline.IsZero() && !c.cr.cut.Load()) {
				fail = c.ioError("read", err)
			}
			// A timeout is this caller's deadline, or its context's end: the connection is
			// fine, and the reader goroutine continues the reply where the read stopped.
			break
		}
		if err := c.handle(); err != nil {
			fail = err
			break
		}
		if c.cr.cut.Load() {
			break // the context ended between two reads: the reader goroutine goes on
		}
		if last.Stage() != engine.StageDone && c.inFlight.Load() == 0 {
			// last left the connection: its reply redirected it (a Cluster client sends a
			// command that got MOVED or ASK on to another node, or later), and nothing in
			// flight here answers it. Its caller waits for it wherever it goes.
			break
		}
	}
	done := last.Stage() == engine.StageDone
	if stop != nil {
		stop() // an interrupt already under way finds the read over (reading moves on below)
	}

	c.fmu.Lock()
	c.cr.reading++
	if fail == nil && c.p.InFlight() == 0 && c.rd.Buffered() == 0 && !c.failed.Load() {
		c.cr.side = sideFree
		now := time.Now()
		c.dueAt(now, now.Add(c.cr.idle))
	} else {
		c.cr.rerr = fail
		c.giveBack()
	}
	c.fmu.Unlock()
	return done
}
