package check

import (
	"sort"
	"strings"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// The checkers of reads from replicas (scenario topology.replication, sim/replica.go). Each
// recomputes what must hold from the scenario (who is the primary when, the policy, the
// budget) and the records (sends, applies, dials, the router's steps); each has a plant that
// makes it fail (scenario/replica.go).

// replicaCheckers are the checkers "invariants: all" adds for a topology with replication.
var replicaCheckers = []string{scenario.CheckReplicaNoWrite, scenario.CheckReplicaPolicy, scenario.CheckReplicaHedges,
	scenario.CheckReplicaReplay}

// readCommands are the workload's commands that follow the read policy.
var readCommands = map[string]bool{"GET": true, "MGET": true}

// replicaRoles are the primary's changes of a run with replication: primaries[i] is the
// primary from since[i] on.
type replicaRoles struct {
	primaries []string
	since     []time.Duration
}

// rolesOf recomputes the roles from the scenario: the first node is the primary, and each
// promote event of the timeline makes its node the primary from then on.
func rolesOf(sc *scenario.Scenario) replicaRoles {
	out := replicaRoles{primaries: []string{sc.Topology.Nodes[0].ID}, since: []time.Duration{0}}
	order := make([]int, 0, len(sc.ReplicaEvents))
	for i := range sc.ReplicaEvents {
		if sc.ReplicaEvents[i].Promote != "" {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return sc.ReplicaEvents[order[a]].At < sc.ReplicaEvents[order[b]].At })
	for _, i := range order {
		out.primaries = append(out.primaries, sc.ReplicaEvents[i].Promote)
		out.since = append(out.since, sc.ReplicaEvents[i].At)
	}
	return out
}

// primaryAt returns the primary at time at.
func (r replicaRoles) primaryAt(at time.Duration) string {
	p := r.primaries[0]
	for i, s := range r.since {
		if s <= at {
			p = r.primaries[i]
		}
	}
	return p
}

// connNodes maps each connection the client dialed to the node it dialed.
func connNodes(r *record.Result) map[fsm.ConnID]string {
	out := make(map[fsm.ConnID]string, len(r.Dials))
	for _, d := range r.Dials {
		n := d.Endpoint
		if i := strings.LastIndexByte(n, ':'); i >= 0 {
			n = n[:i]
		}
		out[d.Conn] = n
	}
	return out
}

func opsByID(r *record.Result) map[uint64]*record.Op {
	ops := make(map[uint64]*record.Op, len(r.Ops))
	for i := range r.Ops {
		ops[r.Ops[i].ID] = &r.Ops[i]
	}
	return ops
}

// ReplicaNoWrite checks that no write went to a replica: no write of the workload is sent on a
// connection of a replica's engine (the client chose a replica for it), and no write is
// applied by a node that was not the primary then. A write sent to the configured primary after
// a promotion the client was not told of is not one: it chose the primary, and the node's
// READONLY proves the write did not run (the second rule holds it to that).
type ReplicaNoWrite struct{}

// Name implements Checker.
func (ReplicaNoWrite) Name() string { return scenario.CheckReplicaNoWrite }

// Check implements Checker.
func (ReplicaNoWrite) Check(r *record.Result) []Violation {
	sc := r.Scenario
	if sc == nil || !sc.ReplicaReads() {
		return nil
	}
	ops := opsByID(r)
	nodes := connNodes(r)
	var out []Violation
	for _, s := range r.Sends {
		op := ops[s.CmdID]
		if op == nil || !writeCommands[op.Name] {
			continue
		}
		if k := record.CandidateOf(s.Conn); k > 0 {
			out = append(out, violation(scenario.CheckReplicaNoWrite, s.At, "op "+u(op.ID)+" "+op.Name+" sent on conn "+
				u(uint64(s.Conn))+" of replica candidate "+itoa(k)+" ("+nodes[s.Conn]+")"))
		}
	}
	if sc.SentinelReplicaReads() {
		return out // a Sentinel deployment's applies: replica-writes and the Sentinel checkers
	}
	roles := rolesOf(sc)
	for _, a := range r.Applies {
		op := ops[a.CmdID]
		if op == nil || !writeCommands[op.Name] {
			continue
		}
		if p := roles.primaryAt(a.At); a.Node != p {
			out = append(out, violation(scenario.CheckReplicaNoWrite, a.At, "op "+u(op.ID)+" "+op.Name+" applied on "+
				a.Node+" while "+p+" was the primary"))
		}
	}
	return out
}

// ReplicaPolicy checks that the reads honour the read policy where the policy alone decides:
// under Primary every read goes to the primary's engine; under Replica none does (Replica
// never falls back to the primary). Each read's policy is its caller's: workload.view's for
// the view's callers, the client's read_from for the others. The other policies' choices depend on measurements and
// health, which the scenario tests assert (Nearest, bands, zones).
type ReplicaPolicy struct{}

// Name implements Checker.
func (ReplicaPolicy) Name() string { return scenario.CheckReplicaPolicy }

// Check implements Checker.
func (ReplicaPolicy) Check(r *record.Result) []Violation {
	sc := r.Scenario
	if sc == nil || !sc.ReplicaReads() {
		return nil
	}
	ops := opsByID(r)
	nodes := connNodes(r)
	var out []Violation
	for _, s := range r.Sends {
		op := ops[s.CmdID]
		if op == nil || !readCommands[op.Name] {
			continue
		}
		policy := sc.ReadPolicyOf(op.Caller) // its caller's view's, or the client's
		k := record.CandidateOf(s.Conn)
		switch {
		case policy == fsm.ReadPrimary && k != 0:
			out = append(out, violation(scenario.CheckReplicaPolicy, s.At, "op "+u(op.ID)+" "+op.Name+" read from replica "+
				nodes[s.Conn]+" under Primary"))
		case policy == fsm.ReadReplica && k == 0:
			out = append(out, violation(scenario.CheckReplicaPolicy, s.At, "op "+u(op.ID)+" "+op.Name+" read from the primary "+
				nodes[s.Conn]+" under Replica"))
		}
	}
	return out
}

// ReplicaHedges checks hedged reads: the router sends a hedge only for a read it watches, at
// most one per read, and never more than the budget allows: with MaximumExtraLoadPercent p,
// each hedge-eligible read earns p% of a hedge and the budget starts empty, so after n
// eligible reads at most n*p/100 hedges have been sent. A read is eligible when it starts (a
// ReadStarted of the router's journal, each selection of a read being a start) marked
// hedgeable under a policy other than Primary. On the wire, a command sent twice is a hedged read: a read
// of the workload, sent on two different candidates (the no-replay checker lets exactly
// those through, and this checker holds them to it).
type ReplicaHedges struct{}

// Name implements Checker.
func (ReplicaHedges) Name() string { return scenario.CheckReplicaHedges }

// Check implements Checker.
func (ReplicaHedges) Check(r *record.Result) []Violation {
	sc := r.Scenario
	if sc == nil || !sc.ReplicaReads() {
		return nil
	}
	pct := 0
	if h := sc.Client.HedgedReads; h != nil {
		pct = h.MaximumExtraLoadPercent
		if pct == 0 {
			pct = 5
		}
	}
	var out []Violation
	watched := map[fsm.ReadID]bool{}
	hedged := map[fsm.ReadID]bool{}
	eligible, sent := 0, 0
	for i := range r.Router {
		st := &r.Router[i]
		if ev := &st.Event; ev.Kind == fsm.ReadStarted && ev.Hedgeable && pct > 0 {
			policy := ev.Policy
			if policy >= fsm.ReadPolicies {
				policy, _ = scenario.ParseReadFrom(sc.Client.ReadFrom)
			}
			if policy != fsm.ReadPrimary {
				eligible++
			}
		}
		for _, e := range st.Effects {
			switch e.Kind {
			case fsm.RouteRead:
				if e.Watched {
					watched[e.Read] = true
				}
			case fsm.SendHedge:
				sent++
				switch {
				case !watched[e.Read]:
					out = append(out, violation(scenario.CheckReplicaHedges, st.Event.At, "hedge of read "+u(uint64(e.Read))+
						", which the router did not watch"))
				case hedged[e.Read]:
					out = append(out, violation(scenario.CheckReplicaHedges, st.Event.At, "second hedge of read "+u(uint64(e.Read))))
				}
				hedged[e.Read] = true
				if sent*100 > eligible*pct {
					out = append(out, violation(scenario.CheckReplicaHedges, st.Event.At, "hedge "+itoa(sent)+" after "+itoa(eligible)+
						" hedge-eligible reads: over the budget of "+itoa(pct)+"%"))
				}
			}
		}
	}
	out = append(out, hedgeSends(r, pct > 0)...)
	// On the wire: the reads sent twice are hedges, within the budget of the run's eligible
	// reads.
	twice := 0
	count := map[uint64]int{}
	for _, s := range r.Sends {
		if count[s.CmdID]++; count[s.CmdID] == 2 {
			twice++
			if twice*100 > eligible*pct {
				out = append(out, violation(scenario.CheckReplicaHedges, s.At, itoa(twice)+" reads sent twice for "+itoa(eligible)+
					" hedge-eligible reads: over the budget of "+itoa(pct)+"%"))
				break
			}
		}
	}
	return out
}

// hedgeSends checks the commands sent more than once: each is a read of the workload, hedging
// is on, and its two sends are on two different candidates.
func hedgeSends(r *record.Result, hedging bool) []Violation {
	ops := opsByID(r)
	first := map[uint64]record.Send{}
	count := map[uint64]int{}
	var out []Violation
	for _, s := range r.Sends {
		op := ops[s.CmdID]
		if op == nil {
			continue
		}
		count[s.CmdID]++
		prev, seen := first[s.CmdID]
		if !seen {
			first[s.CmdID] = s
			continue
		}
		switch {
		case !readCommands[op.Name] || !hedging:
			out = append(out, violation(scenario.CheckReplicaHedges, s.At, "op "+u(op.ID)+" "+op.Name+" sent twice, and it is no hedged read"))
		case count[s.CmdID] > 2:
			out = append(out, violation(scenario.CheckReplicaHedges, s.At, "op "+u(op.ID)+" sent "+itoa(count[s.CmdID])+" times"))
		case record.CandidateOf(s.Conn) == record.CandidateOf(prev.Conn):
			out = append(out, violation(scenario.CheckReplicaHedges, s.At, "op "+u(op.ID)+" hedged to the candidate of its first send"))
		}
	}
	return out
}

// hedgedRead reports whether a command sent (or applied) again may be a hedge: the scenario
// hedges reads and the command is one of the workload's reads. The no-replay checker lets it
// through; ReplicaHedges bounds it.
func hedgedRead(r *record.Result, ops map[uint64]*record.Op, id uint64) bool {
	sc := r.Scenario
	if sc == nil || !sc.IsReplicated() || !sc.HedgedReadsOn() {
		return false
	}
	op := ops[id]
	return op != nil && readCommands[op.Name]
}

// ReplicaReplay checks the journal contract for the rest of a client with replication: each
// replica's engine steps replay into fresh machines with that candidate's configuration, and
// the read router's journal replays into a fresh router, to the same effects.
type ReplicaReplay struct{}

// Name implements Checker.
func (ReplicaReplay) Name() string { return scenario.CheckReplicaReplay }

// Check implements Checker.
func (ReplicaReplay) Check(r *record.Result) []Violation {
	sc := r.Scenario
	if sc == nil || !sc.ReplicaReads() {
		return nil
	}
	var out []Violation
	folds := map[int]*replayFold{}
	index := map[int]int{}
	for i := range r.Candidates {
		cs := &r.Candidates[i]
		f := folds[cs.Candidate]
		if f == nil {
			cfg := sc.CandidateConfig
			if sc.SentinelReplicaReads() {
				if cs.Candidate < 1 || cs.Candidate > len(r.CandidateNodes) {
					return append(out, violation(scenario.CheckReplicaReplay, cs.Step.Event.At, "steps of replica engine "+
						itoa(cs.Candidate)+", whose node the run did not record"))
				}
				cfg = func(k int) engine.Config { return sc.SentinelReplicaConfig(r.CandidateNodes[k-1]) }
			}
			f = Replay{Config: cfg(cs.Candidate)}.fold()
			folds[cs.Candidate] = f
		}
		clients := []record.ClientGen{{Gen: record.CandidateGenBase + cs.Candidate, Step: 0}}
		f.step(index[cs.Candidate], &cs.Step, clients)
		index[cs.Candidate]++
	}
	keys := make([]int, 0, len(folds))
	for k := range folds {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		for _, v := range folds[k].out {
			v.Checker = scenario.CheckReplicaReplay
			v.Message = "replica " + itoa(k) + ": " + v.Message
			out = append(out, v)
		}
	}
	cfg, err := sc.RouterConfig()
	if err != nil {
		return append(out, violation(scenario.CheckReplicaReplay, 0, "the router's configuration does not resolve: "+err.Error()))
	}
	// One fresh router per generation: a standalone primary's one, with the scenario's
	// candidates, or each Sentinel replica set's, with the candidates the run published.
	machines := map[int]*fsm.Router{}
	var box fsm.RouterOutbox
	var a, b []byte
	for i := range r.Router {
		st := &r.Router[i]
		ev := st.Event
		m := machines[st.Gen]
		if m == nil {
			c := cfg
			if sc.SentinelReplicaReads() {
				if st.Gen < 0 || st.Gen >= len(r.RouterConfigs) {
					return append(out, violation(scenario.CheckReplicaReplay, ev.At, "steps of router generation "+itoa(st.Gen)+
						", whose configuration the run did not record"))
				}
				c = r.RouterConfigs[st.Gen]
			}
			m = fsm.NewRouter(c)
			machines[st.Gen] = m
		}
		box.Reset()
		m.Step(&ev, &box)
		a, b = a[:0], b[:0]
		for j := range box.Effects {
			a = box.Effects[j].AppendTo(append(a, '|'))
		}
		for j := range st.Effects {
			b = st.Effects[j].AppendTo(append(b, '|'))
		}
		if string(a) != string(b) {
			return append(out, violation(scenario.CheckReplicaReplay, ev.At, "router step "+itoa(i)+" ("+ev.String()+") replayed to "+
				string(a)+" but recorded "+string(b)))
		}
	}
	return out
}

// StaleReplicaReads returns the workload's reads that a replica served while its link to the
// primary was down (replica_events link_down until link_up or its promotion), each with the
// instant its link went down. Such a replica serves its copy of the data as it was then, so
// the read is not linearizable at its own call: the linearizability checker holds it to a
// staleness rule instead, that some instant between the link going down and the read's
// return explains its reply (its window opens at the link's loss instead of its call).
func StaleReplicaReads(r *record.Result) map[uint64]time.Duration {
	spans := staleSpans(r)
	if spans == nil {
		return nil
	}
	ops := opsByID(r)
	out := map[uint64]time.Duration{}
	for _, a := range r.Applies {
		op := ops[a.CmdID]
		if op == nil || !readCommands[op.Name] {
			continue
		}
		for _, s := range spans {
			if s.node == a.Node && a.At >= s.from && a.At < s.to {
				if prev, ok := out[a.CmdID]; !ok || s.from < prev {
					out[a.CmdID] = s.from
				}
			}
		}
	}
	return out
}

// staleSpan is a time a replica served its own copy of the dataset: its link to the primary
// went down at from (the copy is the dataset as it was then) and came back, or the replica was
// promoted, at to.
type staleSpan struct {
	node     string
	from, to time.Duration
}

// staleSpans returns the spans of r's replica timeline in which a replica's link was down
// (replica_events link_down until link_up or its promotion; one still down at the end lasts
// past r.End), or nil for a run without replication events.
func staleSpans(r *record.Result) []staleSpan {
	sc := r.Scenario
	if sc == nil || !sc.IsReplicated() || len(sc.ReplicaEvents) == 0 {
		return nil
	}
	order := make([]int, len(sc.ReplicaEvents))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return sc.ReplicaEvents[order[a]].At < sc.ReplicaEvents[order[b]].At })
	down := map[string]time.Duration{}
	spans := []staleSpan{}
	end := func(node string, at time.Duration) {
		if from, ok := down[node]; ok {
			spans = append(spans, staleSpan{node, from, at})
			delete(down, node)
		}
	}
	primary := sc.Topology.Nodes[0].ID
	for _, i := range order {
		e := &sc.ReplicaEvents[i]
		switch {
		case e.LinkDown != "" && e.LinkDown != primary:
			if _, ok := down[e.LinkDown]; !ok {
				down[e.LinkDown] = e.At
			}
		case e.LinkUp != "":
			end(e.LinkUp, e.At)
		case e.Promote != "":
			end(e.Promote, e.At)
			primary = e.Promote
		}
	}
	nodes := make([]string, 0, len(down))
	for node := range down {
		nodes = append(nodes, node)
	}
	sort.Strings(nodes)
	for _, node := range nodes {
		spans = append(spans, staleSpan{node, down[node], r.End + 1})
	}
	return spans
}

// hedgePairings returns, for each hedged read sent twice (hedgedRead), when each connection it
// was sent on paired a reply with it. Its operation completes with whichever attempt the
// router settles on, so its return says nothing of the order on each connection: the pairing
// checker orders each attempt by its own pairing instead (an attempt whose connection paired
// no reply is left out of the order, as a failed command is).
func hedgePairings(r *record.Result, ops map[uint64]*record.Op) map[uint64]map[fsm.ConnID]time.Duration {
	if r.Scenario == nil || !r.Scenario.HedgedReadsOn() {
		return nil
	}
	sends := map[uint64]int{}
	for _, s := range r.Sends {
		sends[s.CmdID]++
	}
	out := map[uint64]map[fsm.ConnID]time.Duration{}
	for id, n := range sends {
		if n > 1 && hedgedRead(r, ops, id) {
			out[id] = map[fsm.ConnID]time.Duration{}
		}
	}
	for _, p := range r.Paired {
		if m, ok := out[p.CmdID]; ok {
			if _, seen := m[p.Conn]; !seen {
				m[p.Conn] = p.At
			}
		}
	}
	return out
}
