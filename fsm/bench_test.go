package fsm

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

// BenchmarkMuxStep measures one Step of the command-slot machine on a recovery cycle: loss,
// scheduled attempt, timer, dial failure, notice, timer, success. Reported per event.
func BenchmarkMuxStep(b *testing.B) {
	m := NewMux(MuxConfig{Slots: 4, Policy: &Policy{InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second, JitterRatio: 0.2}})
	var out Outbox
	out.Effects = make([]Effect, 0, 64)
	errReset := errors.New("reset")
	step := func(ev Event) {
		out.Reset()
		m.Step(&ev, &out)
	}
	last := func(kind EffectKind) Effect {
		for i := len(out.Effects) - 1; i >= 0; i-- {
			if out.Effects[i].Kind == kind {
				return out.Effects[i]
			}
		}
		b.Fatalf("no %v effect in %v", kind, out.Effects)
		return Effect{}
	}
	step(Event{Kind: Demanded, Waiter: 1, Need: NeedAll})
	conns := make([]ConnID, 0, 4)
	for _, f := range out.Effects {
		if f.Kind == Dial {
			conns = append(conns, f.Conn)
		}
	}
	for _, c := range conns {
		step(Event{Kind: HandshakeDone, Conn: c})
	}
	conn := conns[0]
	b.ReportAllocs()
	b.ResetTimer()
	const eventsPerCycle = 7
	for i := 0; i < b.N; i += eventsPerCycle {
		step(Event{Kind: ConnLost, Conn: conn, Err: errReset, Draw: 0.3})
		timer := last(ArmTimer).Timer
		step(Event{Kind: TimerFired, Timer: timer})
		conn = last(Dial).Conn
		step(Event{Kind: DialFailed, Conn: conn, Err: errReset})
		step(Event{Kind: Noticed, Slot: 0, Draw: 0.6})
		timer = last(ArmTimer).Timer
		step(Event{Kind: TimerFired, Timer: timer})
		conn = last(Dial).Conn
		step(Event{Kind: DialSucceeded, Conn: conn})
		step(Event{Kind: HandshakeDone, Conn: conn})
	}
}

