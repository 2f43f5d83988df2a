package scenario

import (
	"time"

	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/sim/stream"
)

// applyDefaults fills in the documented defaults. It is idempotent.
func (sc *Scenario) applyDefaults() {
	if sc.Topology.Kind == "" {
		sc.Topology.Kind = TopologyStandalone
	}
	if len(sc.Topology.Nodes) == 0 {
		sc.Topology.Nodes = []NodeSpec{{ID: "r1"}}
	}
	if sc.Network.Latency == 0 {
		sc.Network.Latency = DefaultLatency
	}
	sc.applyClientDefaults()
	w := &sc.Workload
	if w.Callers > 0 {
		if w.Keys == 0 {
			w.Keys = 16
		}
		if w.Counters == 0 {
			w.Counters = 4
		}
		if w.Mix.total() == 0 && w.Mix == (Mix{}) {
			w.Mix = Mix{Get: 50, Set: 30, Del: 5, Incr: 10, MGet: 3, MSet: 2}
		}
		if w.Stop == 0 {
			w.Stop = sc.Duration
		}
	}
	sc.applyDedicatedDefaults()
	sc.applyPubSubDefaults()
}

// applyClientDefaults replaces the client section's zero values with the values in effect, from
// the resolver. An invalid section is left as it is, for Validate to report with the client's
// error: defaults never change which error a bad value gets.
func (sc *Scenario) applyClientDefaults() {
	c := &sc.Client
	if c.Connect == "" {
		c.Connect = ConnectEager
	}
	r, err := config.Resolve(c.options())
	if err != nil {
		return
	}
	c.setOptions(&r.Options)
}

// applyDedicatedDefaults fills in the dedicated workload's defaults.
func (sc *Scenario) applyDedicatedDefaults() {
	d := sc.Workload.Dedicated
	if d == nil {
		return
	}
	if d.Rate == 0 {
		d.Rate = 10
	}
	if d.Lists == 0 {
		d.Lists = 2
	}
	if d.Keys == 0 {
		d.Keys = 2
	}
	if d.Mix == (DedicatedMix{}) {
		d.Mix = DedicatedMix{BLPop: 40, Push: 40, Tx: 20}
	}
	if d.Block == nil {
		b := time.Second
		d.Block = &b
	}
	if d.Deadline == 0 {
		d.Deadline = *d.Block + sc.Client.CommandTimeout
	}
	if d.Stop == 0 {
		d.Stop = sc.Duration
	}
}

// applyPubSubDefaults fills in the pub/sub workload's defaults. It is idempotent.
func (sc *Scenario) applyPubSubDefaults() {
	ps := sc.Workload.PubSub
	if ps == nil {
		return
	}
	if ps.Buffer == 0 {
		ps.Buffer = 1024
	}
	for i := range ps.Subscribers {
		if ps.Subscribers[i].Kind == "" {
			ps.Subscribers[i].Kind = SubscribeChannel
		}
	}
	if p := ps.Publisher; p != nil && p.Stop == 0 {
		p.Stop = sc.Duration
	}
}

