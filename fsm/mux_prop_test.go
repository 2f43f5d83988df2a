package fsm

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// runtimeModel is an independent model of what a runtime sees while executing a Mux's effects.
// It checks the spec's slot rules on every step, without reusing the machine's logic.
type runtimeModel struct {
	t      *rapid.T
	policy *Policy
	slots  int

	dialing   map[ConnID]int // dials in flight, by slot
	ready     map[ConnID]int // ready connections, by slot
	timers    map[TimerID]int
	waiters   map[WaiterID]Need
	exhausted map[int]bool
	closed    bool
	// episodeAttempt is the last policy attempt scheduled for each slot in its episode.
	episodeAttempt []int
	// failuresInEpisode counts failed policy attempts of each slot since its last ready.
	failuresInEpisode []int
	// everReady marks slots that have been ready (their attempts are replacements).
	everReady  []bool
	nextWaiter WaiterID
	allTimers  []TimerID
}

func newRuntimeModel(t *rapid.T, cfg MuxConfig) *runtimeModel {
	return &runtimeModel{
		t: t, policy: cfg.Policy, slots: cfg.Slots,
		dialing: map[ConnID]int{}, ready: map[ConnID]int{}, timers: map[TimerID]int{},
		waiters: map[WaiterID]Need{}, exhausted: map[int]bool{},
		episodeAttempt: make([]int, cfg.Slots), failuresInEpisode: make([]int, cfg.Slots),
		everReady: make([]bool, cfg.Slots),
	}
}

// apply checks and applies the effects of one step.
func (r *runtimeModel) apply(ev *Event, effects []Effect) {
	t := r.t
	// Bookkeeping of the event itself.
	switch ev.Kind {
	case Demanded:
		r.waiters[ev.Waiter] = ev.Need
	case DialFailed:
		if s, ok := r.dialing[ev.Conn]; ok {
			delete(r.dialing, ev.Conn)
			if r.everReady[s] && r.policy != nil {
				r.failuresInEpisode[s]++
			}
		}
	case HandshakeDone:
		if s, ok := r.dialing[ev.Conn]; ok && !r.closed {
			delete(r.dialing, ev.Conn)
			r.ready[ev.Conn] = s
			r.everReady[s] = true
			r.episodeAttempt[s] = 0
			r.failuresInEpisode[s] = 0
		}
	case ConnLost:
		if s, ok := r.ready[ev.Conn]; ok {
			delete(r.ready, ev.Conn)
			r.episodeAttempt[s] = 0
			r.failuresInEpisode[s] = 0
		} else if s, ok := r.dialing[ev.Conn]; ok {
			delete(r.dialing, ev.Conn)
			if r.everReady[s] && r.policy != nil {
				r.failuresInEpisode[s]++
			}
		}
	case TimerFired:
		delete(r.timers, ev.Timer)
	case Retired, Disposed:
		r.closed = true
	}
	scheduled := map[int]Lifecycle{}
	for i := range effects {
		f := &effects[i]
		switch f.Kind {
		case Dial:
			if r.closed {
				t.Fatalf("dial after shutdown: %v", f)
			}
			if r.exhausted[f.Slot] {
				t.Fatalf("dial of exhausted slot %d", f.Slot)
			}
			if r.busy(f.Slot) {
				t.Fatalf("second attempt for slot %d while one is outstanding: %v", f.Slot, f)
			}
			if r.policy == nil && f.Attempt != 0 {
				t.Fatalf("attempt number without a policy: %v", f)
			}
			if r.policy != nil && r.everReady[f.Slot] {
				want := r.failuresInEpisode[f.Slot] + 1
				if f.Attempt != want {
					t.Fatalf("slot %d dial attempt %d, want %d (consecutive failures %d)", f.Slot, f.Attempt, want, r.failuresInEpisode[f.Slot])
				}
				if r.policy.MaxAttempts > 0 && f.Attempt > r.policy.MaxAttempts {
					t.Fatalf("attempt %d beyond MaxAttempts %d", f.Attempt, r.policy.MaxAttempts)
				}
			}
			r.dialing[f.Conn] = f.Slot
		case ArmTimer:
			if r.policy == nil {
				t.Fatalf("timer armed without a policy")
			}
			r.timers[f.Timer] = -1
			r.allTimers = append(r.allTimers, f.Timer)
		case CancelTimer:
			delete(r.timers, f.Timer)
		case Close:
			delete(r.dialing, f.Conn)
			delete(r.ready, f.Conn)
		case Route:
			if f.State == SlotExhausted {
				r.exhausted[f.Slot] = true
			} else if r.exhausted[f.Slot] && f.State != SlotRetired {
				t.Fatalf("slot %d left exhaustion for %v", f.Slot, f.State)
			}
			if f.State == SlotScheduled {
				for id, s := range r.timers {
					if s == -1 {
						r.timers[id] = f.Slot
					}
				}
			}
			if (f.Conn != 0) != (f.State == SlotReady) {
				t.Fatalf("route conn/state mismatch: %v", f)
			}
		case Emit:
			l := f.Lifecycle
			if l.Scheduled {
				scheduled[l.Slot] = l
				lo, hi := oracleBand(r.policy, l.Attempt)
				if l.NextDelay < lo || l.NextDelay > hi {
					t.Fatalf("slot %d attempt %d delay %v outside [%v, %v]", l.Slot, l.Attempt, l.NextDelay, lo, hi)
				}
				if want := r.failuresInEpisode[l.Slot] + 1; l.Attempt != want {
					t.Fatalf("slot %d scheduled attempt %d, want %d", l.Slot, l.Attempt, want)
				}
			}
			if l.Exhausted {
				if r.policy == nil || r.policy.MaxAttempts == 0 || l.Attempt != r.policy.MaxAttempts {
					t.Fatalf("exhaustion at attempt %d with %v", l.Attempt, r.policy)
				}
			}
		case Complete:
			need, ok := r.waiters[f.Waiter]
			if !ok {
				t.Fatalf("complete for unknown or already answered waiter: %v", f)
			}
			delete(r.waiters, f.Waiter)
			if f.Outcome == OutcomeGranted {
				if s, ok := r.ready[f.Conn]; !ok || s != f.Slot {
					t.Fatalf("granted a connection that is not ready: %v", f)
				}
				if need == NeedAll && len(r.ready) != r.slots {
					t.Fatalf("need=all granted with %d of %d slots ready", len(r.ready), r.slots)
				}
			}
			if f.Outcome == OutcomeExhausted && need == NeedAny && len(r.exhausted) != r.slots {
				t.Fatalf("reconnect limit with only %d of %d slots exhausted", len(r.exhausted), r.slots)
			}
			if f.Outcome == OutcomeExhausted && need == NeedAll && len(r.exhausted) == 0 {
				t.Fatalf("need=all failed with the limit but no slot is exhausted")
			}
		}
	}
	for slot, l := range scheduled {
		if l.NextDelay == 0 {
			continue
		}
		found := false
		for _, s := range r.timers {
			if s == slot {
				found = true
			}
		}
		if !found {
			t.Fatalf("slot %d scheduled a delay but no timer is armed", slot)
		}
	}
	// Demands while a slot awaits use must not strand waiters: someone must be working for them.
	if len(r.waiters) > 0 && len(r.dialing) == 0 && len(r.timers) == 0 && len(r.ready) == 0 && !r.closed {
		t.Fatalf("%d waiters pending with no attempt in progress", len(r.waiters))
	}
	// Once every slot is exhausted no attempt can exist.
	if len(r.exhausted) == r.slots && (len(r.dialing) > 0 || len(r.timers) > 0) {
		t.Fatalf("attempt outstanding although every slot is exhausted")
	}
}

