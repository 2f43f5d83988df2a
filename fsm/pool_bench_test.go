package fsm

import (
	"errors"
	"testing"
	"time"
)

// poolBench drives one Pool through benchmark cycles, reporting per event.
type poolBench struct {
	b   *testing.B
	p   *Pool
	out Outbox
}

func newPoolBench(b *testing.B, cfg PoolConfig) *poolBench {
	pb := &poolBench{b: b, p: NewPool(cfg)}
	pb.out.Effects = make([]Effect, 0, 64)
	return pb
}

func (pb *poolBench) step(ev Event) {
	pb.out.Reset()
	pb.p.Step(&ev, &pb.out)
}

func (pb *poolBench) last(kind EffectKind) Effect {
	for i := len(pb.out.Effects) - 1; i >= 0; i-- {
		if pb.out.Effects[i].Kind == kind {
			return pb.out.Effects[i]
		}
	}
	pb.b.Fatalf("no %v effect in %v", kind, pb.out.Effects)
	return Effect{}
}

// BenchmarkPoolRentIdle measures the common dedicated path: a rent served by an idle connection
// and its healthy return. Reported per event (two per cycle). Target: 0 allocs, ≤300 ns.
func BenchmarkPoolRentIdle(b *testing.B) {
	pb := newPoolBench(b, PoolConfig{MaximumIdle: 4, IDBase: IDBase(MachinePool)})
	// Warm up: one connection becomes idle.
	pb.step(Event{Kind: Demanded, Waiter: 1})
	conn := pb.last(Dial).Conn
	pb.step(Event{Kind: HandshakeDone, Conn: conn})
	pb.step(Event{Kind: Returned, Conn: conn, Healthy: true})
	b.ReportAllocs()
	b.ResetTimer()
	const eventsPerCycle = 2
	for i := 0; i < b.N; i += eventsPerCycle {
		pb.step(Event{Kind: Demanded, Waiter: WaiterID(i + 2), At: time.Duration(i)})
		pb.step(Event{Kind: Returned, Conn: conn, Healthy: true, At: time.Duration(i)})
	}
}

// BenchmarkPoolRentRecovery measures a rent's retry episode under a policy: immediate attempt,
// failure, scheduled retry, timer, second failure, timer, success, then an unhealthy return that
// closes the connection. Reported per event (seven per cycle). Target: 0 allocs, ≤300 ns.
func BenchmarkPoolRentRecovery(b *testing.B) {
	pb := newPoolBench(b, PoolConfig{MaximumIdle: 4, MaximumSize: 8, IDBase: IDBase(MachinePool),
		Policy: &Policy{InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second, JitterRatio: 0.2, MaxAttempts: 5}})
	errRefused := errors.New("refused")
	b.ReportAllocs()
	b.ResetTimer()
	const eventsPerCycle = 7
	for i := 0; i < b.N; i += eventsPerCycle {
		pb.step(Event{Kind: Demanded, Waiter: WaiterID(i + 1)})
		conn := pb.last(Dial).Conn
		pb.step(Event{Kind: DialFailed, Conn: conn, Err: errRefused, Draw: 0.3})
		pb.step(Event{Kind: TimerFired, Timer: pb.last(ArmTimer).Timer})
		conn = pb.last(Dial).Conn
		pb.step(Event{Kind: DialFailed, Conn: conn, Err: errRefused, Draw: 0.7})
		pb.step(Event{Kind: TimerFired, Timer: pb.last(ArmTimer).Timer})
		conn = pb.last(Dial).Conn
		pb.step(Event{Kind: HandshakeDone, Conn: conn})
		pb.step(Event{Kind: Returned, Conn: conn})
	}
}

// BenchmarkPoolContention measures rents at MaximumSize: four connections rented, a fifth rent
// waits, a return hands the connection straight to it. Reported per event (two per cycle).
func BenchmarkPoolContention(b *testing.B) {
	pb := newPoolBench(b, PoolConfig{MaximumIdle: 4, MaximumSize: 4, IDBase: IDBase(MachinePool)})
	var conns [4]ConnID
	for i := range conns {
		pb.step(Event{Kind: Demanded, Waiter: WaiterID(i + 1)})
		conns[i] = pb.last(Dial).Conn
		pb.step(Event{Kind: HandshakeDone, Conn: conns[i]})
	}
	b.ReportAllocs()
	b.ResetTimer()
	const eventsPerCycle = 2
	for i := 0; i < b.N; i += eventsPerCycle {
		pb.step(Event{Kind: Demanded, Waiter: WaiterID(i + 10)})
		pb.step(Event{Kind: Returned, Conn: conns[(i/eventsPerCycle)%4], Healthy: true})
	}
}