// Resolve returns a copy of sc for seed: defaults filled in, every range fixed with the seed's
// fault-resolution stream (one generator per fault, so faults resolve independently), Seed set to
// seed. Resolving a resolved scenario with the same seed changes nothing.
func (sc *Scenario) Resolve(seed uint64) (*Scenario, error) {
	out := sc.Clone()
	out.Seed = seed
	out.applyDefaults()
	if err := out.Validate(); err != nil {
		return nil, err
	}
	for i := range out.Faults {
		f := &out.Faults[i]
		p := stream.New(seed, stream.Faults, uint64(i))
		// Every fault draws the same fields in the same order, whether or not they are ranges.
		f.At = f.At.resolve(stream.Unit(p))
		forDraw, afterDraw, extraDraw, bytesDraw := stream.Unit(p), stream.Unit(p), stream.Unit(p), stream.Unit(p)
		fix := func(r *TimeRange, u float64) {
			if r != nil {
				*r = r.resolve(u)
			}
		}
		switch {
		case f.Refuse != nil:
			fix(f.Refuse.For, forDraw)
		case f.Blackhole != nil:
			fix(f.Blackhole.For, forDraw)
		case f.AcceptThenDrop != nil:
			fix(f.AcceptThenDrop.For, forDraw)
			fix(f.AcceptThenDrop.After, afterDraw)
		case f.DropAfterBytes != nil:
			f.DropAfterBytes.Bytes = f.DropAfterBytes.Bytes.resolve(bytesDraw)
		case f.Delay != nil:
			fix(f.Delay.For, forDraw)
			f.Delay.Extra = f.Delay.Extra.resolve(extraDraw)
		case f.Kill != nil:
			fix(f.Kill.RestartAfter, afterDraw)
		case f.HandshakeError != nil:
			fix(f.HandshakeError.For, forDraw)
		case f.Pause != nil:
			fix(f.Pause.For, forDraw)
		case f.SubscribeError != nil:
			fix(f.SubscribeError.For, forDraw)
		case f.Push != nil:
			fix(f.Push.For, forDraw)
			f.Push.Every = f.Push.Every.resolve(extraDraw)
		}
	}
	return out, nil
}

// Clone returns a deep copy of sc.
func (sc *Scenario) Clone() *Scenario {
	out := *sc
	out.Topology.Nodes = cloneSlice(sc.Topology.Nodes)
	if p := sc.Client.ReconnectPolicy; p != nil {
		cp := *p
		out.Client.ReconnectPolicy = &cp
	}
	if sc.Faults != nil {
		out.Faults = make([]Fault, len(sc.Faults))
		for i := range sc.Faults {
			out.Faults[i] = sc.Faults[i].clone()
		}
	}
	out.Plant = cloneSlice(sc.Plant)
	e := &out.Expect
	e.Invariants.Names = cloneSlice(sc.Expect.Invariants.Names)
	e.Fail = cloneSlice(sc.Expect.Fail)
	if sc.Expect.Events != nil {
		e.Events = make([]EventExpect, len(sc.Expect.Events))
		for i, ev := range sc.Expect.Events {
			ev.Attempts = cloneSlice(ev.Attempts)
			ev.Delays = cloneSlice(ev.Delays)
			ev.Exhausted = clonePtr(ev.Exhausted)
			e.Events[i] = ev
		}
	}
	if o := sc.Expect.Outcomes; o != nil {
		e.Outcomes = &OutcomeExpect{OK: o.OK.clone(), Failed: o.Failed.clone(), Unknown: o.Unknown.clone(),
			ReconnectLimit: o.ReconnectLimit.clone()}
	}
	e.Liveness = clonePtr(sc.Expect.Liveness)
	sc.cloneDedicated(&out)
	sc.clonePubSub(&out)
	return &out
}

func (b *Bounds) clone() *Bounds {
	if b == nil {
		return nil
	}
	return &Bounds{Min: clonePtr(b.Min), Max: clonePtr(b.Max)}
}

func (t Target) clone() Target {
	t.ClientSlot = clonePtr(t.ClientSlot)
	return t
}

func (f *Fault) clone() Fault {
	out := Fault{At: f.At}
	if x := f.Refuse; x != nil {
		out.Refuse = &WindowFault{Target: x.Target.clone(), For: clonePtr(x.For)}
	}
	if x := f.Blackhole; x != nil {
		out.Blackhole = &WindowFault{Target: x.Target.clone(), For: clonePtr(x.For)}
	}
	if x := f.AcceptThenDrop; x != nil {
		out.AcceptThenDrop = &AcceptThenDropFault{Target: x.Target.clone(), For: clonePtr(x.For), After: clonePtr(x.After)}
	}
	if x := f.Drop; x != nil {
		t := x.clone()
		out.Drop = &t
	}
	if x := f.DropAfterBytes; x != nil {
		out.DropAfterBytes = &DropAfterBytesFault{Target: x.Target.clone(), Bytes: x.Bytes}
	}
	if x := f.LoseReply; x != nil {
		t := x.clone()
		out.LoseReply = &t
	}
	if x := f.Delay; x != nil {
		out.Delay = &DelayFault{Target: x.Target.clone(), For: clonePtr(x.For), Extra: x.Extra}
	}
	if x := f.Kill; x != nil {
		out.Kill = &KillFault{Node: x.Node, RestartAfter: clonePtr(x.RestartAfter)}
	}
	if x := f.HandshakeError; x != nil {
		out.HandshakeError = &HandshakeErrorFault{Node: x.Node, For: clonePtr(x.For), Reply: x.Reply}
	}
	if x := f.Pause; x != nil {
		out.Pause = &PauseFault{Node: x.Node, For: clonePtr(x.For)}
	}
	out.SubscribeError = f.SubscribeError.clone()
	out.Push = f.Push.clone()
	return out
}

