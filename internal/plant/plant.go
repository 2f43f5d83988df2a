// Package plant switches on deliberate bugs in respire's shared protocol code (netio/wire and
// the engine's caller logic), for the simulator's positive controls: each bug is a wrong decision
// that a simulator scenario must catch, which proves that the scenario and its checkers would
// catch that bug in the code both runtimes run.
//
// A Set is built only here, and only packages of this module can import an internal package, so
// no application can switch a bug on. Inside the module, only the simulator and tests build Sets
// (a test fails if any other package imports this one, apart from the code that reads it);
// production passes nil, which plants nothing. Reading a Set costs one nil check.
package plant

// Bug names one deliberate bug.
type Bug uint8

// The bugs, by the code that carries them.
const (
	// LateReplyToNextCaller (wire.Pipeline): when the oldest command in flight belongs to a caller
	// that stopped waiting, the pipeline skips it and pairs its late reply with the next command,
	// which hands that reply to the next caller.
	LateReplyToNextCaller Bug = iota + 1
	// TimeoutKeepsPairing (wire.Pipeline): when the idle-read bound expires, the pipeline gives up
	// on the oldest command alone and keeps the connection, so the reply that command was owed is
	// paired with the next one.
	TimeoutKeepsPairing
	// PushCompletesCommand (wire.Pipeline): a RESP3 push is taken for a reply and completes the
	// oldest command.
	PushCompletesCommand
	// AckToWrongBatch (wire.Subscriber): an acknowledgement marks the newest pending subscription
	// command of its direction, whatever topics it names, instead of the oldest that names it.
	AckToWrongBatch
	// SendWithdrawn (engine): the loop hands a granted command to its connection without claiming
	// it, so a command its caller withdrew after the grant decision is sent anyway.
	SendWithdrawn
	// IgnoreCancel (engine): a caller that stops waiting for a command awaiting its reply keeps
	// waiting for the reply instead, ignoring its context and its timeout.
	IgnoreCancel
	// RecycleBeforeReply (engine): a caller that stops waiting for a command a connection owns
	// takes the command back at once, so its next command reuses it and the late reply of the
	// first completes the second.
	RecycleBeforeReply
	// SentinelRedialAtOnce (engine): a Sentinel client's connection attempt to a Sentinel that
	// fails before connecting is dialed again at once, without telling its machine, so the
	// reconnect policy's backoff never paces the dials to a Sentinel that refuses them.
	SentinelRedialAtOnce
	// FenceSkipKill (engine): a fence's control connection, once ready, reports its CLIENT KILL
	// answered without sending it, so Settle returns while the dead connection's bytes may still
	// execute.
	FenceSkipKill

	bugs // the number of bugs plus one
)

var names = [...]string{"", "late-reply-to-next-caller", "timeout-keeps-pairing", "push-completes-command",
	"ack-to-wrong-batch", "send-withdrawn", "ignore-cancel", "recycle-before-reply", "sentinel-redial-at-once",
	"fence-skip-kill"}

// String returns the bug's name, as scenarios write it under plant:.
func (b Bug) String() string {
	if b > 0 && b < bugs {
		return names[b]
	}
	return "bug?"
}

// Bugs returns every bug, in order.
func Bugs() []Bug {
	out := make([]Bug, 0, bugs-1)
	for b := Bug(1); b < bugs; b++ {
		out = append(out, b)
	}
	return out
}

// Set is a set of bugs switched on, and the hook that learns when one acts.
type Set struct {
	bits  uint32
	fired func(b Bug, id uint64)
}

// New returns the set of bugs. fired, when not nil, is called each time one of them acts, with
// the id of the command concerned (0 when there is none): the simulator traces it.
func New(fired func(b Bug, id uint64), bugs ...Bug) *Set {
	s := &Set{fired: fired}
	for _, b := range bugs {
		s.bits |= 1 << b
	}
	return s
}

// Has reports whether bug b is switched on. A nil Set has none.
func (s *Set) Has(b Bug) bool { return s != nil && s.bits&(1<<b) != 0 }

// Fire reports whether bug b is switched on and, when it is, tells the hook that it acts now on
// command id. Code carrying a bug calls it exactly where the bug changes a decision.
func (s *Set) Fire(b Bug, id uint64) bool {
	if !s.Has(b) {
		return false
	}
	if s.fired != nil {
		s.fired(b, id)
	}
	return true
}
