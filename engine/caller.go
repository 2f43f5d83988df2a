package engine

import "github.com/respire-go/respire/internal/plant"

// The caller's side of a command: one protocol, used by the client's calls and by the
// simulator's workload alike, for how a wait ends.
//
// A caller resets the command (Reset), submits it and waits. The wait ends one of two ways:
//   - the command completes: its Done calls Answered, which reports true while the caller
//     waits, and the completion is the caller's;
//   - the caller stops waiting (its timeout, or its context): it calls Engine.Abandon, whose
//     Abandonment says what the caller may report and whether the command is the caller's again.
//
// Exactly one side wins: a command a connection still owns completes later, Answered reports
// false to that late completion, and its receiver recycles the command then. A caller never
// reuses a command that a connection owns, so a late reply can only complete the command it
// belongs to.

// Caller states of a command.
const (
	callerWaiting uint32 = iota
	callerAnswered
	callerLeft
)

// Verdict is what a caller may report about a command: a reply, a definite failure or an unknown
// outcome.
type Verdict uint8

// Verdicts.
const (
	// VerdictReplied: the server's reply is in Reply (error replies included).
	VerdictReplied Verdict = iota
	// VerdictFailed: the command was definitely not executed: its bytes never left.
	VerdictFailed
	// VerdictUnknown: its bytes may have reached the server and no reply came; it is never
	// resent.
	VerdictUnknown
)

var verdictNames = [...]string{"replied", "failed", "unknown"}

// String returns the verdict's name.
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "verdict?"
}

// Verdict judges a completed command: VerdictReplied without an error, otherwise VerdictUnknown
// when its bytes may have reached the server (MaybeSent) and VerdictFailed when they never left.
// Read it only after Done.
func (c *Command) Verdict() Verdict {
	switch {
	case c.Err == nil:
		return VerdictReplied
	case c.MaybeSent():
		return VerdictUnknown
	}
	return VerdictFailed
}

// Answered is the completion's side of the caller protocol: Done calls it. It reports true when
// the caller still waits (the completion is the caller's: hand it over), and false when the
// caller stopped waiting first: the completion is late, nobody reads it, and the receiver
// recycles the command. It reports true at most once per Reset.
func (c *Command) Answered() bool {
	return c.caller.CompareAndSwap(callerWaiting, callerAnswered)
}

// Leave records that the caller stops waiting for a command a connection owns (a dedicated
// connection's, say). It reports true when the caller left first: the completion, late, recycles
// the command. It reports false when the completion came first: it has been delivered (or is
// being delivered) to the caller, which waits for it and owns the command.
func (c *Command) Leave() bool {
	return c.caller.CompareAndSwap(callerWaiting, callerLeft)
}

// Left reports whether the command's caller stopped waiting before it completed.
func (c *Command) Left() bool { return c.caller.Load() == callerLeft }

// Abandonment is how a caller's wait ends when the caller stops waiting (Engine.Abandon).
type Abandonment struct {
	// Wait reports that the command has completed, or is completing, for this caller: wait for
	// the completion (Done has called or is about to call Answered, which reported true) and
	// judge the command as completed. The other fields are unset.
	Wait bool
	// Verdict is VerdictFailed when the command never reached a connection (it was withdrawn)
	// and VerdictUnknown when a connection owns it: it may still be written and executed.
	Verdict Verdict
	// Stage is the command's stage when the caller left: StageQueued when withdrawn.
	Stage Stage
	// Owned reports that the command is the caller's again, to reuse at once. When false, a
	// connection still owns it: its completion comes later, Answered reports false to it, and its
	// receiver recycles the command.
	Owned bool
}

// Abandon is the caller's side of the protocol when it stops waiting for cmd (its timeout
// expired, or its context ended). A command still waiting for a connection is withdrawn: it will
// never be sent, and the caller owns it. A command a connection owns is left to it: the caller
// reports an unknown outcome at the command's stage, and the command's late completion recycles
// it. If the completion won the race, the caller waits for it (Wait).
func (e *Engine) Abandon(cmd *Command) Abandonment {
	if e.Withdraw(cmd) {
		// No connection will complete it; should one ever do, the completion is not the
		// caller's (Answered reports false) until the caller resets the command.
		cmd.caller.Store(callerLeft)
		// A Cluster command the engine holds after a rejection (a redirect's wait for the
		// machine, a retry's timer) has no waiter the caller can withdraw: the engine still
		// refers to it and will look at it once more. Reused meanwhile, the command would be
		// taken for the new use's (its stage is Queued again), so it is not the caller's to
		// reuse.
		return Abandonment{Verdict: VerdictFailed, Stage: StageQueued, Owned: !cmd.heldByCluster()}
	}
	stage := cmd.Stage()
	if stage == StageAwaitingReply && e.deps.Plants.Fire(plant.IgnoreCancel, cmd.ID) {
		// Planted: the caller keeps waiting for the reply.
		return Abandonment{Wait: true}
	}
	if !cmd.Leave() {
		return Abandonment{Wait: true}
	}
	owned := e.deps.Plants.Fire(plant.RecycleBeforeReply, cmd.ID) // planted: taken back too soon
	return Abandonment{Verdict: VerdictUnknown, Stage: stage, Owned: owned}
}
