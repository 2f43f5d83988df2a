package scenario

import (
	"math/rand/v2"
	"reflect"
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
	sc.applyClusterDefaults()
	sc.applySentinelDefaults()
	sc.applyClientDefaults()
	if l := sc.Expect.Liveness; l != nil && l.From == "" {
		l.From = LivenessFromHeal
	}
	for i := range sc.Faults {
		if b := sc.Faults[i].Blackhole; b != nil && b.Direction == "" {
			b.Direction = DirectionBoth
		}
	}
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
			if sc.IsCluster() {
				w.Mix = Mix{Get: 50, Set: 35, Del: 5, Incr: 10}
			}
		}
		if w.Stop == 0 {
			w.Stop = sc.Duration
		}
	}
	sc.applyDedicatedDefaults()
	sc.applyPubSubDefaults()
	sc.applyBatchDefaults()
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
	if len(out.Vary) > 0 {
		out.resolveVary(seed)
		out.applyDefaults()
		if err := out.Validate(); err != nil {
			return nil, err
		}
	}
	if !out.repeats() {
		for i := range out.Faults {
			resolveFault(&out.Faults[i], stream.New(seed, stream.Faults, uint64(i)), -1)
		}
		return out, nil
	}
	// Repeated faults expand into one entry per start. Repetition k of entry i draws from stream
	// i | k<<32 (repetition 0 from stream i, as an entry that does not repeat).
	var faults []Fault
	for i := range out.Faults {
		base := out.Faults[i]
		first := base.clone()
		p := stream.New(seed, stream.Faults, uint64(i))
		resolveFault(&first, p, -1)
		if base.Every == nil {
			faults = append(faults, first)
			continue
		}
		every := base.Every.resolve(stream.Unit(p)).Value()
		first.Every, first.Count = nil, 0
		faults = append(faults, first)
		for k := 1; base.Count == 0 || k < base.Count; k++ {
			at := first.At.Value() + time.Duration(k)*every
			if at >= out.Duration {
				break
			}
			rep := base.clone()
			rep.Every, rep.Count = nil, 0
			resolveFault(&rep, stream.New(seed, stream.Faults, uint64(i)|uint64(k)<<32), at)
			faults = append(faults, rep)
		}
	}
	out.Faults = faults
	return out, nil
}

// repeats reports whether a fault of sc has Every.
func (sc *Scenario) repeats() bool {
	for i := range sc.Faults {
		if sc.Faults[i].Every != nil {
			return true
		}
	}
	return false
}

// clone returns a deep copy of f.
func (f *Fault) clone() Fault {
	var out Fault
	deepCopy(reflect.ValueOf(&out).Elem(), reflect.ValueOf(f).Elem())
	return out
}

// resolveFault fixes the ranges of f with draws from p; at, when not negative, replaces the
// drawn start (a repetition starts at its cycle's time). Every fault draws the same fields in the
// same order, whether or not they are ranges.
func resolveFault(f *Fault, p *rand.PCG, at time.Duration) {
	f.At = f.At.resolve(stream.Unit(p))
	if at >= 0 {
		f.At = At(at)
	}
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
	case f.CommandError != nil:
		fix(f.CommandError.For, forDraw)
	case f.SlowReply != nil:
		fix(f.SlowReply.For, forDraw)
		f.SlowReply.Extra = f.SlowReply.Extra.resolve(extraDraw)
	case f.MalformedReply != nil:
		fix(f.MalformedReply.For, forDraw)
	case f.Push != nil:
		fix(f.Push.For, forDraw)
		f.Push.Every = f.Push.Every.resolve(extraDraw)
	case f.Cluster != nil:
		f.Cluster.resolve(forDraw, afterDraw)
	}
}

// Clone returns a deep copy of sc: nothing of the copy, down to its slices and pointed-to values,
// is shared with sc.
func (sc *Scenario) Clone() *Scenario {
	out := new(Scenario)
	deepCopy(reflect.ValueOf(out).Elem(), reflect.ValueOf(sc).Elem())
	return out
}

// deepCopy copies src into dst, which has its type, allocating every pointer and slice anew (nil
// stays nil). A scenario is plain data: structs, pointers, slices and scalars.
func deepCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if !src.IsNil() {
			dst.Set(reflect.New(src.Type().Elem()))
			deepCopy(dst.Elem(), src.Elem())
		}
	case reflect.Slice:
		if !src.IsNil() {
			dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
			for i := range src.Len() {
				deepCopy(dst.Index(i), src.Index(i))
			}
		}
	case reflect.Struct:
		for i := range src.NumField() {
			deepCopy(dst.Field(i), src.Field(i))
		}
	case reflect.Map, reflect.Interface, reflect.Chan, reflect.Func:
		panic("scenario: Clone of a " + src.Kind().String())
	default:
		dst.Set(src)
	}
}
