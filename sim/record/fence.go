package record

import (
	"time"

	"github.com/respire-go/respire/fsm"
)

// SettleOutcome is how a Settle the workload asked for ended.
type SettleOutcome uint8

// Settle outcomes.
const (
	// SettlePending: no answer by the end of the run (always a bug: closing the client answers
	// every waiter).
	SettlePending SettleOutcome = iota
	// SettleGranted: the fence was acknowledged, or the connection owed none. From then on the
	// command must never execute.
	SettleGranted
	// SettleRefused: the fence machine answered with an error (no identity, a refused kill).
	SettleRefused
	// SettleClosed: the client was closed before the acknowledgement.
	SettleClosed
)

var settleOutcomeNames = [...]string{"pending", "granted", "refused", "closed"}

// String returns the lower-case name of the outcome.
func (o SettleOutcome) String() string {
	if int(o) < len(settleOutcomeNames) {
		return settleOutcomeNames[o]
	}
	return "settle?"
}

// Settle is one wait for the fence of a command whose outcome was unknown: the workload asks
// the client (engine.Engine.Settle, the call client.Settle makes) as soon as the operation
// ends unknown on a connection that failed.
type Settle struct {
	// CmdID is the command whose outcome was unknown.
	CmdID uint64
	// Conn is the failed connection the command's error names.
	Conn fsm.ConnID
	// Asked and Answered are the virtual times of the call and of its answer (Answered is zero
	// while Outcome is SettlePending).
	Asked, Answered time.Duration
	// Outcome is how it ended.
	Outcome SettleOutcome
	// Err is the refusal's text for SettleRefused.
	Err string
}
