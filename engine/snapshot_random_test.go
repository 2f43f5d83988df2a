package engine_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"pgregory.net/rapid"
)

// randomDriver plays the runtime's part for a standalone client's machines: it answers the dials
// and timers they ask for, and adds callers' demands, withdrawals, returns and unsubscriptions,
// in an order rapid draws.
type randomDriver struct {
	dialing, ready []fsm.ConnID
	timers         []fsm.TimerID
	waiters        []fsm.WaiterID
	nextWaiter     fsm.WaiterID
	at             time.Duration
}

func (d *randomDriver) observe(effects []fsm.Effect) {
	for i := range effects {
		f := &effects[i]
		switch f.Kind {
		case fsm.Dial:
			d.dialing = append(d.dialing, f.Conn)
		case fsm.ArmTimer:
			d.timers = append(d.timers, f.Timer)
		case fsm.CancelTimer:
			d.timers = slices.DeleteFunc(d.timers, func(t fsm.TimerID) bool { return t == f.Timer })
		case fsm.Close:
			d.ready = slices.DeleteFunc(d.ready, func(c fsm.ConnID) bool { return c == f.Conn })
			d.dialing = slices.DeleteFunc(d.dialing, func(c fsm.ConnID) bool { return c == f.Conn })
		case fsm.Complete:
			d.waiters = slices.DeleteFunc(d.waiters, func(w fsm.WaiterID) bool { return w == f.Waiter })
		}
	}
}

// take removes and returns a drawn element of *s.
func take[T any](t *rapid.T, s *[]T, label string) T {
	i := rapid.IntRange(0, len(*s)-1).Draw(t, label)
	v := (*s)[i]
	*s = slices.Delete(*s, i, i+1)
	return v
}

var randomTopics = []fsm.Topic{{Kind: fsm.TopicChannel, Name: "a"}, {Kind: fsm.TopicChannel, Name: "b"},
	{Kind: fsm.TopicPattern, Name: "c*"}, {Kind: fsm.TopicShard, Name: "d"}}

// next draws the next event.
func (d *randomDriver) next(t *rapid.T) fsm.Event {
	d.at += time.Duration(rapid.IntRange(0, 500).Draw(t, "advance")) * time.Millisecond
	ev := fsm.Event{At: d.at, Draw: rapid.Float64Range(0, 0.999).Draw(t, "draw")}
	machines := []fsm.Machine{fsm.MachineMux, fsm.MachinePool, fsm.MachinePubSub, fsm.MachineShardedPubSub}
	for {
		switch rapid.IntRange(0, 8).Draw(t, "action") {
		case 0, 1:
			d.nextWaiter++
			ev.Kind, ev.Waiter = fsm.Demanded, d.nextWaiter
			ev.Machine = rapid.SampledFrom(machines).Draw(t, "machine")
			if ev.Machine == fsm.MachinePubSub || ev.Machine == fsm.MachineShardedPubSub {
				kind := fsm.TopicChannel
				if ev.Machine == fsm.MachineShardedPubSub {
					kind = fsm.TopicShard
				}
				ev.Topics = []fsm.Topic{{Kind: kind, Name: rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "topic")}}
			}
			d.waiters = append(d.waiters, ev.Waiter)
			return ev
		case 2:
			if len(d.dialing) == 0 {
				continue
			}
			c := take(t, &d.dialing, "dial")
			ev.Conn = c
			switch rapid.IntRange(0, 2).Draw(t, "dial outcome") {
			case 0:
				ev.Kind = fsm.HandshakeDone
				d.ready = append(d.ready, c)
			case 1:
				ev.Kind, ev.Err = fsm.DialFailed, errors.New("respire: connection refused")
			default:
				ev.Kind, ev.Err, ev.Class = fsm.DialFailed, errors.New("respire: WRONGPASS"), fsm.Permanent
			}
			return ev
		case 3:
			if len(d.ready) == 0 {
				continue
			}
			ev.Kind, ev.Conn, ev.Err = fsm.ConnLost, take(t, &d.ready, "lost"), errors.New("respire: reset")
			return ev
		case 4, 5:
			if len(d.timers) == 0 {
				continue
			}
			ev.Kind, ev.Timer = fsm.TimerFired, take(t, &d.timers, "timer")
			return ev
		case 6:
			if len(d.waiters) == 0 {
				continue
			}
			ev.Kind, ev.Waiter = fsm.Withdrew, take(t, &d.waiters, "withdraw")
			ev.Machine = rapid.SampledFrom(machines).Draw(t, "withdraw machine")
			return ev
		case 7:
			ev.Kind, ev.Machine = fsm.Noticed, fsm.MachineMux
			ev.Slot = rapid.IntRange(0, 2).Draw(t, "slot")
			return ev
		case 8:
			ev.Kind = fsm.Unsubscribed
			ev.Machine = rapid.SampledFrom([]fsm.Machine{fsm.MachinePubSub, fsm.MachineShardedPubSub}).Draw(t, "unsubscribe machine")
			ev.Topic = randomTopics[rapid.IntRange(0, 1).Draw(t, "unsubscribe topic")]
			if ev.Machine == fsm.MachineShardedPubSub {
				ev.Topic = randomTopics[3]
			}
			return ev
		}
	}
}

// TestSnapshotRandomEvents: over random event sequences driven against a standalone client's
// machines, restoring a snapshot taken at a random point and stepping the rest gives the same
// effects as the machines that never stopped.
func TestSnapshotRandomEvents(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := engine.Config{Slots: 3, Policy: &fsm.Policy{InitialDelay: 10 * time.Millisecond, BackoffMultiplier: 2,
			MaxDelay: time.Second, JitterRatio: 0.5, MaxAttempts: rapid.IntRange(0, 4).Draw(rt, "max attempts")},
			Pool: fsm.PoolConfig{MaximumIdle: 2}, Lifetime: time.Duration(rapid.IntRange(0, 1).Draw(rt, "lifetime")) * time.Second}
		full, err := engine.NewReplayer(cfg)
		if err != nil {
			rt.Fatal(err)
		}
		n := rapid.IntRange(1, 200).Draw(rt, "events")
		split := rapid.IntRange(0, n).Draw(rt, "split")
		var d randomDriver
		var tail *engine.Replayer
		for i := 0; i < n; i++ {
			if i == split {
				snap, err := full.Snapshot(nil)
				if err != nil {
					rt.Fatal(err)
				}
				if tail, err = engine.RestoreReplayer(snap); err != nil {
					rt.Fatal(err)
				}
			}
			ev := d.next(rt)
			ev2 := ev
			effects := full.Step(&ev)
			want := effectsText(effects)
			d.observe(effects)
			if tail != nil {
				got := effectsText(tail.Step(&ev2))
				if got != want {
					rt.Fatalf("event %d (%s) after a snapshot at %d:\nmachines that never stopped:\n%s\nrestored machines:\n%s", i, ev.String(), split, want, got)
				}
			}
		}
	})
}
