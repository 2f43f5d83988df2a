// Package record holds what a simulated run recorded (Result): the workload's operations and
// their outcomes, the simulated servers' ground truth (apply logs, the replies they wrote,
// subscriptions, published messages), the engine steps, the fault windows and the trace hash. The
// runner (package sim) fills it in; the checkers (sim/check) and reports read it.
package record

import (
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/scenario"
)

// Result is everything a run recorded: the input to the checkers and to reports.
type Result struct {
	// Scenario is the resolved scenario that ran (fixed seed, fixed fault times).
	Scenario *scenario.Scenario
	// Seed is the run's seed.
	Seed uint64
	// Ops are the workload operations, in issue order.
	Ops []Op
	// Applies are every node's apply log, in time order.
	Applies []Apply
	// Sends are the command frames written, in time order.
	Sends []Send
	// Served are the replies the nodes wrote for commands with an id, in time order (a reply
	// the node dropped, or wrote later for a blocked command, is not among them).
	Served []ReplyRecord
	// Paired are the replies the client paired with commands with an id, in time order.
	Paired []ReplyRecord
	// Steps are the engine steps, in order: all of them, or with a JournalSink the steps after
	// the first StepBase, which the sink took.
	Steps []Step
	// StepBase is the number of steps handed to the run's JournalSink before Steps (zero when
	// the run kept its whole journal): Steps[i] is step StepBase+i of the run. Such a Result is
	// judged by the sink that took the steps (check.Stream.Judge), not by check.Judge.
	StepBase int
	// Candidates are the steps of the replicas' engines of a run with replication, in order
	// (replica.go); Router the read router's steps.
	Candidates []CandidateStep
	Router     []RouterStep
	// RouterConfigs are the configurations of the routers of a run whose replicas the Sentinels
	// name, by generation (RouterStep.Gen), and CandidateNodes the node of each replica's engine
	// (CandidateNodes[k-1] for CandidateStep.Candidate k). Both are nil for a standalone
	// primary's replicas, whose one router and candidates the scenario gives.
	RouterConfigs  []fsm.RouterConfig
	CandidateNodes []string
	// Clients marks where each client generation after the first starts in Steps, in order
	// (clients.go); empty when the run kept its first client throughout.
	Clients []ClientGen
	// Faults are the windows during which faults were active; HealedAt is when the last ended.
	Faults   []Window
	HealedAt time.Duration
	// End is the virtual time the run stopped.
	End time.Duration
	// Trace is the run's deterministic trace: every step, fault, delivery and operation as lines.
	Trace []string
	// TraceHash is the hex SHA-256 of the trace lines joined by newlines.
	TraceHash string
	// Events counts the scheduler events the run processed.
	Events uint64
	// Duplicates lists commands whose Done was called more than once (always a bug).
	Duplicates []Duplicate
	// Dedicated are the dedicated-connection operations, in issue order.
	Dedicated []DedicatedOp
	// Batches are the batchers' batches (workload.batches), in issue order.
	Batches []BatchOp
	// PubSub is what the pub/sub workload and the nodes recorded, or nil without one.
	PubSub *PubSubRecords
	// Dials are the client's connection attempts, in time order (dials.go).
	Dials []Dial
	// Settles are the fences the workload waited for, in the order it asked (fence.go).
	Settles []Settle
	// Maint are the facts about connections that opted in to maintenance notifications, in
	// time order (maint.go).
	Maint []MaintEvent
	// OpBase is the number of operations handed over in earlier segments (segment.go): Ops[i]
	// has command id OpBase+i+1. Zero when the run kept all its records.
	OpBase int
	// Start is the virtual time these records start from: zero for a whole run, the cut that
	// opened the segment otherwise.
	Start time.Duration
	// Healed, in a segment, says every fault had ended by End: HealedAt is then the run's.
	Healed bool
	// Segments counts the segments handed to the run's Sink before these records.
	Segments int
	// ConnectError is the error of an eager connect that failed when the scenario expected it
	// to (expect.connect); the run ends there. Empty otherwise.
	ConnectError string
}

