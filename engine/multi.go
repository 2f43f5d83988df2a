package engine

import (
	"sync/atomic"

	"github.com/respire-go/respire/netio/resp"
)

// Multi is the reply side of a command whose Frame holds several commands written back to back:
// an explicit pipeline sent as one unit. The connection pairs one reply per command with it, in
// order, stores each in Replies, and completes the command once: after the last reply, or with
// the connection's failure. A connection lost in the middle therefore leaves the first Arrived
// replies in place and the commands after them without one: their outcome is unknown when the
// command's final stage says it may have been sent (MaybeSent), and a definite failure
// otherwise, as for a single command. Nothing is resent.
//
// Why one command instead of a group of commands (SubmitGroup): a connection handles one queue
// entry, one flight entry and one completion for the whole pipeline, and the replies land next
// to each other in memory, where the caller reads them, instead of in a hundred commands of
// their own. The rules of a single command hold for it unchanged: the stages, FIFO pairing,
// pushes that never pair, drain, the idle-read bound and failure.
//
// Ownership is the command's: the connection's read side writes Replies until the command
// completes; the caller reads them after Done. A caller that stops waiting (Leave) may read, first,
// the replies Arrived already counts: the read side never writes them again.
//
// A Multi's commands share the command's Name for diagnostics; Expect, when set, holds the shape
// of each command's reply (Command.Expect is then unused). A Cluster engine refuses a Multi (its
// commands' slots are not known to it): SubmitGroup fails it.
type Multi struct {
	// Replies receives the replies, in order: its length is the number of commands in the
	// Frame. The read side swaps each reply's storage with the one it finds in its slot (as
	// for Command.Reply), so storage left there is reused.
	Replies []resp.Value
	// Expect, when not nil, holds the shape each command's reply must fit (see Shape): a reply
	// that does not fails the connection, as for a single command.
	Expect []Shape
	// IDs, when not nil, holds one identifier per command of the Frame, in order, for a driver
	// that attributes each command on its own (the simulator's checkers work per command). nil
	// in production: no connection reads it.
	IDs []uint64
	// Arena holds the payloads of the short replies stored in Replies (resp.Arena.Move): the
	// read side's decoding storage stays with it. Reset drops its blocks.
	Arena resp.Arena
	// paired counts the replies the connection paired with the command (read side).
	paired int
	// stored counts the replies stored in Replies (read side).
	stored int
	// arrived publishes stored to the caller (Arrived).
	arrived atomic.Int32
}

// Reset prepares m for a run of n commands: Replies has length n (keeping storage), no reply
// paired or arrived, the arena's blocks dropped (values the caller took from them stay valid).
// The caller calls it while it owns the command.
func (m *Multi) Reset(n int) {
	if cap(m.Replies) < n {
		grown := make([]resp.Value, n)
		copy(grown, m.Replies[:cap(m.Replies)])
		m.Replies = grown
	}
	m.Replies = m.Replies[:n]
	m.Arena.Drop()
	m.paired, m.stored = 0, 0
	m.arrived.Store(0)
}

// Arrived returns the number of replies published as stored (Publish), the first ones in order.
// The caller may read Replies[:Arrived()] while the command is still pending: the connection
// never writes them again.
func (m *Multi) Arrived() int { return int(m.arrived.Load()) }

// Publish makes the replies stored so far visible to Arrived. The read side publishes after each
// reply, or once after a run of replies it delivers together (DeliverPart's publish): an atomic
// store per reply costs about as much as storing the reply.
func (m *Multi) Publish() { m.arrived.Store(int32(m.stored)) }

// LeaveMulti is Leave for a pipeline command, with the rule that keeps its replies, which every
// caller of a pipeline (the client's batches, the simulator's batchers) follows through it: the
// replies Arrived counts are final and the caller's, but once the caller has left, the connection
// may complete and recycle the command at any moment. So keep first receives their number, to
// read Replies[:arrived] while the command is still the caller's to read, and only then does the
// caller leave. It reports Leave's result. True: the connection keeps the command; the commands
// after the arrived replies have an unknown outcome (they may have been written; none is sent
// again). False: the completion came first and the caller waits for it; the replies from arrived
// on are then judged from the completed command (Stored, Err).
func (c *Command) LeaveMulti(keep func(arrived int)) bool {
	keep(c.Multi.Arrived())
	return c.Leave()
}

