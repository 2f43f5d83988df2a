package fsm

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// clusterWorld is an independent model of a Cluster and a runtime around a Cluster machine: it
// executes the machine's effects (dials succeed or fail by the endpoint's health, queries are
// answered with the world's topology), fires timers when due, and injects outside events. It
// checks the machine's promises on every step without reusing its logic.
type clusterWorld struct {
	t   *rapid.T
	c   *Cluster
	cfg ClusterConfig
	now time.Duration

	// members are the world's nodes: id -> endpoint; owners maps slot ranges to ids.
	members map[NodeID]Endpoint
	order   []NodeID
	up      map[Endpoint]bool
	garbage bool

	pending []scheduled
	seq     int
	journal []Event
	lines   []string

	// Oracles.
	named       map[Endpoint]bool          // aliases named by the last published map's topology
	departed    map[Endpoint]time.Duration // when a named endpoint stopped being named
	retiredNode map[uint32]bool            // nodes whose command slots retired
	waiters     map[WaiterID]bool          // caller demands: true once completed
	nextWaiter  WaiterID
	published   *ClusterMap
	ready       []ConnID
	closed      map[ConnID]bool
	// rented are the dedicated connections granted to callers and not returned yet.
	rented []ConnID
	// rents are the waiters of dedicated rents.
	rents map[WaiterID]bool
}

type scheduled struct {
	at  time.Duration
	seq int
	ev  Event
}

var worldAddrs = []Endpoint{
	MakeEndpoint("10.0.0.1", 7000), MakeEndpoint("10.0.0.2", 7000), MakeEndpoint("10.0.0.3", 7000),
	MakeEndpoint("10.0.0.4", 7000), MakeEndpoint("10.0.0.5", 7000), MakeEndpoint("10.0.0.6", 7000),
}

func newClusterWorld(t *rapid.T, cfg ClusterConfig) *clusterWorld {
	w := &clusterWorld{t: t, c: NewCluster(cfg), cfg: cfg,
		members: map[NodeID]Endpoint{"a": worldAddrs[0], "b": worldAddrs[1], "c": worldAddrs[2]},
		order:   []NodeID{"a", "b", "c"},
		up:      map[Endpoint]bool{}, named: map[Endpoint]bool{}, departed: map[Endpoint]time.Duration{},
		retiredNode: map[uint32]bool{}, waiters: map[WaiterID]bool{}, closed: map[ConnID]bool{},
		rents: map[WaiterID]bool{},
	}
	for _, a := range worldAddrs {
		w.up[a] = true
	}
	return w
}

// reply is the world's CLUSTER SLOTS answer: the slots split evenly over its members in order.
func (w *clusterWorld) reply() *TopologyReply {
	r := &TopologyReply{Query: QueryClusterSlots}
	if w.garbage {
		return r
	}
	n := len(w.order)
	for i, id := range w.order {
		first, last := i*SlotCount/n, (i+1)*SlotCount/n-1
		r.Shards = append(r.Shards, ReplyShard{Ranges: []SlotRange{{uint16(first), uint16(last)}},
			Nodes: []Node{{ID: id, Addr: w.members[id], Role: RolePrimary}}})
	}
	return r
}

func (w *clusterWorld) schedule(after time.Duration, ev Event) {
	w.seq++
	w.pending = append(w.pending, scheduled{at: w.now + after, seq: w.seq, ev: ev})
}

func (w *clusterWorld) unschedule(timer TimerID) {
	w.pending = slices.DeleteFunc(w.pending, func(s scheduled) bool { return s.ev.Kind == TimerFired && s.ev.Timer == timer })
}

// step stamps ev, steps it into the machine, records it and checks the effects.
func (w *clusterWorld) step(ev Event) {
	ev.At = w.now
	ev.Draw = float64(w.seq%97) / 97
	w.journal = append(w.journal, ev)
	var out Outbox
	w.c.Step(&ev, &out)
	for i := range out.Effects {
		w.lines = append(w.lines, out.Effects[i].String())
	}
	w.effects(&ev, out.Effects)
}

