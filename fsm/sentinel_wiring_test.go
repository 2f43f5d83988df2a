package fsm

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// sentinelRuntime wires a Resolution and a Monitor the way docs/sentinel.md says an engine will,
// over a small simulated world of Sentinels and data nodes in virtual time:
//
//   - connection and timer events go to the machine their identifier names (MachineOf);
//   - a Publish effect becomes a Published event for the monitor, with the same payload;
//   - a Rediscover effect becomes a RediscoveryRequested event for the resolution;
//   - a Query is answered from the Sentinel's view (or the node's role), a Subscribe with one
//     acknowledgement per channel, and a Sentinel announces a failover to its subscribers.
type sentinelRuntime struct {
	t   *testing.T
	res *Resolution
	mon *Monitor
	now time.Duration

	queue  []Event
	timers map[TimerID]time.Duration

	sentinels map[Endpoint]*simSentinel
	order     []Endpoint
	nodes     map[Endpoint]Role // running data nodes
	conns     map[ConnID]Endpoint

	published []SentinelData
	retired   []uint64
	requests  []time.Duration
	dials     map[Endpoint]int
	byMachine map[Machine]int
	outcomes  map[WaiterID]Outcome
}

type simSentinel struct {
	up          bool
	primary     Endpoint
	epoch       uint64
	subscribers []ConnID
}

func newSentinelRuntime(t *testing.T, policy *Policy, primary Endpoint, replicas []Endpoint, sentinels ...Endpoint) *sentinelRuntime {
	rt := &sentinelRuntime{t: t, timers: map[TimerID]time.Duration{}, sentinels: map[Endpoint]*simSentinel{},
		nodes: map[Endpoint]Role{primary: RolePrimary}, conns: map[ConnID]Endpoint{}, dials: map[Endpoint]int{},
		outcomes: map[WaiterID]Outcome{}, order: sentinels, byMachine: map[Machine]int{}}
	for _, r := range replicas {
		rt.nodes[r] = RoleReplica
	}
	for _, s := range sentinels {
		rt.sentinels[s] = &simSentinel{up: true, primary: primary}
	}
	rt.res = NewResolution(ResolutionConfig{Sentinels: sentinels, Policy: policy, IDBase: IDBase(MachineSentinel)})
	rt.mon = NewMonitor(MonitorConfig{Sentinels: sentinels, PrimaryName: "mymaster", Policy: policy, IDBase: IDBase(MachineSentinelMonitor)})
	return rt
}

func (rt *sentinelRuntime) post(ev Event) { rt.queue = append(rt.queue, ev) }

// machineFor routes an event: by its connection or timer, else by its Machine.
func machineFor(ev *Event) Machine {
	switch {
	case ev.Conn != 0:
		return MachineOf(uint64(ev.Conn))
	case ev.Timer != 0:
		return MachineOf(uint64(ev.Timer))
	}
	return ev.Machine
}

// run steps queued events and fires due timers until virtual time until.
func (rt *sentinelRuntime) run(until time.Duration) {
	var out Outbox
	for {
		if len(rt.queue) == 0 {
			var next TimerID
			for id, due := range rt.timers {
				if due <= until && (next == 0 || due < rt.timers[next] || due == rt.timers[next] && id < next) {
					next = id
				}
			}
			if next == 0 {
				rt.now = max(rt.now, until)
				return
			}
			rt.now = max(rt.now, rt.timers[next])
			delete(rt.timers, next)
			rt.post(Event{Kind: TimerFired, Timer: next})
		}
		ev := rt.queue[0]
		rt.queue = rt.queue[1:]
		ev.At, ev.Draw = rt.now, 0.5
		out.Reset()
		if machineFor(&ev) == MachineSentinelMonitor {
			rt.mon.Step(&ev, &out)
		} else {
			rt.res.Step(&ev, &out)
		}
		for i := range out.Effects {
			rt.execute(&out.Effects[i])
		}
	}
}

