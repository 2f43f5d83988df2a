package check

import (
	"sort"
	"strings"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// CheckReplicaWrites is the name of the checker that no write goes to a replica.
const CheckReplicaWrites = "replica-writes"

// writeCommands are the workload's commands that write.
var writeCommands = map[string]bool{"SET": true, "DEL": true, "INCR": true, "MSET": true}

// ReplicaWrites checks that the client never writes on a connection it opened to a replica: a
// data connection to a node that was a replica from its dial to its handshake's end (so no
// correct primary check could have passed) carries no write. A write on a connection opened to
// the primary, sent before the client learnt of a failover, is not one: the client chose a
// primary, and the replica's READONLY proves the write did not run. The roles are recomputed
// from the scenario (a Sentinel deployment's first primary and its failovers, an old primary
// acting as one while it misses the failover), independently of the client.
type ReplicaWrites struct{}

// Name implements Checker.
func (ReplicaWrites) Name() string { return CheckReplicaWrites }

// Check implements Checker.
func (ReplicaWrites) Check(r *record.Result) []Violation {
	roles := primaryWindows(r)
	if roles == nil {
		return nil
	}
	ready := map[fsm.ConnID]time.Duration{}
	for i := range r.Steps {
		if ev := &r.Steps[i].Event; ev.Kind == fsm.HandshakeDone {
			if _, ok := ready[ev.Conn]; !ok {
				ready[ev.Conn] = ev.At
			}
		}
	}
	// toReplica maps each data connection opened to a replica to that node.
	toReplica := map[fsm.ConnID]string{}
	for _, d := range r.Dials {
		if d.Machine == fsm.MachineSentinel || d.Machine == fsm.MachineSentinelMonitor {
			continue
		}
		at, ok := ready[d.Conn]
		if !ok {
			continue
		}
		node := d.Endpoint
		if i := strings.LastIndexByte(node, ':'); i >= 0 {
			node = node[:i]
		}
		if roles.known(node) && !roles.primaryDuring(node, d.At, at) {
			toReplica[d.Conn] = node
		}
	}
	if len(toReplica) == 0 {
		return nil
	}
	ops := make(map[uint64]*record.Op, len(r.Ops))
	for i := range r.Ops {
		ops[r.Ops[i].ID] = &r.Ops[i]
	}
	var out []Violation
	for _, s := range r.Sends {
		node, bad := toReplica[s.Conn]
		op := ops[s.CmdID]
		if !bad || op == nil || !writeCommands[op.Name] {
			continue
		}
		out = append(out, violation(CheckReplicaWrites, s.At, "op "+u(op.ID)+" "+op.Name+" written on conn "+
			u(uint64(s.Conn))+", which the client opened to "+node+" while it was a replica"))
	}
	return out
}

// roleWindows are the intervals during which each data node acted as a primary.
type roleWindows map[string][]window

type window struct{ from, to time.Duration }

// known reports whether node is a data node of the deployment.
func (w roleWindows) known(node string) bool { _, ok := w[node]; return ok }

// primaryDuring reports whether node acted as a primary at some instant of [from, to].
func (w roleWindows) primaryDuring(node string, from, to time.Duration) bool {
	for _, x := range w[node] {
		if x.from <= to && from < x.to {
			return true
		}
	}
	return false
}

// primaryWindows recomputes a Sentinel deployment's roles from its scenario: the first primary
// from the start; each failover that promotes another node makes it the primary from its start,
// and the old one a replica, at once or, with a split, at the split's end (it acts as a primary
// meanwhile). Nil for other topologies.
func primaryWindows(r *record.Result) roleWindows {
	sc := r.Scenario
	if sc == nil || !sc.IsSentinel() || sc.Topology.Sentinel == nil {
		return nil
	}
	end := r.End + 1
	out := roleWindows{}
	s := sc.Topology.Sentinel
	out[s.Primary] = nil
	for _, id := range s.Replicas {
		out[id] = nil
	}
	var order []int
	for i := range sc.Faults {
		if f := sc.Faults[i].Sentinel; f != nil && f.Failover != nil && f.Failover.Promote != "" &&
			i < len(r.Faults) && r.Faults[i].From < r.End {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return r.Faults[order[a]].From < r.Faults[order[b]].From })
	primary, since := s.Primary, time.Duration(0)
	for _, i := range order {
		f := sc.Faults[i].Sentinel.Failover
		at := r.Faults[i].From
		if f.Promote == primary {
			continue
		}
		out[primary] = append(out[primary], window{since, at + f.Split})
		primary, since = f.Promote, at
	}
	out[primary] = append(out[primary], window{since, end})
	return out
}