func (r *runtimeModel) busy(slot int) bool {
	for _, s := range r.dialing {
		if s == slot {
			return true
		}
	}
	for _, s := range r.timers {
		if s == slot {
			return true
		}
	}
	return false
}

func sortedConns(m map[ConnID]int) []ConnID {
	ids := make([]ConnID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func sortedTimers(m map[TimerID]int) []TimerID {
	ids := make([]TimerID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func sortedWaiters(m map[WaiterID]Need) []WaiterID {
	ids := make([]WaiterID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// checkReplay steps the journal into a fresh machine and fails unless it produces exactly the
// recorded effect lines: the journal alone reproduces a run.
func checkReplay(t *rapid.T, fresh Stepper, journal []Event, trace []string) {
	var out Outbox
	var again []string
	for i := range journal {
		ev := journal[i]
		out.Reset()
		fresh.Step(&ev, &out)
		for j := range out.Effects {
			again = append(again, out.Effects[j].String())
		}
	}
	if strings.Join(again, "\n") != strings.Join(trace, "\n") {
		t.Fatalf("replay diverged:\n%s\n---\n%s", strings.Join(trace, "\n"), strings.Join(again, "\n"))
	}
}

// drawConfig draws a machine configuration: with or without a policy, 1 to 4 slots.
func drawConfig(t *rapid.T) MuxConfig {
	cfg := MuxConfig{Slots: rapid.IntRange(1, 4).Draw(t, "slots")}
	if rapid.IntRange(0, 3).Draw(t, "policy") > 0 {
		cfg.Policy = validPolicy(t)
		if cfg.Policy.InitialDelay > time.Minute {
			cfg.Policy.InitialDelay = time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "small-initial"))
			if cfg.Policy.MaxDelay != 0 && cfg.Policy.MaxDelay < cfg.Policy.InitialDelay {
				cfg.Policy.MaxDelay = cfg.Policy.InitialDelay
			}
		}
	}
	return cfg
}

// TestMuxProperties steps random fault timelines and workloads into the machine and checks every
// slot rule after every step, then replays the recorded events into a fresh machine and checks
// that it produces the very same effects.
func TestMuxProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := drawConfig(t)
		m := NewMux(cfg)
		model := newRuntimeModel(t, cfg)
		var (
			out     Outbox
			journal []Event
			trace   []string
			now     time.Duration
		)
		step := func(ev Event) {
			now += time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "advance"))
			ev.At = now
			ev.Draw = rapid.Float64Range(0, 0.999999).Draw(t, "draw")
			out.Reset()
			m.Step(&ev, &out)
			model.apply(&ev, out.Effects)
			journal = append(journal, ev)
			for i := range out.Effects {
				trace = append(trace, out.Effects[i].String())
			}
		}
		steps := rapid.IntRange(1, 120).Draw(t, "steps")
		for n := 0; n < steps; n++ {
			switch rapid.IntRange(0, 11).Draw(t, "action") {
			case 0, 1:
				model.nextWaiter++
				need := NeedAny
				if rapid.IntRange(0, 5).Draw(t, "need-all") == 0 {
					need = NeedAll
				}
				step(Event{Kind: Demanded, Waiter: model.nextWaiter, Need: need})
			case 2:
				step(Event{Kind: Noticed, Slot: rapid.IntRange(0, cfg.Slots-1).Draw(t, "slot")})
			case 3:
				if ws := sortedWaiters(model.waiters); len(ws) > 0 {
					step(Event{Kind: Withdrew, Waiter: rapid.SampledFrom(ws).Draw(t, "waiter")})
				}
			case 4, 5:
				if cs := sortedConns(model.dialing); len(cs) > 0 {
					c := rapid.SampledFrom(cs).Draw(t, "dial")
					if rapid.Bool().Draw(t, "dialed-first") {
						step(Event{Kind: DialSucceeded, Conn: c})
					}
					step(Event{Kind: HandshakeDone, Conn: c})
				}
			case 6, 7:
				if cs := sortedConns(model.dialing); len(cs) > 0 {
					c := rapid.SampledFrom(cs).Draw(t, "dial")
					kind := DialFailed
					if rapid.Bool().Draw(t, "lost-during-handshake") {
						kind = ConnLost
					}
					step(Event{Kind: kind, Conn: c, Err: errors.New("refused")})
				}
			case 8:
				if cs := sortedConns(model.ready); len(cs) > 0 {
					step(Event{Kind: ConnLost, Conn: rapid.SampledFrom(cs).Draw(t, "lose"), Err: errors.New("reset")})
				}
			case 9, 10:
				if ts := sortedTimers(model.timers); len(ts) > 0 {
					step(Event{Kind: TimerFired, Timer: rapid.SampledFrom(ts).Draw(t, "timer")})
				} else if len(model.allTimers) > 0 {
					step(Event{Kind: TimerFired, Timer: rapid.SampledFrom(model.allTimers).Draw(t, "stale-timer")})
				}
			case 11:
				if rapid.IntRange(0, 9).Draw(t, "shutdown") == 0 {
					kind := Retired
					if rapid.Bool().Draw(t, "dispose") {
						kind = Disposed
					}
					step(Event{Kind: kind})
				} else {
					step(Event{Kind: HandshakeDone, Conn: ConnID(rapid.IntRange(1000, 1010).Draw(t, "stray"))})
				}
			}
		}
		// Replay: the journal alone reproduces every effect.
		checkReplay(t, NewMux(cfg), journal, trace)
	})
}