func (rt *sentinelRuntime) execute(f *Effect) {
	switch f.Kind {
	case Dial:
		rt.dials[f.Endpoint]++
		rt.byMachine[MachineOf(uint64(f.Conn))]++
		rt.conns[f.Conn] = f.Endpoint
		s, isSentinel := rt.sentinels[f.Endpoint]
		_, isNode := rt.nodes[f.Endpoint]
		if isSentinel && s.up || isNode {
			rt.post(Event{Kind: HandshakeDone, Conn: f.Conn})
		} else {
			rt.post(Event{Kind: DialFailed, Conn: f.Conn, Err: errors.New("refused")})
		}
	case Query:
		ep := rt.conns[f.Conn]
		d := &SentinelData{Query: f.Sentinel.Query}
		s := rt.sentinels[ep]
		switch {
		case f.Sentinel.Query == SentinelQueryRole:
			d.Role = rt.nodes[ep]
		case s == nil || !s.up:
			rt.post(Event{Kind: ConnLost, Conn: f.Conn, Err: errors.New("reset")})
			return
		case f.Sentinel.Query == SentinelQueryPrimary:
			d.Primary, d.Epoch, d.EpochKnown = s.primary, s.epoch, true
		case f.Sentinel.Query == SentinelQueryPeers:
			for _, o := range rt.order {
				if o != ep {
					d.Peers = append(d.Peers, o)
				}
			}
		}
		rt.post(Event{Kind: Answered, Conn: f.Conn, Sentinel: d})
	case Subscribe:
		s := rt.sentinels[rt.conns[f.Conn]]
		s.subscribers = append(s.subscribers, f.Conn)
		for _, tp := range f.Topics {
			rt.post(Event{Kind: Acked, Conn: f.Conn, Topic: tp})
		}
	case Close:
		if s := rt.sentinels[rt.conns[f.Conn]]; s != nil {
			s.subscribers = slices.DeleteFunc(s.subscribers, func(c ConnID) bool { return c == f.Conn })
		}
	case ArmTimer:
		rt.timers[f.Timer] = rt.now + f.After
	case CancelTimer:
		delete(rt.timers, f.Timer)
	case Publish:
		rt.published = append(rt.published, *f.Sentinel)
		rt.post(Event{Kind: Published, Machine: MachineSentinelMonitor, Sentinel: f.Sentinel})
	case Rediscover:
		rt.requests = append(rt.requests, rt.now)
		rt.post(Event{Kind: RediscoveryRequested, Machine: MachineSentinel, Sentinel: f.Sentinel})
	case Retire:
		rt.retired = append(rt.retired, f.Sentinel.Generation)
	case Complete:
		rt.outcomes[f.Waiter] = f.Outcome
	}
}

// kill stops a Sentinel (its subscribers lose their connection) or a data node.
func (rt *sentinelRuntime) kill(ep Endpoint) {
	if s := rt.sentinels[ep]; s != nil {
		s.up = false
		for _, c := range s.subscribers {
			rt.post(Event{Kind: ConnLost, Conn: c, Err: errors.New("reset")})
		}
		s.subscribers = nil
	}
	delete(rt.nodes, ep)
}

// failover makes to the primary under epoch in the view of every running Sentinel, each of
// which announces it to its subscribers.
func (rt *sentinelRuntime) failover(from, to Endpoint, epoch uint64) {
	if _, ok := rt.nodes[from]; ok {
		rt.nodes[from] = RoleReplica
	}
	rt.nodes[to] = RolePrimary
	for _, ep := range rt.order {
		s := rt.sentinels[ep]
		if !s.up {
			continue
		}
		s.primary, s.epoch = to, epoch
		for _, c := range s.subscribers {
			rt.post(Event{Kind: Notified, Conn: c, Sentinel: &SentinelData{Message: SentinelMessage{
				Kind: MessageSwitchPrimary, Instance: InstancePrimary, Primary: "mymaster", Old: from, Addr: to}}})
		}
	}
}