func (w *clusterWorld) isSeed(ep Endpoint) bool { return slices.Contains(w.cfg.Seeds, ep) }

func (w *clusterWorld) effects(ev *Event, effects []Effect) {
	t := w.t
	// The map a step publishes is in force for the whole step: a topology that names an endpoint
	// again allows the dials of the same step.
	for i := range effects {
		if f := &effects[i]; f.Kind == Publish {
			if ev.Kind == Replied && ev.Reply != nil && len(ev.Reply.Shards) == 0 && w.published != nil &&
				!f.Map.Topology.Equal(w.published.Topology) {
				t.Fatalf("t=%v: an empty reply changed the topology", w.now)
			}
			w.publish(f.Map)
		}
	}
	for i := range effects {
		f := &effects[i]
		switch f.Kind {
		case Dial:
			if w.retiredNode[f.Node] {
				t.Fatalf("t=%v: dial %v of node %d, whose slots retired", w.now, f.Conn, f.Node)
			}
			if at, ok := w.departed[f.Endpoint]; ok && !w.isSeed(f.Endpoint) && w.now > at+w.c.cfg.RetiredGrace {
				t.Fatalf("t=%v: dial to %v, which left the topology at %v, after its grace", w.now, f.Endpoint, at)
			}
			if w.up[f.Endpoint] {
				w.schedule(time.Millisecond, Event{Kind: HandshakeDone, Conn: f.Conn})
			} else {
				w.schedule(time.Millisecond, Event{Kind: DialFailed, Conn: f.Conn, Err: errors.New("refused")})
			}
		case ArmTimer:
			w.schedule(f.After, Event{Kind: TimerFired, Timer: f.Timer})
		case CancelTimer:
			w.unschedule(f.Timer)
		case Close:
			if slices.Contains(w.rented, f.Conn) {
				t.Fatalf("t=%v: rented connection %v closed before its return", w.now, f.Conn)
			}
			w.closed[f.Conn] = true
			w.ready = slices.DeleteFunc(w.ready, func(c ConnID) bool { return c == f.Conn })
		case Route:
			if f.State == SlotRetired && f.Machine == MachineNodeMux {
				w.retiredNode[f.Node] = true
			}
			if f.State == SlotReady && f.Conn != 0 && !slices.Contains(w.ready, f.Conn) {
				w.ready = append(w.ready, f.Conn)
			}
		case Query:
			if w.closed[f.Conn] {
				t.Fatalf("t=%v: query on closed connection %v", w.now, f.Conn)
			}
			if w.up[f.Endpoint] {
				w.schedule(time.Millisecond, Event{Kind: Replied, Machine: MachineCluster, Waiter: f.Waiter, Reply: w.reply()})
			} else {
				w.schedule(time.Millisecond, Event{Kind: QueryFailed, Machine: MachineCluster, Waiter: f.Waiter, Err: errors.New("reset")})
			}
		case Complete:
			if isInternal(f.Waiter) {
				t.Fatalf("t=%v: the machine leaked its own waiter %d", w.now, f.Waiter)
			}
			done, known := w.waiters[f.Waiter]
			if !known {
				t.Fatalf("t=%v: completion of unknown waiter %d", w.now, f.Waiter)
			}
			if done {
				t.Fatalf("t=%v: waiter %d completed twice", w.now, f.Waiter)
			}
			w.waiters[f.Waiter] = true
			if f.Machine == MachineNodePool && f.Outcome == OutcomeGranted {
				if w.retiredNode[f.Node] {
					t.Fatalf("t=%v: rent granted on node %d, whose slots retired", w.now, f.Node)
				}
				w.rented = append(w.rented, f.Conn)
			}
		case Record:
			if p := w.cfg.Policy; p != nil && f.Metric.Source == SourceClusterDiscovery &&
				f.Metric.Instrument == InstrumentAttempt && p.MaxAttempts > 0 && int(f.Metric.Value) > p.MaxAttempts {
				t.Fatalf("t=%v: discovery attempt %v beyond MaxAttempts %d", w.now, f.Metric.Value, p.MaxAttempts)
			}
		}
	}
}

