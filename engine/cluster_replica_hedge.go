package engine

import (
	"slices"
	"strings"
	"time"

	"github.com/respire-go/respire/fsm"
)

// Hedged reads, read-routing observations and dedicated replica connections of a Cluster
// client's replica reads (ClusterReads).
//
// Each shard's router hedges within its shard: a watched read's hedge goes to another
// candidate of the same shard (the primary through the slot routing, a replica pinned to its
// node), with the router's own budget, exactly as a standalone client's single router does.
// The figures of every shard's router add up in ClusterReads.Hedges.

// NewClusterHedgedRead returns the hedged run of cmd, selected as p with watch w (SelectWatched).
// Call Start with p's candidate (Pick.Candidate).
func NewClusterHedgedRead(p ReadPick, w *ReadWatch, cmd *Command) *HedgedRead {
	return &HedgedRead{r: p.shard, w: w, orig: cmd, win: -1}
}

// Candidate returns the index of the pick's candidate in its shard (0: the primary), for
// HedgedRead.Start.
func (p ReadPick) Candidate() int { return p.target }

// Sibling returns the pick of candidate i of the same shard (HedgedRead.Result names the
// settled attempt's candidate so).
func (p ReadPick) Sibling(i int) ReadPick {
	if p.shard == nil || i < 0 || i >= len(p.shard.nodes) {
		return ReadPick{}
	}
	return p.shard.pick(i)
}

// hedgeSubmit sends an attempt to candidate target: the primary by slot, a replica pinned.
func (sh *shardReads) hedgeSubmit(target int, cmd *Command) {
	if target == 0 {
		sh.cr.e.Submit(cmd)
		return
	}
	sh.cr.e.SubmitRead(cmd, sh.nodes[target])
}

func (sh *shardReads) hedgeAbandon(_ int, cmd *Command) { sh.cr.e.Abandon(cmd) }

func (sh *shardReads) hedgeFailed(target int) {
	sh.step(fsm.RouterEvent{Kind: fsm.TargetFailed, Target: target})
}

func (sh *shardReads) hedgeEnded(w *ReadWatch, target int, ok bool) {
	sh.step(fsm.RouterEvent{Kind: fsm.ReadEnded, Read: w.id, Target: target, OK: ok})
}

func (sh *shardReads) hedgeWithdraw(w *ReadWatch) {
	sh.cr.mu.Lock()
	delete(sh.watches, w.id)
	sh.cr.mu.Unlock()
	sh.step(fsm.RouterEvent{Kind: fsm.ReadWithdrawn, Read: w.id})
}

// Hedges returns the hedging figures of every shard's router since the reads started.
func (cr *ClusterReads) Hedges() HedgeCounts {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return cr.hedge
}

// ClusterBand is a shard's last completed band selection, the Cluster form of
// fsm.RouterBand: the slot of the read that made it, the shard (its primary's endpoint), the
// policy, the endpoints the read rotated among, and when it was captured. It is a copy.
type ClusterBand struct {
	Slot      int
	Primary   Endpoint
	Policy    fsm.ReadFrom
	Endpoints []Endpoint
	// At is on the engine runtime's clock (ClusterReads.Origin turns it into a wall-clock
	// time): the router's capture time, or later when the slot changed since.
	At time.Duration
}

// noteBandLocked records, after a routed read of slot (under cr.mu), that the shard made the
// last band selection. It allocates nothing: the observation is copied out on demand
// (LastBand, Bands). An unchanged band, policy and slot keep their capture time.
func (sh *shardReads) noteBandLocked(slot int) {
	if _, ok := sh.m.LastBand(); !ok {
		return
	}
	if !sh.noted || sh.slot != slot {
		sh.noted, sh.slot, sh.slotAt = true, slot, sh.cr.e.deps.Runtime.Now()
	}
	sh.cr.lastShard = sh
}

// bandLocked copies the shard's observation (under cr.mu).
func (sh *shardReads) bandLocked() (ClusterBand, bool) {
	b, ok := sh.m.LastBand()
	if !ok || !sh.noted {
		return ClusterBand{}, false
	}
	out := ClusterBand{Slot: sh.slot, Primary: endpointOf(sh.eps[0]), Policy: b.Policy, At: max(b.At, sh.slotAt)}
	for _, i := range b.Candidates {
		out.Endpoints = append(out.Endpoints, endpointOf(sh.eps[i]))
	}
	return out, true
}

// LastBand returns the last completed band selection of any shard, or false before any (or
// when its shard's router left with a topology change).
func (cr *ClusterReads) LastBand() (ClusterBand, bool) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if sh := cr.lastShard; sh != nil && !sh.gone {
		return sh.bandLocked()
	}
	return ClusterBand{}, false
}

// Bands returns each current shard's last completed band selection, for the shards that made
// one, ordered by the shard primary's endpoint.
func (cr *ClusterReads) Bands() []ClusterBand {
	cr.mu.Lock()
	var out []ClusterBand
	for _, sh := range cr.shards {
		if b, ok := sh.bandLocked(); ok {
			out = append(out, b)
		}
	}
	cr.mu.Unlock()
	slices.SortFunc(out, func(a, b ClusterBand) int {
		if c := strings.Compare(a.Primary.Host, b.Primary.Host); c != 0 {
			return c
		}
		return a.Primary.Port - b.Primary.Port
	})
	return out
}

// Origin returns the wall-clock time of the engine runtime's origin, when the runtime has one
// (a ClockRuntime), for ClusterBand.At.
func (cr *ClusterReads) Origin() (time.Time, bool) {
	if o, ok := cr.e.deps.Runtime.(interface{ Origin() time.Time }); ok {
		return o.Origin(), true
	}
	return time.Time{}, false
}

// RentNode rents a dedicated connection of the Cluster node numbered num (a replica that a
// ClusterReads pick named), as RentSlot rents one of a slot's owner; the answer comes through
// notify, and Cancel(fsm.MachinePool, id) withdraws it. A node that left the topology answers
// OutcomeClosed. Connections to a node the map names as a replica send READONLY in their
// handshake. On a standalone engine it is Rent.
func (e *Engine) RentNode(num uint32, notify func(Grant)) fsm.WaiterID {
	if e.cl == nil {
		return e.Rent(notify)
	}
	return e.demandOn(fsm.MachineNodePool, fsm.Event{Kind: fsm.Demanded, Node: num}, &waiter{notify: notify})
}