// TestSentinelFailoverFoundByAnotherMonitor is rueidis #1016 with respire's machines: the
// Sentinel co-located with the old primary dies with it, and the failover is still found,
// without any command, through another Sentinel's +switch-master.
func TestSentinelFailoverFoundByAnotherMonitor(t *testing.T) {
	A, B, C := ep(1), ep(2), ep(3)
	P1, P2 := primaryEP(1), primaryEP(2)
	rt := newSentinelRuntime(t, nil, P1, []Endpoint{P2}, A, B, C)
	rt.post(Event{Kind: Demanded, Machine: MachineSentinel, Waiter: 1})
	rt.run(time.Second)
	if rt.outcomes[1] != OutcomeGranted || len(rt.published) != 1 {
		t.Fatalf("initial resolution: %v, %d publications", rt.outcomes, len(rt.published))
	}
	if eps, phases := rt.mon.Watches(); len(eps) != 3 || !slices.Equal(phases, []string{"ready", "ready", "ready"}) {
		t.Fatalf("monitors %v %v", eps, phases)
	}
	rt.kill(A)
	rt.kill(P1)
	rt.run(10 * time.Second)
	rt.failover(P1, P2, 1)
	rt.run(12 * time.Second)
	if len(rt.requests) == 0 {
		t.Fatal("no rediscovery was asked for")
	}
	// The rediscovery validates P2 under epoch 1 as generation 2 and retires generation 1; the
	// follow-up for the requests that arrived meanwhile confirms it.
	failover := rt.published[1]
	if failover.Primary != P2 || failover.Generation != 2 || !failover.Changed || failover.Epoch != 1 || !slices.Equal(rt.retired, []uint64{1}) {
		t.Fatalf("after the failover: %+v, retired %v", failover, rt.retired)
	}
	for _, p := range rt.published[2:] {
		if p.Primary != P2 || p.Generation != 2 || p.Changed {
			t.Fatalf("a later publication: %+v", p)
		}
	}
	if p, g, live := rt.res.Primary(); p != P2 || g != 2 || !live {
		t.Fatalf("primary %v generation %d live %v", p, g, live)
	}
	// The old primary was never validated again, and the dead Sentinel's monitor retries on the
	// no-policy schedule, not in a loop: at most one dial per rest (250 ms doubling to 5 s).
	if n := rt.dials[A]; n > 12 {
		t.Fatalf("%d dials to the dead Sentinel in 12 s", n)
	}
}

// TestSentinelAllDownNoSpin is rueidis #1017 with respire's machines: every Sentinel and the
// primary go down while the application keeps asking, every 10 ms, for a minute. Resolutions
// and monitors back off instead of spinning; when everything returns, the primary is found
// again through a monitor's reconnect, without waiting for the application.
func TestSentinelAllDownNoSpin(t *testing.T) {
	A, B, C := ep(1), ep(2), ep(3)
	P1 := primaryEP(1)
	for _, policy := range []*Policy{nil, {InitialDelay: 100 * time.Millisecond, MaxDelay: 2 * time.Second}} {
		rt := newSentinelRuntime(t, policy, P1, nil, A, B, C)
		rt.post(Event{Kind: Demanded, Machine: MachineSentinel, Waiter: 1})
		rt.run(time.Second)
		for _, e := range []Endpoint{A, B, C, P1} {
			rt.kill(e)
		}
		rt.post(Event{Kind: PrimaryFailed, Machine: MachineSentinel, Sentinel: &SentinelData{Generation: 1}, Err: errors.New("reset")})
		clear(rt.byMachine)
		w := WaiterID(2)
		for at := time.Second; at < 61*time.Second; at += 10 * time.Millisecond {
			rt.post(Event{Kind: Demanded, Machine: MachineSentinel, Waiter: w})
			w++
			rt.run(at)
		}
		// 6000 callers; without spacing, 18000 dials. The rests (at most 5 s) allow about 18
		// resolutions of 3 candidates; each monitor retries at most once per 5 s without a
		// policy, or per the policy's 2 s cap.
		monitorWait := 5 * time.Second
		if policy != nil {
			monitorWait = policy.MaxDelay
		}
		if n := rt.byMachine[MachineSentinel]; n > 3*(60/5+6) {
			t.Fatalf("policy %v: %d resolution dials in a minute with everything down", policy, n)
		}
		if n := rt.byMachine[MachineSentinelMonitor]; n > 3*(int(time.Minute/monitorWait)+6) {
			t.Fatalf("policy %v: %d monitor dials in a minute with everything down", policy, n)
		}
		for id := WaiterID(2); id < w; id++ {
			if o := rt.outcomes[id]; o != OutcomeFailed && o != OutcomeExhausted {
				t.Fatalf("policy %v: caller %d got %v", policy, id, o)
			}
		}
		// Everything returns: a monitor's reconnect asks for a rediscovery, which validates the
		// primary again as a new generation.
		for _, e := range []Endpoint{A, B, C} {
			rt.sentinels[e].up = true
		}
		rt.nodes[P1] = RolePrimary
		rt.run(70 * time.Second)
		if p, g, live := rt.res.Primary(); p != P1 || g != 2 || !live {
			t.Fatalf("policy %v: after recovery: primary %v generation %d live %v", policy, p, g, live)
		}
		for i := 1; i < len(rt.requests); i++ {
			if rt.requests[i]-rt.requests[i-1] < RediscoveryInterval {
				t.Fatalf("rediscoveries at %v", rt.requests)
			}
		}
	}
}
