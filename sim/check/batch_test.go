package check

import (
	"testing"

	"github.com/respire-go/respire/sim/record"
)

// batchResult is a pipeline of three commands (ids 1, 2, 3) sent on conn 1: the node applied and
// answered the first two (digests 11, 12), and the third (13) too unless applied3 is false;
// the client paired the first two with those replies.
func batchResult(op record.BatchOp, applied3 bool) *record.Result {
	r := &record.Result{
		Sends:  []record.Send{{CmdID: 1, Conn: 1}, {CmdID: 2, Conn: 1}, {CmdID: 3, Conn: 1}},
		Served: []record.ReplyRecord{{CmdID: 1, Digest: 11}, {CmdID: 2, Digest: 12}},
		Paired: []record.ReplyRecord{{CmdID: 1, Digest: 11}, {CmdID: 2, Digest: 12}},
	}
	r.Applies = []record.Apply{{CmdID: 1}, {CmdID: 2}}
	if applied3 {
		r.Applies = append(r.Applies, record.Apply{CmdID: 3})
		r.Served = append(r.Served, record.ReplyRecord{CmdID: 3, Digest: 13})
	}
	op.ID, op.Cmds = 1, []uint64{1, 2, 3}
	r.Batches = []record.BatchOp{op}
	return r
}

// TestBatchEntries: a pipeline that lost its connection after two replies keeps them, its third
// command unknown whether or not it ran; each broken promise is reported.
func TestBatchEntries(t *testing.T) {
	c := BatchEntries{}
	expectViolations(t, c, batchResult(record.BatchOp{Outcome: record.BatchFailed, Replied: 2, Unknown: true}, true))
	expectViolations(t, c, batchResult(record.BatchOp{Outcome: record.BatchFailed, Replied: 2, Unknown: true}, false))
	expectViolations(t, c, batchResult(record.BatchOp{Outcome: record.BatchFailed, Replied: 2}, false))
	expectViolations(t, c, batchResult(record.BatchOp{Outcome: record.BatchTimeout, Replied: 1, Unknown: true}, true))

	// A definite failure that ran.
	expectViolations(t, c, batchResult(record.BatchOp{Outcome: record.BatchFailed, Replied: 2}, true),
		"command 3 of 3 (3) reported a definite failure but was applied")
	// A reply kept that never came.
	expectViolations(t, c, batchResult(record.BatchOp{Outcome: record.BatchFailed, Replied: 3, Unknown: true}, false),
		"command 3 of 3 (3) kept a reply but was never applied or paired")
	// Ok with a reply missing.
	expectViolations(t, c, batchResult(record.BatchOp{Outcome: record.BatchOK, Replied: 2}, true), "ended ok with 2 replies of 3")
	// A reply paired with the wrong command (the late-reply plant).
	r := batchResult(record.BatchOp{Outcome: record.BatchFailed, Replied: 2, Unknown: true}, true)
	r.Paired[1].Digest = 13
	expectViolations(t, c, r, "command 2 of 3 (2) was paired with a reply no node sent for it")
	// An unknown outcome of a failure that was never written.
	r = batchResult(record.BatchOp{Outcome: record.BatchFailed, Replied: 2, Unknown: true}, false)
	r.Sends = r.Sends[:2]
	expectViolations(t, c, r, "command 3 of 3 (3) reported an unknown outcome but was never written")
	// A withdrawn batch that was written.
	r = batchResult(record.BatchOp{Outcome: record.BatchWithdraw}, false)
	r.Applies, r.Paired, r.Served = nil, nil, nil
	expectViolations(t, c, r, "command 1 of 3 (1) was withdrawn but written", "command 2 of 3 (2) was withdrawn but written",
		"command 3 of 3 (3) was withdrawn but written")
	r.Sends = nil
	expectViolations(t, c, r)
}