// publish records the endpoints the published topology names, and when endpoints stop being
// named.
func (w *clusterWorld) publish(m *ClusterMap) {
	w.published = m
	now := map[Endpoint]bool{}
	for _, ep := range m.Topology.Endpoints() {
		now[ep] = true
		delete(w.departed, ep)
	}
	for ep := range w.named {
		if !now[ep] {
			if _, ok := w.departed[ep]; !ok {
				w.departed[ep] = w.now
			}
		}
	}
	w.named = now
}

// deliver steps the earliest pending event.
func (w *clusterWorld) deliver() bool { return w.deliverUntil(-1) }

// deliverUntil steps the earliest pending event if it is due by limit (any time when limit is
// negative), and reports whether it did.
func (w *clusterWorld) deliverUntil(limit time.Duration) bool {
	if len(w.pending) == 0 {
		return false
	}
	sort.Slice(w.pending, func(i, j int) bool {
		if w.pending[i].at != w.pending[j].at {
			return w.pending[i].at < w.pending[j].at
		}
		return w.pending[i].seq < w.pending[j].seq
	})
	s := w.pending[0]
	if limit >= 0 && s.at > limit {
		return false
	}
	w.pending = w.pending[1:]
	if s.at > w.now {
		w.now = s.at
	}
	// An aborted attempt still reports its end: the machine must cope.
	w.step(s.ev)
	return true
}

// giveBack returns the oldest rented connection, healthy or not.
func (w *clusterWorld) giveBack(healthy bool) {
	if len(w.rented) == 0 {
		return
	}
	c := w.rented[0]
	w.rented = w.rented[1:]
	w.step(Event{Kind: Returned, Conn: c, Healthy: healthy})
}

func (w *clusterWorld) demand(ev Event) {
	w.nextWaiter++
	ev.Kind, ev.Waiter = Demanded, w.nextWaiter
	w.waiters[ev.Waiter] = false
	w.step(ev)
}

