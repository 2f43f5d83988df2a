package fsm

import (
	"errors"
	"testing"
	"time"
)

// muxStepper steps a Mux and keeps the effects of the last step.
type muxStepper struct {
	m   *Mux
	out Outbox
}

func (s *muxStepper) step(ev Event) []Effect {
	s.out.Reset()
	s.m.Step(&ev, &s.out)
	return append([]Effect(nil), s.out.Effects...)
}

func effectsOf(effects []Effect, k EffectKind) []Effect {
	var out []Effect
	for _, f := range effects {
		if f.Kind == k {
			out = append(out, f)
		}
	}
	return out
}

// TestMuxPublishedRenewsFailedSlots: slots that failed against the old primary (resting after a
// failed initial connection; exhausted under a policy) start over as fresh slots when a new
// generation is published, and the next demand dials them at once instead of failing until
// their rest ends (or for good, once exhausted).
func TestMuxPublishedRenewsFailedSlots(t *testing.T) {
	refused := errors.New("refused")
	t.Run("resting", func(t *testing.T) {
		s := &muxStepper{m: NewMux(MuxConfig{Slots: 2})}
		for _, f := range effectsOf(s.step(Event{Kind: Demanded, Need: NeedAny, Waiter: 1}), Dial) {
			s.step(Event{Kind: DialFailed, Conn: f.Conn, Err: refused})
		}
		// The positive control: while the slots rest, a demand fails at once without a dial.
		effects := s.step(Event{Kind: Demanded, Need: NeedAny, Waiter: 2})
		if len(effectsOf(effects, Dial)) != 0 || len(effectsOf(effects, Complete)) != 1 || effectsOf(effects, Complete)[0].Outcome != OutcomeFailed {
			t.Fatalf("a demand while the slots rest: %v", effects)
		}
		effects = s.step(Event{Kind: Published, Sentinel: &SentinelData{Generation: 2}})
		if n := len(effectsOf(effects, CancelTimer)); n != 2 {
			t.Fatalf("%d rest timers cancelled, want 2", n)
		}
		checkRenewed(t, s)
	})
	t.Run("exhausted", func(t *testing.T) {
		s := &muxStepper{m: NewMux(MuxConfig{Slots: 2, Policy: &Policy{InitialDelay: time.Second, MaxAttempts: 1}})}
		for _, f := range effectsOf(s.step(Event{Kind: Demanded, Need: NeedAll, Waiter: 1}), Dial) {
			s.step(Event{Kind: HandshakeDone, Conn: f.Conn})
		}
		for i := 0; i < 2; i++ {
			armed := effectsOf(s.step(Event{Kind: ConnLost, Conn: s.m.slots[i].a.conn, Err: refused}), ArmTimer)
			if len(armed) != 1 {
				t.Fatalf("slot %d: the replacement was not scheduled", i)
			}
			for _, f := range effectsOf(s.step(Event{Kind: TimerFired, Timer: armed[0].Timer}), Dial) {
				s.step(Event{Kind: DialFailed, Conn: f.Conn, Err: refused})
			}
		}
		// The positive control: exhausted slots fail every demand for good.
		if c := effectsOf(s.step(Event{Kind: Demanded, Need: NeedAny, Waiter: 2}), Complete); len(c) != 1 || c[0].Outcome != OutcomeExhausted {
			t.Fatalf("a demand with every slot exhausted: %v", c)
		}
		for i := 0; i < 2; i++ {
			if st := s.m.SlotState(i); st != SlotExhausted {
				t.Fatalf("slot %d is %v, want exhausted", i, st)
			}
		}
		s.step(Event{Kind: Published, Sentinel: &SentinelData{Generation: 2}})
		checkRenewed(t, s)
	})
}

func checkRenewed(t *testing.T, s *muxStepper) {
	t.Helper()
	for i := 0; i < 2; i++ {
		if st := s.m.SlotState(i); st != SlotFresh || s.m.SlotFailures(i) != 0 {
			t.Fatalf("slot %d is %v with %d failures after the publication", i, st, s.m.SlotFailures(i))
		}
	}
	if got := effectsOf(s.step(Event{Kind: Demanded, Need: NeedAny, Waiter: 99}), Dial); len(got) != 2 {
		t.Fatalf("the demand after the publication dialed %d slots, want both at once", len(got))
	}
}
