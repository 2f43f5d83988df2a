package record

import "time"

// BatchIDBase is the first command id of the batchers' commands (workload.batches), above the
// dedicated operations'.
const BatchIDBase = 1 << 41

// Batch outcomes (BatchOp.Outcome): every reply arrived, the batch timed out with commands in
// flight, it timed out before a connection took it, or a failure (the connection's, the
// client's close) ended one of its commands.
const (
	BatchOK       = "ok"
	BatchTimeout  = "timeout"
	BatchWithdraw = "withdrawn"
	BatchFailed   = "failed"
)

// BatchOp is one batch of a batcher (workload.batches): its commands were submitted together
// at Call and the batcher stopped waiting at Return.
type BatchOp struct {
	// ID numbers the batches 1, 2, 3... in issue order.
	ID int
	// Batcher is the batcher that sent it.
	Batcher int
	// Atomic marks a MULTI/EXEC batch.
	Atomic bool
	// Cmds are its command ids, in order.
	Cmds []uint64
	// Call and Return are when it was submitted and when its batcher stopped waiting.
	Call, Return time.Duration
	// Outcome is one of the Batch* outcomes; empty if it never ended.
	Outcome string
	// Err is the error text of a batch that did not end ok.
	Err string
}
