package record

import "github.com/respire-go/respire/sim/scenario"

// Sink consumes a run's operation records in closed segments, so that a long run's memory is
// bounded by a segment instead of growing with the run (sim.RunOptions.Sink; package check's
// Stream is the sink that judges them).
//
// A segment closes at a quiescent cut: no workload operation is waiting, the engine holds none of
// the workload's commands, and every command written to a connection was applied by its node or
// can no longer be (the node's side of the connection is closed). A command held for good on
// its way to the node (a black-hole lasting past the end of the run, none of its bytes
// delivered) can no longer be either, and the engine may still hold it once its caller timed
// out: only a late completion can follow, which records nothing but a duplicate. Every record
// about the operations of a segment is then in it: their sends, applies, served and paired
// replies and duplicate completions. A segment holds Ops, Applies, Sends, Served, Paired and
// Duplicates, with OpBase, Start (the previous cut), End (this cut), and Faults and HealedAt as
// of the cut (a fault not started yet is the window [End, End); HealedAt is a lower bound of the
// run's), and Dials, the run's dials up to the cut (shared with the run: read only). The other
// records (engine steps, pub/sub, dedicated operations, the trace) stay in the run's Result.
type Sink interface {
	// Accepts reports whether a run of the resolved scenario sc may hand its records over in
	// segments. When it does not, the run keeps every record, as a run without a sink does.
	Accepts(sc *scenario.Scenario) bool
	// Segment consumes one closed segment. The runner keeps no reference to it afterwards.
	Segment(seg *Result)
}
