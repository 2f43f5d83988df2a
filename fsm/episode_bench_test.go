package fsm

import (
	"errors"
	"testing"
	"time"
)

// BenchmarkEpisodeStep measures one Step of the pub/sub episode over a recovery cycle with a
// policy: loss, timer, failed dial, timer, connection, resubscription of four topics (four
// acknowledgements with their gap markers), reported per event.
func BenchmarkEpisodeStep(b *testing.B) {
	e := NewEpisode(EpisodeConfig{Machine: MachinePubSub, IDBase: IDBase(MachinePubSub),
		Policy: &Policy{InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second, JitterRatio: 0.2}})
	var out Outbox
	out.Effects = make([]Effect, 0, 64)
	errReset := errors.New("reset")
	topics := []Topic{{TopicChannel, "a"}, {TopicChannel, "b"}, {TopicPattern, "c.*"}, {TopicPattern, "d.*"}}
	step := func(ev Event) {
		out.Reset()
		e.Step(&ev, &out)
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
	step(Event{Kind: Demanded, Waiter: 1, Topics: topics})
	conn := last(Dial).Conn
	step(Event{Kind: HandshakeDone, Conn: conn})
	for _, t := range topics {
		step(Event{Kind: Acked, Conn: conn, Topic: t})
	}
	b.ReportAllocs()
	b.ResetTimer()
	const eventsPerCycle = 9
	for i := 0; i < b.N; i += eventsPerCycle {
		step(Event{Kind: ConnLost, Conn: conn, Err: errReset, Draw: 0.3})
		step(Event{Kind: TimerFired, Timer: last(ArmTimer).Timer})
		step(Event{Kind: DialFailed, Conn: last(Dial).Conn, Err: errReset, Draw: 0.6})
		step(Event{Kind: TimerFired, Timer: last(ArmTimer).Timer})
		conn = last(Dial).Conn
		step(Event{Kind: HandshakeDone, Conn: conn})
		for _, t := range topics {
			step(Event{Kind: Acked, Conn: conn, Topic: t})
		}
	}
}

// BenchmarkEpisodeDemandGranted measures a subscription demand for topics already acknowledged
// on the live connection (granted at once).
func BenchmarkEpisodeDemandGranted(b *testing.B) {
	e := NewEpisode(EpisodeConfig{Machine: MachineShardedPubSub, IDBase: IDBase(MachineShardedPubSub)})
	var out Outbox
	topics := []Topic{{TopicShard, "s1"}}
	ev := Event{Kind: Demanded, Waiter: 1, Topics: topics}
	e.Step(&ev, &out)
	conn := out.Effects[0].Conn
	for _, x := range []Event{{Kind: HandshakeDone, Conn: conn}, {Kind: Acked, Conn: conn, Topic: topics[0]}} {
		out.Reset()
		e.Step(&x, &out)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out.Reset()
		ev := Event{Kind: Demanded, Waiter: WaiterID(i + 2), Topics: topics}
		e.Step(&ev, &out)
	}
}
