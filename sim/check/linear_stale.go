package check

import (
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// staleRead is the staleness rule's window for one read a replica served from its stale copy
// (StaleReplicaReads).
type staleRead struct {
	// from is the earliest instant the copies it was served from were taken: its window opens
	// there instead of at its call.
	from time.Duration
	// pinned: the read returned the key's state at the instant from, exactly. Every node that
	// executed it served it from the one copy taken at from, and nothing changed that copy
	// since (no kill with lose_data of the node wiped it). A simulated replica whose link goes
	// down keeps a copy of the dataset as it is at that instant and never changes it until its
	// link comes back, so the read is explained by that instant alone, and its window closes
	// there too.
	pinned bool
}

// staleReads returns the staleness rule for each of r's replica reads served from a stale copy.
//
// A read served from a copy taken at from may only return the key's state at from, not any state
// between from and its return: its window is that instant. Before this rule the window ran
// from from to the read's return, so a replica whose link stayed down for the rest of a run
// left every read it served open from the link's loss to the end, hundreds of reads all
// concurrent with each other and with every write since; porcupine's search over them does not
// end (a 20 s run's check ran for over 12 minutes and 4.5 GB). A read that a node served from
// a live copy too (a hedged read, one attempt on a stale replica and one elsewhere), or from a
// copy that a data loss may have changed, or in a Sentinel deployment (where a diverged node
// ignores the timeline), keeps the wide window, which covers every state it may have seen.
func staleReads(r *record.Result) map[uint64]staleRead {
	spans := staleSpans(r)
	if spans == nil {
		return nil
	}
	sc := r.Scenario
	// wiped are the instants each node lost its data (kills with lose_data that took place).
	wiped := map[string][]time.Duration{}
	for i := range sc.Faults {
		if k := sc.Faults[i].Kill; k != nil && k.LoseData && i < len(r.Faults) {
			wiped[k.Node] = append(wiped[k.Node], r.Faults[i].From)
		}
	}
	ops := opsByID(r)
	// served is the digest of the reply each node wrote for a read, per command and
	// connection: an execution whose reply was never written cannot be the one its caller saw.
	type attempt struct {
		id   uint64
		conn fsm.ConnID
	}
	served := map[attempt]uint64{}
	for _, s := range r.Served {
		if op := ops[s.CmdID]; op != nil && readCommands[op.Name] {
			served[attempt{s.CmdID, s.Conn}] = s.Digest
		}
	}
	out := map[uint64]staleRead{}
	live := map[uint64]bool{} // reads with an execution outside every stale span
	digests := map[uint64][]uint64{}
	for _, a := range r.Applies {
		op := ops[a.CmdID]
		if op == nil || !readCommands[op.Name] || a.At > op.Return {
			continue // an execution after its caller had a reply (a hedge that lost) is not what it saw
		}
		if d, ok := served[attempt{a.CmdID, a.Conn}]; ok && !slices.Contains(digests[a.CmdID], d) {
			digests[a.CmdID] = append(digests[a.CmdID], d)
		}
		var span *staleSpan
		for i := range spans {
			if s := &spans[i]; s.node == a.Node && a.At >= s.from && a.At < s.to {
				span = s
				break
			}
		}
		if span == nil {
			live[a.CmdID] = true
			continue
		}
		pinned := !sc.SentinelReplicaReads()
		for _, at := range wiped[a.Node] {
			if at >= span.from && at <= a.At {
				pinned = false // the copy may have been wiped since
			}
		}
		prev, seen := out[a.CmdID]
		if !seen {
			out[a.CmdID] = staleRead{from: span.from, pinned: pinned}
			continue
		}
		out[a.CmdID] = staleRead{from: min(prev.from, span.from), pinned: prev.pinned && pinned && prev.from == span.from}
	}
	// A read executed on a live copy too (hedged) returned the stale copy's state only when
	// every execution that wrote a reply wrote the same one.
	for id := range live {
		if s, ok := out[id]; ok && len(digests[id]) != 1 {
			s.pinned = false
			out[id] = s
		}
	}
	return out
}

// undecided is the message of the linearizability violation of a history porcupine could not
// decide within LinearizabilityTimeout: no proven violation, but no pass either.
func undecided() string {
	return "porcupine timed out after " + LinearizabilityTimeout.String() + ": the history is undecidable within the checker's " +
		"budget (not a proven violation; fewer operations open at once on a key, such as fewer callers, a lower rate or " +
		"shorter command timeouts, make it decidable)"
}

// illegalBudget is illegalParts' time for all the parts it checks, shared equally among them (a
// variable for tests).
var illegalBudget = LinearizabilityTimeout

// illegalParts returns the indexes of the parts that porcupine proves not linearizable, in order,
// within one illegalBudget for them all: each part gets an equal share of it as porcupine's
// timeout, and a part it cannot decide in its share is not listed. The checks a failure report
// runs after a run's check (IllegalKeys, a violation's culprit) are bounded so, never left to run
// without end on a history the run's own check already gave up on. The shares are fixed up front,
// so the checker reads no clock of its own (porcupine measures its timeout).
func illegalParts(parts [][]porcupine.Operation) []int {
	if len(parts) == 0 || illegalBudget <= 0 {
		return nil
	}
	share := illegalBudget / time.Duration(len(parts))
	if share <= 0 {
		return nil
	}
	var out []int
	for i, part := range parts {
		if porcupine.CheckOperationsTimeout(registerModel, part, share) == porcupine.Illegal {
			out = append(out, i)
		}
	}
	return out
}