// Stored returns the number of replies stored, the first ones in order. Read it only after the
// command completed (Done): the replies after them never came (Command.Err says why).
func (m *Multi) Stored() int { return m.stored }

// Pair records that a reply was paired with the command and reports whether it was the
// command's last: only then does the command leave the connection's flight. For a command
// without Multi it reports true. Read side (wire.Pipeline.Next).
func (c *Command) Pair() bool {
	m := c.Multi
	if m == nil {
		return true
	}
	m.paired++
	return m.paired >= len(m.Replies)
}

// Paired reports whether every reply of the command was paired with it: true for a command
// without Multi. A command not Paired is still in its connection's flight. Read side.
func (c *Command) Paired() bool {
	return c.Multi == nil || c.Multi.paired >= len(c.Multi.Replies)
}

// storeReply moves *reply into the next slot of Replies (resp.Arena.Move, or a swap of storage)
// and reports whether it was the last, or returns the *resp.ProtocolError of a reply that does
// not fit its command's shape (not stored). Read side.
func (c *Command) storeReply(reply *resp.Value) (last bool, err error) {
	m := c.Multi
	i := m.stored
	if m.Expect != nil && !m.Expect[i].Fits(reply) {
		return false, c.misfitPart(reply)
	}
	if !m.Arena.Move(&m.Replies[i], reply) {
		m.Replies[i], *reply = *reply, m.Replies[i]
	}
	m.stored = i + 1
	return m.stored >= len(m.Replies), nil
}

// misfitPart returns the error of a reply v that does not fit its command in the pipeline.
func (c *Command) misfitPart(v *resp.Value) error {
	return &resp.ProtocolError{Reason: "reply of kind " + v.Kind.String() + " does not fit a command of pipeline " + c.Name}
}

// StoreReply stores the reply in *reply in the pipeline's next slot, as DeliverPart does, but
// never completes the command: a driver that stores a run of replies before it pairs them
// (StoreNext) completes the command itself once its last reply is stored and paired (Full). It
// returns the *resp.ProtocolError of a reply that does not fit its shape (not stored). Read side.
func (c *Command) StoreReply(reply *resp.Value) error {
	_, err := c.storeReply(reply)
	return err
}

// StoreNext reads the pipeline's next reply from rd straight into its slot when rd has it whole
// in its buffer and it is a short scalar (resp.Reader.ReadBufferedTo); it reports false, having
// read nothing, otherwise. read with a non-nil error: the reply was read but does not fit its
// shape (not stored). Call it only while the command awaits more replies (Unpaired). Read side.
func (c *Command) StoreNext(rd *resp.Reader) (read bool, err error) {
	m := c.Multi
	i := m.stored
	v := &m.Replies[i]
	if !rd.ReadBufferedTo(v, &m.Arena) {
		return false, nil
	}
	if m.Expect != nil && !m.Expect[i].Fits(v) {
		return true, c.misfitPart(v)
	}
	m.stored = i + 1
	return true, nil
}

// Unpaired returns how many replies the connection has still to pair with the command: 0 for a
// command without Multi, or one whose replies all paired. Read side.
func (c *Command) Unpaired() int {
	if c.Multi == nil {
		return 0
	}
	return len(c.Multi.Replies) - c.Multi.paired
}

// Full reports whether every reply of the pipeline is stored. Read side.
func (m *Multi) Full() bool { return m.stored >= len(m.Replies) }

// DeliverPart stores the reply in *reply in the next slot of Replies, swapping storage, and
// completes the command after its last reply; it reports whether it completed. A reply that does
// not fit its command's shape is not stored and returns the *resp.ProtocolError the connection
// fails with (see Misfit). Read side (wire.Deliver).
//
// publish makes the reply visible to Arrived at once; a driver that delivers a run of replies
// together passes false and calls Multi.Publish after the run instead.
func (c *Command) DeliverPart(reply *resp.Value, publish bool) (bool, error) {
	last, err := c.storeReply(reply)
	if err != nil {
		return false, err
	}
	if last {
		c.Complete(nil)
	} else if publish {
		c.Multi.Publish()
	}
	return last, nil
}