// TestMuxExhaustionIsSticky: however many demands and notices arrive after a slot exhausts,
// it never dials again.
func TestMuxExhaustionIsSticky(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		attempts := rapid.IntRange(1, 4).Draw(t, "attempts")
		m := NewMux(MuxConfig{Slots: 1, Policy: &Policy{InitialDelay: time.Millisecond, MaxAttempts: attempts}})
		var out Outbox
		conn, timer := ConnID(0), TimerID(0)
		step := func(ev Event) {
			out.Reset()
			m.Step(&ev, &out)
			for _, f := range out.Effects {
				switch f.Kind {
				case Dial:
					conn = f.Conn
				case ArmTimer:
					timer = f.Timer
				}
			}
		}
		step(Event{Kind: Demanded, Waiter: 1})
		step(Event{Kind: HandshakeDone, Conn: conn})
		step(Event{Kind: ConnLost, Conn: conn, Err: errors.New("reset")})
		for i := 0; i < attempts; i++ {
			step(Event{Kind: TimerFired, Timer: timer})
			step(Event{Kind: DialFailed, Conn: conn, Err: fmt.Errorf("refused %d", i)})
			if i < attempts-1 {
				step(Event{Kind: Noticed, Slot: 0})
			}
		}
		if m.SlotState(0) != SlotExhausted {
			t.Fatalf("slot not exhausted after %d failures: %v", attempts, m.SlotState(0))
		}
		for i := 0; i < rapid.IntRange(1, 50).Draw(t, "more"); i++ {
			out.Reset()
			ev := Event{Kind: Demanded, Waiter: WaiterID(100 + i)}
			if i%2 == 1 {
				ev = Event{Kind: Noticed, Slot: 0}
			}
			m.Step(&ev, &out)
			for _, f := range out.Effects {
				if f.Kind == Dial || f.Kind == ArmTimer {
					t.Fatalf("exhausted slot started work: %v", f)
				}
				if f.Kind == Complete && (f.Outcome != OutcomeExhausted || f.Err == nil || !strings.Contains(f.Err.Error(), "refused")) {
					t.Fatalf("demand on exhausted endpoint: %v", f)
				}
			}
		}
	})
}