// cloneDedicated deep-copies the dedicated parts of sc into out.
func (sc *Scenario) cloneDedicated(out *Scenario) {
	out.Client.DedicatedPool = clonePtr(sc.Client.DedicatedPool)
	if d := sc.Workload.Dedicated; d != nil {
		cp := *d
		cp.Block = clonePtr(d.Block)
		out.Workload.Dedicated = &cp
	}
	if e := sc.Expect.Dedicated; e != nil {
		cp := DedicatedExpect{OK: e.OK.clone(), Timeout: e.Timeout.clone(), Conflict: e.Conflict.clone(), Error: e.Error.clone(),
			Failed: e.Failed.clone(), Unknown: e.Unknown.clone(), RentFailed: e.RentFailed.clone(), Exhausted: e.Exhausted.clone(),
			Cancelled: e.Cancelled.clone(), Closed: e.Closed.clone(), Retried: e.Retried.clone(),
			ConcurrentBackoff: e.ConcurrentBackoff.clone()}
		out.Expect.Dedicated = &cp
	}
}

// clonePubSub deep-copies the pub/sub parts of sc into out.
func (sc *Scenario) clonePubSub(out *Scenario) {
	if ps := sc.Workload.PubSub; ps != nil {
		cp := *ps
		cp.Subscribers = make([]SubscriberSpec, len(ps.Subscribers))
		for i, s := range ps.Subscribers {
			s.Topics = cloneSlice(s.Topics)
			cp.Subscribers[i] = s
		}
		if p := ps.Publisher; p != nil {
			pc := *p
			pc.Channels = cloneSlice(p.Channels)
			pc.ShardChannels = cloneSlice(p.ShardChannels)
			cp.Publisher = &pc
		}
		out.Workload.PubSub = &cp
	}
	if e := sc.Expect.PubSub; e != nil {
		cp := PubSubExpect{Regular: e.Regular.clone(), Sharded: e.Sharded.clone()}
		for _, s := range e.Subscribers {
			s.Outcomes = cloneSlice(s.Outcomes)
			s.Ends = cloneSlice(s.Ends)
			s.Messages = s.Messages.clone()
			s.Gaps = s.Gaps.clone()
			s.ReceivesAfter = clonePtr(s.ReceivesAfter)
			cp.Subscribers = append(cp.Subscribers, s)
		}
		out.Expect.PubSub = &cp
	}
}

func (e *EpisodeExpect) clone() *EpisodeExpect {
	if e == nil {
		return nil
	}
	return &EpisodeExpect{Attempts: cloneSlice(e.Attempts), Delays: cloneSlice(e.Delays), Exhausted: clonePtr(e.Exhausted),
		Dials: e.Dials.clone(), Recovered: e.Recovered.clone()}
}

func (f *SubscribeErrorFault) clone() *SubscribeErrorFault {
	if f == nil {
		return nil
	}
	return &SubscribeErrorFault{Node: f.Node, For: clonePtr(f.For), Kinds: cloneSlice(f.Kinds), Reply: f.Reply}
}

func (f *PushFault) clone() *PushFault {
	if f == nil {
		return nil
	}
	return &PushFault{Target: f.Target.clone(), For: clonePtr(f.For), Every: f.Every}
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