// OpOutcome is how a workload operation ended, as its caller saw it.
type OpOutcome uint8

// Operation outcomes.
const (
	// OpPending: no answer by the end of the run (a checker violation unless allowed).
	OpPending OpOutcome = iota
	// OpOK: a reply arrived (it may be a server error reply, see Op.ServerError).
	OpOK
	// OpFailed: a definite failure: the command was never sent, so it was not applied.
	OpFailed
	// OpUnknown: the command may have reached the server and its reply was lost.
	OpUnknown
)

var opOutcomeNames = [...]string{"pending", "ok", "failed", "unknown"}

// String returns the lower-case name of the outcome.
func (o OpOutcome) String() string {
	if int(o) < len(opOutcomeNames) {
		return opOutcomeNames[o]
	}
	return "outcome?"
}

// Op is one workload operation: a command issued by a logical caller through the engine.
type Op struct {
	// ID is the command id: unique in a run, and the id the simulated nodes log when they apply it.
	ID uint64
	// Caller is the logical caller that issued it.
	Caller int
	// Name is the command name: GET, SET, DEL, INCR, MGET or MSET.
	Name string
	// Keys are the keys, in argument order.
	Keys []string
	// Values are the written values (SET, MSET), aligned with Keys. Every written value is unique
	// in the run.
	Values []string
	// Call and Return are the virtual times the caller issued the command and saw its outcome
	// (Return is the end of the run for pending operations).
	Call, Return time.Duration
	// Outcome is how it ended.
	Outcome OpOutcome
	// Reply is the decoded reply when Outcome is OpOK and ServerError is empty: for GET and DEL
	// and INCR one element, for MGET one per key, for SET and MSET "OK". A nil key is Null.
	Reply []Datum
	// ServerError is the error reply's text when the server answered with an error.
	ServerError string
	// Err is the failure text for OpFailed and OpUnknown outcomes.
	Err string
	// Stage is the engine stage at which the command ended.
	Stage string
}

// Datum is one reply element: a bulk string, an integer, or null.
type Datum struct {
	Null bool
	Str  string
	Int  int64
	// IsInt marks an integer reply.
	IsInt bool
}

// Apply is one command applied by a simulated node: the ground truth for at-most-once checks.
type Apply struct {
	// Node is the node's id.
	Node string
	// CmdID is the command id of the applied command (0 for handshake and untracked commands).
	CmdID uint64
	// Name is the command name.
	Name string
	// Conn is the simulated connection it arrived on.
	Conn fsm.ConnID
	// At is the virtual time it was applied.
	At time.Duration
	// AfterHandshake reports whether that connection had completed its handshake with the node
	// when the command arrived (application commands must only arrive after).
	AfterHandshake bool
}

// Send is one command frame written to a simulated connection (its first byte left the client).
type Send struct {
	// CmdID is the command id.
	CmdID uint64
	// Conn is the connection it was written to.
	Conn fsm.ConnID
	// At is the virtual time of the write.
	At time.Duration
}

// ReplyRecord is a reply of command CmdID on connection Conn at At: one a node wrote for it
// (Result.Served), or one the client paired with it (Result.Paired). Digest is the FNV-1a hash of
// the reply's RESP bytes, so that the pairing checker compares the two.
type ReplyRecord struct {
	CmdID  uint64
	Conn   fsm.ConnID
	At     time.Duration
	Digest uint64
	// Code is the error code of a simple error reply ("MOVED", "ASK", "ERR"), empty otherwise.
	Code string
}

// Step is one engine step: the stamped event and the effects the machine produced.
type Step struct {
	Event   fsm.Event
	Effects []fsm.Effect
}

// Window is a virtual-time interval [From, To).
type Window struct {
	From, To time.Duration
}

// Duplicate is a command completed more than once.
type Duplicate struct {
	// CmdID is the command id.
	CmdID uint64
	// At is the virtual time of the extra completion.
	At time.Duration
}
