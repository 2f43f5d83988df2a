package record

import (
	"time"

	"github.com/respire-go/respire/fsm"
)

// Dedicated operation outcomes (DedicatedOp.Outcome).
const (
	DedicatedOK         = "ok"
	DedicatedTimeout    = "timeout"
	DedicatedConflict   = "conflict"
	DedicatedError      = "error"
	DedicatedFailed     = "failed"
	DedicatedUnknown    = "unknown"
	DedicatedRentFailed = "rent-failed"
	DedicatedExhausted  = "exhausted"
	DedicatedCancelled  = "cancelled"
	DedicatedClosed     = "closed"
	DedicatedOverflow   = "overflow"
)

// DedicatedIDBase is the first command id of dedicated operations, far above the multiplexed
// workload's ids (1, 2, 3...).
const DedicatedIDBase = 1 << 40

// DedicatedOp is one operation of a renter: its rents, connections, commands and outcome.
type DedicatedOp struct {
	// ID numbers the operations 1, 2, 3... in issue order.
	ID int
	// Renter is the renter that ran it.
	Renter int
	// Kind is BLPOP, BRPOP, PUSH or TX.
	Kind string
	// Key is the list or transaction key.
	Key string
	// Waiters are the rents made for it: one (a planted bug may rent again).
	Waiters []fsm.WaiterID
	// Conns are the connections granted to it.
	Conns []fsm.ConnID
	// Cmds are the commands it handed to connections, in order.
	Cmds []DedicatedCmd
	// Call and Return are when it started and ended.
	Call, Return time.Duration
	// Outcome is one of the Dedicated* outcomes; empty if it never ended (a violation).
	Outcome string
	// Err is the failure's text.
	Err string
	// Value is the popped element of an ok pop.
	Value string
}

// DedicatedCmd is one command of a dedicated operation.
type DedicatedCmd struct {
	ID   uint64
	Name string
	Conn fsm.ConnID
	// Sent is when its step's commands were handed to the connection: the start of the round
	// trip that a round-trip timeout (workload.dedicated.round_trip_timeout) bounds.
	Sent time.Duration
}
