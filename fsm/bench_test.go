package fsm

import (
	"errors"
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