// TestPropCluster drives a Cluster machine through random fault timelines against the world
// model: nodes going down and up, nodes replaced at new endpoints, inconclusive replies, lost
// connections, MOVED redirects and every kind of demand. It checks on every step that no dial
// reaches a retired node's machines or an endpoint past its grace, that an empty reply never
// changes the topology, that discovery attempts stay within the budget, and that every caller
// demand completes exactly once, all of them within three quiet minutes, that no rent is granted
// on a retired node and no rented connection is closed before its return (a departed node's
// rented connections outlive its grace); and at the end that, once every rented connection is
// returned, no retired node outlives its grace, and that replaying the journal into a fresh
// machine reproduces every effect.
func TestPropCluster(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := ClusterConfig{Seeds: []Endpoint{worldAddrs[0], worldAddrs[4]}, Slots: rapid.IntRange(1, 2).Draw(t, "slots"),
			Pool: PoolConfig{MaximumIdle: 2}, RetiredGrace: 10 * time.Second,
			RefreshInterval: time.Duration(rapid.IntRange(0, 1).Draw(t, "periodic")) * time.Minute}
		if rapid.Bool().Draw(t, "policy") {
			cfg.Policy = &Policy{InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second,
				MaxAttempts: rapid.IntRange(0, 3).Draw(t, "attempts")}
		}
		w := newClusterWorld(t, cfg)
		steps := rapid.IntRange(1, 120).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			switch rapid.IntRange(0, 14).Draw(t, "action") {
			case 0, 1, 2, 3:
				if !w.deliver() {
					w.now += time.Second
				}
			case 4:
				w.demand(Event{Machine: MachineNodeMux, Slot: rapid.IntRange(-1, SlotCount-1).Draw(t, "slot")})
			case 5:
				w.demand(Event{Machine: MachineNodeMux, Endpoint: rapid.SampledFrom(worldAddrs).Draw(t, "endpoint")})
			case 6:
				w.demand(Event{Machine: MachineCluster, Need: rapid.SampledFrom([]Need{NeedAll, NeedTopology}).Draw(t, "need"),
					Slot: rapid.IntRange(0, SlotCount-1).Draw(t, "slot")})
			case 7:
				if len(w.ready) > 0 {
					c := rapid.SampledFrom(w.ready).Draw(t, "lost")
					w.ready = slices.DeleteFunc(w.ready, func(x ConnID) bool { return x == c })
					w.step(Event{Kind: ConnLost, Conn: c, Err: errors.New("reset")})
				}
			case 8:
				w.step(Event{Kind: Moved, Machine: MachineCluster, Slot: rapid.IntRange(0, SlotCount-1).Draw(t, "slot"),
					Endpoint: rapid.SampledFrom(worldAddrs).Draw(t, "target")})
			case 9:
				ep := rapid.SampledFrom(worldAddrs).Draw(t, "toggle")
				w.up[ep] = !w.up[ep]
			case 10:
				// Replace a node at an endpoint no member uses (the incident's patch).
				id := rapid.SampledFrom(w.order).Draw(t, "replaced")
				var free []Endpoint
				for _, a := range worldAddrs {
					used := false
					for _, m := range w.members {
						used = used || m == a
					}
					if !used {
						free = append(free, a)
					}
				}
				if len(free) > 0 {
					w.seq++
					nid := NodeID(fmt.Sprintf("n%d", w.seq))
					delete(w.members, id)
					w.members[nid] = rapid.SampledFrom(free).Draw(t, "new-endpoint")
					w.order[slices.Index(w.order, id)] = nid
				}
			case 11:
				w.garbage = !w.garbage
			case 12:
				var open []WaiterID
				for id, done := range w.waiters {
					if !done {
						open = append(open, id)
					}
				}
				if len(open) > 0 {
					slices.Sort(open)
					id := rapid.SampledFrom(open).Draw(t, "withdraw")
					w.step(Event{Kind: Withdrew, Machine: MachineCluster, Waiter: id})
				}
			case 13:
				w.rents[w.nextWaiter+1] = true
				w.demand(Event{Machine: MachineNodePool, Slot: rapid.IntRange(0, SlotCount-1).Draw(t, "slot")})
			case 14:
				w.giveBack(rapid.Bool().Draw(t, "healthy"))
			}
		}
		// Quiet: every endpoint answers, the replies are whole, and everything settles.
		w.garbage = false
		// A rent of a node that stays down retries as long as its policy allows (forever with
		// MaxAttempts 0): its caller gives up.
		var pending []WaiterID
		for id := range w.rents {
			if !w.waiters[id] {
				pending = append(pending, id)
			}
		}
		slices.Sort(pending)
		for _, id := range pending {
			w.step(Event{Kind: Withdrew, Machine: MachineCluster, Waiter: id})
		}
		quiet := w.now + 3*time.Minute
		for w.deliverUntil(quiet) {
		}
		for id, done := range w.waiters {
			if !done {
				t.Fatalf("waiter %d never completed", id)
			}
		}
		// Every rented connection comes back; then no retired node past its grace is tracked.
		for len(w.rented) > 0 {
			w.giveBack(true)
		}
		settled := w.now + time.Minute
		for w.deliverUntil(settled) {
		}
		for _, n := range w.c.nodes {
			if n.lingering || (n.retired && n.forgetAt <= w.now) {
				t.Fatalf("node %d still tracked after its grace with nothing rented", n.num)
			}
		}
		// Replay.
		r := NewCluster(cfg)
		var got []string
		for i := range w.journal {
			ev := w.journal[i]
			var out Outbox
			r.Step(&ev, &out)
			for j := range out.Effects {
				got = append(got, out.Effects[j].String())
			}
		}
		if !slices.Equal(got, w.lines) {
			t.Fatalf("replay diverged")
		}
	})
}
