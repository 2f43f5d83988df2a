package fsm

import (
	"errors"
	"testing"
	"time"
)

// BenchmarkMuxLifetimeStep measures one Step of the command-slot machine on a lifetime recycle
// cycle of four slots: the deadline fires, the replacement is refused, the retry timer fires, the
// replacement dials, finishes its handshake and is published. Reported per event.
func BenchmarkMuxLifetimeStep(b *testing.B) {
	m := NewMux(MuxConfig{Slots: 4, Lifetime: 30 * time.Minute, LifetimeJitter: 5 * time.Minute})
	var out Outbox
	out.Effects = make([]Effect, 0, 64)
	errRefused := errors.New("refused")
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
	var conns []ConnID
	for _, f := range out.Effects {
		if f.Kind == Dial {
			conns = append(conns, f.Conn)
		}
	}
	timers := make([]TimerID, 0, 4)
	for _, c := range conns {
		step(Event{Kind: HandshakeDone, Conn: c, Draw: 0.5})
		timers = append(timers, last(ArmTimer).Timer)
	}
	b.ReportAllocs()
	b.ResetTimer()
	const eventsPerCycle = 5
	for i := 0; i < b.N; i += eventsPerCycle {
		k := (i / eventsPerCycle) % len(timers)
		step(Event{Kind: TimerFired, Timer: timers[k]})
		conn := last(Dial).Conn
		step(Event{Kind: DialFailed, Conn: conn, Err: errRefused, Draw: 0.3})
		step(Event{Kind: TimerFired, Timer: last(ArmTimer).Timer})
		conn = last(Dial).Conn
		step(Event{Kind: DialSucceeded, Conn: conn})
		step(Event{Kind: HandshakeDone, Conn: conn, Draw: 0.7})
		timers[k] = last(ArmTimer).Timer
	}
}
