package check

import (
	"slices"

	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// CheckBatchEntries is the checker of the batchers' batches per command.
const CheckBatchEntries = scenario.CheckBatchEntries

// BatchEntries judges each batch of the batchers (workload.batches) per command, against the
// nodes' ground truth. A batch's first Replied commands kept their replies: each was written,
// applied, and paired with the reply its node sent for it. A batch that did not end ok reports
// the others as unknown (BatchOp.Unknown) or as definite failures: a definite failure was never
// applied, and an unknown outcome of a failure was written first. A withdrawn batch was never
// written. (no-replay checks that nothing was written or applied twice.)
type BatchEntries struct{}

// Name implements Checker.
func (BatchEntries) Name() string { return CheckBatchEntries }

// Check implements Checker.
func (BatchEntries) Check(r *record.Result) []Violation {
	if len(r.Batches) == 0 {
		return nil
	}
	sent, applied := map[uint64]bool{}, map[uint64]bool{}
	for _, s := range r.Sends {
		sent[s.CmdID] = true
	}
	for _, a := range r.Applies {
		applied[a.CmdID] = true
	}
	served, paired := map[uint64][]uint64{}, map[uint64][]uint64{}
	for _, s := range r.Served {
		served[s.CmdID] = append(served[s.CmdID], s.Digest)
	}
	for _, p := range r.Paired {
		paired[p.CmdID] = append(paired[p.CmdID], p.Digest)
	}
	var out []Violation
	for i := range r.Batches {
		b := &r.Batches[i]
		if b.Outcome == "" {
			continue // never ended: the run stopped first
		}
		what := func(j int) string {
			return "batch " + itoa(b.ID) + " of batcher " + itoa(b.Batcher) + " (" + b.Outcome + "): command " +
				itoa(j+1) + " of " + itoa(len(b.Cmds)) + " (" + u(b.Cmds[j]) + ")"
		}
		kept := b.Replied
		if b.Outcome == record.BatchOK && kept != len(b.Cmds) {
			out = append(out, violation(CheckBatchEntries, b.Return, "batch "+itoa(b.ID)+" of batcher "+itoa(b.Batcher)+
				" ended ok with "+itoa(kept)+" replies of "+itoa(len(b.Cmds))))
		}
		for j, id := range b.Cmds {
			switch {
			case j < kept:
				ps := paired[id]
				if !applied[id] || len(ps) == 0 {
					out = append(out, violation(CheckBatchEntries, b.Return, what(j)+" kept a reply but was never applied or paired"))
				}
				for _, d := range ps {
					if !slices.Contains(served[id], d) {
						out = append(out, violation(CheckBatchEntries, b.Return, what(j)+" was paired with a reply no node sent for it"))
					}
				}
			case b.Outcome == record.BatchWithdraw:
				if sent[id] {
					out = append(out, violation(CheckBatchEntries, b.Return, what(j)+" was withdrawn but written"))
				}
			case b.Outcome == record.BatchOK:
			case !b.Unknown && applied[id]:
				out = append(out, violation(CheckBatchEntries, b.Return, what(j)+" reported a definite failure but was applied"))
			case b.Unknown && b.Outcome == record.BatchFailed && !sent[id]:
				out = append(out, violation(CheckBatchEntries, b.Return, what(j)+" reported an unknown outcome but was never written"))
			}
		}
	}
	return out
}