// BenchmarkMuxDemandGranted measures the slow-path demand of a caller that found no ready
// connection in a stale snapshot while one is ready.
func BenchmarkMuxDemandGranted(b *testing.B) {
	m := NewMux(MuxConfig{Slots: 4})
	var out Outbox
	ev := Event{Kind: Demanded, Waiter: 1, Need: NeedAll}
	m.Step(&ev, &out)
	for _, f := range out.Effects {
		if f.Kind == Dial {
			e := Event{Kind: HandshakeDone, Conn: f.Conn}
			var o Outbox
			m.Step(&e, &o)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out.Reset()
		ev := Event{Kind: Demanded, Waiter: WaiterID(i + 2)}
		m.Step(&ev, &out)
	}
}

// benchPolicy is the policy of the per-kind step benchmarks: jittered, capped, unlimited.
var benchPolicy = &Policy{InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second, JitterRatio: 0.2}

// stepBatch is how many prepared machines the per-kind benchmarks step in one timed stretch: few
// enough to stay in cache, as a long-lived machine is.
const stepBatch = 64

// heapAllocs returns the number of heap objects allocated so far by the process. ReadMemStats
// stops the world, so it is called only outside the timed stretches; unlike the runtime/metrics
// counter, which is updated a span at a time, it is exact.
func heapAllocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// benchStepKind measures one kind of Mux step in isolation. prepare brings a machine to the state
// just before the step and returns the event; it runs untimed, stepBatch machines at a time, and
// warms the machine first so that its slices have the capacity a long-lived machine has. Only the
// steps themselves are timed: the ns/step and allocs/step metrics are per step of that kind
// (ns/op also counts the preparation).
func benchStepKind(b *testing.B, prepare func(b *testing.B, m *Mux, out *Outbox) Event) {
	machines := make([]*Mux, stepBatch)
	events := make([]Event, stepBatch)
	var out Outbox
	out.Effects = make([]Effect, 0, 64)
	var elapsed time.Duration
	var allocs uint64
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(stepBatch, b.N-done)
		for i := range n {
			machines[i] = warmMux(&out)
			events[i] = prepare(b, machines[i], &out)
		}
		a0 := heapAllocs()
		t0 := time.Now()
		for i := range n {
			out.Reset()
			machines[i].Step(&events[i], &out)
		}
		elapsed += time.Since(t0)
		allocs += heapAllocs() - a0
		done += n
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/step")
	b.ReportMetric(float64(allocs)/float64(b.N), "allocs/step")
}

// warmMux returns a 4-slot machine whose waiter list has grown as a long-lived machine's has, and
// whose slots await use again: every initial attempt of a first demand failed, the demand with
// it, and the slots' rests are over.
func warmMux(out *Outbox) *Mux {
	m := NewMux(MuxConfig{Slots: 4, Policy: benchPolicy})
	conns := dialsOf(stepTo(m, out, Event{Kind: Demanded, Waiter: 100, Need: NeedAll}))
	for w := WaiterID(101); w < 104; w++ {
		stepTo(m, out, Event{Kind: Demanded, Waiter: w, Need: NeedAny})
	}
	for w := WaiterID(101); w < 104; w++ {
		stepTo(m, out, Event{Kind: Withdrew, Waiter: w})
	}
	var rests [4]TimerID
	for i, c := range conns {
		for _, f := range stepTo(m, out, Event{Kind: DialFailed, Conn: c, Err: errBench}) {
			if f.Kind == ArmTimer {
				rests[i] = f.Timer
			}
		}
	}
	for _, timer := range rests {
		stepTo(m, out, Event{Kind: TimerFired, Timer: timer})
	}
	return m
}

// stepTo steps ev into m and returns the effects it produced (in out).
func stepTo(m *Mux, out *Outbox, ev Event) []Effect {
	out.Reset()
	m.Step(&ev, out)
	return out.Effects
}

// lastOf returns the last effect of kind in effects.
func lastOf(b *testing.B, effects []Effect, kind EffectKind) Effect {
	for i := len(effects) - 1; i >= 0; i-- {
		if effects[i].Kind == kind {
			return effects[i]
		}
	}
	b.Fatalf("no %v effect in %v", kind, effects)
	return Effect{}
}

// dialsOf returns the connections dialed in effects, in order.
func dialsOf(effects []Effect) []ConnID {
	var conns []ConnID
	for _, f := range effects {
		if f.Kind == Dial {
			conns = append(conns, f.Conn)
		}
	}
	return conns
}

// connecting demands every slot (waiter 1) and returns the connections being dialed.
func connecting(m *Mux, out *Outbox) []ConnID {
	return dialsOf(stepTo(m, out, Event{Kind: Demanded, Waiter: 1, Need: NeedAll}))
}

// allReady connects every slot and returns their connections.
func allReady(m *Mux, out *Outbox) []ConnID {
	conns := connecting(m, out)
	for _, c := range conns {
		stepTo(m, out, Event{Kind: HandshakeDone, Conn: c})
	}
	return conns
}

// errBench is the connection error of the step benchmarks.
var errBench = errors.New("connection reset by peer")

// BenchmarkMuxStepKind measures every kind of step of the command-slot machine, one
// sub-benchmark per event kind and outcome, on a 4-slot machine with a jittered policy. Target:
// at most 300 ns and 0 allocations per step.
func BenchmarkMuxStepKind(b *testing.B) {
	cases := []struct {
		name    string
		prepare func(b *testing.B, m *Mux, out *Outbox) Event
	}{
		{"demanded-granted", func(b *testing.B, m *Mux, out *Outbox) Event {
			allReady(m, out)
			return Event{Kind: Demanded, Waiter: 2, Need: NeedAny}
		}},
		{"demanded-connect", func(b *testing.B, m *Mux, out *Outbox) Event {
			return Event{Kind: Demanded, Waiter: 1, Need: NeedAll, Draw: 0.4}
		}},
		{"demanded-retry", func(b *testing.B, m *Mux, out *Outbox) Event {
			// Every slot awaits use and nothing is in progress: the demand retries one slot.
			return Event{Kind: Demanded, Waiter: 2, Need: NeedAny, Draw: 0.4}
		}},
		{"demanded-queued", func(b *testing.B, m *Mux, out *Outbox) Event {
			connecting(m, out)
			return Event{Kind: Demanded, Waiter: 2, Need: NeedAny}
		}},
		{"noticed", func(b *testing.B, m *Mux, out *Outbox) Event {
			conns := allReady(m, out)
			timer := lastOf(b, stepTo(m, out, Event{Kind: ConnLost, Conn: conns[0], Err: errBench, Draw: 0.3}), ArmTimer).Timer
			conn := lastOf(b, stepTo(m, out, Event{Kind: TimerFired, Timer: timer}), Dial).Conn
			stepTo(m, out, Event{Kind: DialFailed, Conn: conn, Err: errBench})
			return Event{Kind: Noticed, Slot: 0, Draw: 0.6}
		}},
		{"withdrew", func(b *testing.B, m *Mux, out *Outbox) Event {
			connecting(m, out)
			return Event{Kind: Withdrew, Waiter: 1}
		}},
		{"dial-succeeded", func(b *testing.B, m *Mux, out *Outbox) Event {
			return Event{Kind: DialSucceeded, Conn: connecting(m, out)[0]}
		}},
		{"handshake-done", func(b *testing.B, m *Mux, out *Outbox) Event {
			conns := connecting(m, out)
			for _, c := range conns[1:] {
				stepTo(m, out, Event{Kind: HandshakeDone, Conn: c})
			}
			return Event{Kind: HandshakeDone, Conn: conns[0]}
		}},
		{"dial-failed", func(b *testing.B, m *Mux, out *Outbox) Event {
			conns := allReady(m, out)
			timer := lastOf(b, stepTo(m, out, Event{Kind: ConnLost, Conn: conns[0], Err: errBench, Draw: 0.3}), ArmTimer).Timer
			conn := lastOf(b, stepTo(m, out, Event{Kind: TimerFired, Timer: timer}), Dial).Conn
			return Event{Kind: DialFailed, Conn: conn, Err: errBench}
		}},
		{"conn-lost", func(b *testing.B, m *Mux, out *Outbox) Event {
			return Event{Kind: ConnLost, Conn: allReady(m, out)[0], Err: errBench, Draw: 0.3}
		}},
		{"timer-fired", func(b *testing.B, m *Mux, out *Outbox) Event {
			conns := allReady(m, out)
			timer := lastOf(b, stepTo(m, out, Event{Kind: ConnLost, Conn: conns[0], Err: errBench, Draw: 0.3}), ArmTimer).Timer
			return Event{Kind: TimerFired, Timer: timer}
		}},
		{"timer-fired-rest", func(b *testing.B, m *Mux, out *Outbox) Event {
			// A failed initial attempt rests its slot; the rest's end reopens it to use.
			conns := connecting(m, out)
			timer := lastOf(b, stepTo(m, out, Event{Kind: DialFailed, Conn: conns[0], Err: errBench}), ArmTimer).Timer
			return Event{Kind: TimerFired, Timer: timer}
		}},
		{"retired", func(b *testing.B, m *Mux, out *Outbox) Event {
			allReady(m, out)
			return Event{Kind: Retired}
		}},
		{"disposed", func(b *testing.B, m *Mux, out *Outbox) Event {
			connecting(m, out)
			return Event{Kind: Disposed}
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) { benchStepKind(b, c.prepare) })
	}
}

// BenchmarkPolicyDelay measures the policy's delay arithmetic for one attempt (jitter and cap).
func BenchmarkPolicyDelay(b *testing.B) {
	var sink time.Duration
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		sink += benchPolicy.Delay(1+i%8, float64(i%1000)/1000)
	}
	if sink < 0 {
		b.Fatal(sink)
	}
}
