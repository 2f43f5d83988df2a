package engine

import (
	"strconv"
	"sync/atomic"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// Stage is how far a command travelled. It decides whether a failure is definite (the bytes never
// left) or leaves the outcome unknown (the server may have executed it).
type Stage uint32

// Command stages, in order.
const (
	// StageQueued: accepted by the engine, waiting for a connection. Nothing was sent.
	StageQueued Stage = iota
	// StageBuffered: in a connection's queue, not yet written.
	StageBuffered
	// StageWriting: its bytes are being written; some may have reached the server.
	StageWriting
	// StageAwaitingReply: written; the reply has not arrived.
	StageAwaitingReply
	// StageDone: completed (see Command.FinalStage for where it ended).
	StageDone
	// StageAbandoned: withdrawn by its caller while queued; it will never be sent.
	StageAbandoned
)

var stageNames = [...]string{"queued", "buffered", "writing", "awaiting-reply", "done", "abandoned"}

// String returns the kebab-case name of the stage.
func (s Stage) String() string {
	if int(s) < len(stageNames) {
		return stageNames[s]
	}
	return "stage(" + strconv.FormatUint(uint64(s), 10) + ")"
}

// Command is one application command on its way to a connection and back. Callers reuse Commands
// (pool them) to keep the hot path free of allocations.
//
// Ownership: after Submit, the engine and then a connection own the command until Done is called,
// exactly once. Done may run on any goroutine; after it returns to the caller, the caller owns the
// command again and may read Reply, Err and FinalStage.
//
// Layout: the fields a connection's reader touches for every reply (the stage and caller words,
// the final stage, Err, Done, Expect, Reply and the Cluster check at the start of cl) come first
// and together, so that a completion moves as few cache lines between the caller's core and the
// reader's as the command allows; what only the submitting caller and the writer use (Name,
// Frame, ID, the waiter) follows.
type Command struct {
	// stage is the Stage, caller the caller's side of the command (caller.go): waiting,
	// answered or left. Both are shared through atomic operations once the command is
	// submitted; Reset writes them plainly, before anyone else sees the command.
	stage  word
	caller word
	final  Stage
	// Err is the failure that prevented a reply: an engine or transport error.
	Err error
	// Done is called exactly once when the command completes.
	Done func(*Command)
	// Expect is the shape of the replies the command accepts; the zero Shape accepts any. A
	// transport that reads a reply of another shape fails the connection (see Replied).
	Expect Shape
	// Multi, when set, makes the command a pipeline of several commands whose replies go to
	// Multi.Replies instead of Reply (see Multi).
	Multi *Multi
	// Reply is the server's reply when Err is nil. Server error replies are replies.
	Reply resp.Value
	// cl is the command's Cluster routing state (cluster_submit.go); Complete reads its first
	// word, which shares a cache line with the end of Reply.
	cl clusterCmd
	// relax is the maintenance relaxation of the connection it was handed to (maint.go).
	relax atomic.Pointer[Relax]
	// Name is the upper-case command name, for errors and diagnostics. It never holds keys,
	// values or credentials.
	Name string
	// Frame is the encoded RESP request.
	Frame []byte
	// ID is the caller's identifier for the command (the simulator's command id); zero if unused.
	ID uint64
	// waiter is the engine's waiter id while the command waits for a connection.
	waiter fsm.WaiterID
}

// word is a 32-bit state shared through atomic operations, which its owner may also set plainly
// while nobody else can see it (Command.Reset): a plain store spares the full barrier of an
// atomic one, twice per command.
type word struct{ v uint32 }

// Load reads the word atomically.
func (w *word) Load() uint32 { return atomic.LoadUint32(&w.v) }

// Store writes the word atomically.
func (w *word) Store(x uint32) { atomic.StoreUint32(&w.v, x) }

// CompareAndSwap swaps the word from old to x atomically and reports whether it did.
func (w *word) CompareAndSwap(old, x uint32) bool { return atomic.CompareAndSwapUint32(&w.v, old, x) }

// Reset prepares a completed or new command for reuse: stage Queued, no error, its caller waiting
// (see Answered). It keeps Frame's storage. Reply keeps whatever storage the last connection left
// in it (transports may swap reply storage between commands to avoid copying); its contents are
// stale until the next completion.
//
// The caller calls Reset while it owns the command: before it submits it, nothing else reads or
// writes it (a completion's Done has returned the command to it, or it was never submitted). The
// stage and caller words are therefore written plainly, and the other fields only when they were
// set.
func (c *Command) Reset() {
	c.stage.v = uint32(StageQueued)
	c.caller.v = callerWaiting
	c.final = StageQueued
	if c.Err != nil {
		c.Err = nil
	}
	if c.waiter != 0 {
		c.waiter = 0
	}
	if c.relax.Load() != nil {
		c.relax.Store(nil)
	}
	if c.cl.eng != nil || c.cl.routed {
		c.cl = clusterCmd{}
	}
}

// Stage returns the command's current stage.
func (c *Command) Stage() Stage { return Stage(c.stage.Load()) }

// FinalStage returns the stage the command had reached when it completed: StageAwaitingReply for
// a normal reply, or the stage at which a failure hit it. Read it only after Done.
func (c *Command) FinalStage() Stage { return c.final }

// MaybeSent reports, after Done, whether the command's bytes may have reached a server: a failure
// with MaybeSent is an unknown outcome; without it the command was definitely not executed.
func (c *Command) MaybeSent() bool { return c.final >= StageWriting && c.final < StageDone }

// Enqueued moves a queued command to StageBuffered just before it is handed to a connection. It
// reports false if the caller abandoned the command first; it must then not be sent.
func (c *Command) Enqueued() bool {
	return c.stage.CompareAndSwap(uint32(StageQueued), uint32(StageBuffered))
}

// Writing marks the command's bytes as leaving for the server. Transports call it just before the
// first byte is written.
func (c *Command) Writing() { c.stage.Store(uint32(StageWriting)) }

// Written marks the command as fully written; its reply is awaited.
func (c *Command) Written() { c.stage.Store(uint32(StageAwaitingReply)) }

// Complete records err (nil for a reply in Reply), fixes the final stage and calls Done. Exactly
// one party completes a command.
func (c *Command) Complete(err error) {
	if c.cl.eng != nil && c.cl.eng.redirect(c, err) {
		return // a Cluster redirect took the command over (cluster_redirect.go)
	}
	c.final = c.Stage()
	if err != nil || c.Err != nil {
		c.Err = err // Reset cleared it: a reply writes nothing here
	}
	c.stage.Store(uint32(StageDone))
	if c.Done != nil {
		c.Done(c)
	}
}

// failQueued completes a command that never left the engine, if nobody else claimed it first.
func (c *Command) failQueued(err error) { c.claimQueued(err) }

// claimQueued completes a command that never left the engine with err and reports true, or
// reports false when its caller abandoned it first.
func (c *Command) claimQueued(err error) bool {
	if !c.stage.CompareAndSwap(uint32(StageQueued), uint32(StageDone)) {
		return false
	}
	c.final = StageQueued
	c.Err = err
	if c.Done != nil {
		c.Done(c)
	}
	return true
}

// Abandon withdraws a queued command. It reports true if the command had not been handed to a
// connection: it will never be sent and Done will not be called. It reports false if a connection
// already owns it: Done will still be called.
func (c *Command) Abandon() bool {
	return c.stage.CompareAndSwap(uint32(StageQueued), uint32(StageAbandoned))
}
