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
	// Replied is the number of its first commands whose replies the batcher took: all of them
	// when it ended ok, none when withdrawn. For a pipeline (one engine.Multi command) that
	// failed or timed out, the replies that arrived before; for a group of commands (an atomic
	// batch) that failed, the commands before the first that did not end with a reply, and 0
	// when it timed out.
	Replied int
	// Unknown reports that the commands after the first Replied have an unknown outcome (they may
	// have been written); otherwise a batch that did not end ok failed them definitely.
	Unknown bool
}
