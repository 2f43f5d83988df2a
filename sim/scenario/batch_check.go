package scenario

// CheckBatchEntries names the checker of the batchers' batches per command (sim/check/batch.go),
// selected with the invariants of every scenario with workload.batches.
const CheckBatchEntries = "batch-entries"

func init() {
	CheckerNames = append(CheckerNames, CheckBatchEntries)
}
