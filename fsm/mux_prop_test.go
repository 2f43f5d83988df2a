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

	dialing map[ConnID]int  // dials in flight, by slot
	ready   map[ConnID]int  // ready connections, by slot
	timers  map[TimerID]int // policy delays, by slot (-1 until a route names the slot)
	rests   map[TimerID]int // rests of slots whose attempt no policy governed, by slot
	// deadlines are the armed timers' due times: the harness never fires a timer early.
	deadlines map[TimerID]time.Duration
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
	// attempted marks slots that dialed at least once: a later attempt is a retry.
	attempted []bool
	// restFailures counts each slot's consecutive failed attempts that no policy governed, and
	// failedAt is when the last one failed: the next attempt may not start before
	// failedAt + oracleRest(restFailures).
	restFailures []int
	failedAt     []time.Duration
}

// oracleRest is the no-policy spacing after n consecutive failures, computed independently of
// NoPolicyWait: 250 ms, doubled n-1 times, never above 5 s.
func oracleRest(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	d := 250 * time.Millisecond
	for i := 1; i < n && d < 5*time.Second; i++ {
		d *= 2
	}
	if d > 5*time.Second {
		d = 5 * time.Second
	}
	return d
}

// ungoverned reports whether slot's attempts are outside the policy: all of them without one,
// initial connections with one.
func (r *runtimeModel) ungoverned(slot int) bool { return r.policy == nil || !r.everReady[slot] }

// attemptFailed records the failure of slot's attempt at now.
func (r *runtimeModel) attemptFailed(slot int, now time.Duration) {
	if r.everReady[slot] && r.policy != nil {
		r.failuresInEpisode[slot]++
	}
	if r.ungoverned(slot) {
		r.restFailures[slot]++
		r.failedAt[slot] = now
	}
}

func newRuntimeModel(t *rapid.T, cfg MuxConfig) *runtimeModel {
	return &runtimeModel{
		t: t, policy: cfg.Policy, slots: cfg.Slots,
		dialing: map[ConnID]int{}, ready: map[ConnID]int{}, timers: map[TimerID]int{},
		rests: map[TimerID]int{}, deadlines: map[TimerID]time.Duration{},
		waiters: map[WaiterID]Need{}, exhausted: map[int]bool{},
		episodeAttempt: make([]int, cfg.Slots), failuresInEpisode: make([]int, cfg.Slots),
		everReady: make([]bool, cfg.Slots), attempted: make([]bool, cfg.Slots),
		restFailures: make([]int, cfg.Slots), failedAt: make([]time.Duration, cfg.Slots),
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
			r.attemptFailed(s, ev.At)
		}
	case HandshakeDone:
		if s, ok := r.dialing[ev.Conn]; ok && !r.closed {
			delete(r.dialing, ev.Conn)
			r.ready[ev.Conn] = s
			r.everReady[s] = true
			r.episodeAttempt[s] = 0
			r.failuresInEpisode[s] = 0
			r.restFailures[s] = 0
		}
	case ConnLost:
		if s, ok := r.ready[ev.Conn]; ok {
			delete(r.ready, ev.Conn)
			r.episodeAttempt[s] = 0
			r.failuresInEpisode[s] = 0
			r.restFailures[s] = 0
		} else if s, ok := r.dialing[ev.Conn]; ok {
			delete(r.dialing, ev.Conn)
			r.attemptFailed(s, ev.At)
		}
	case TimerFired:
		if due, ok := r.deadlines[ev.Timer]; ok && ev.At < due {
			t.Fatalf("harness fired timer %d at %v before its deadline %v", ev.Timer, ev.At, due)
		}
		delete(r.timers, ev.Timer)
		delete(r.rests, ev.Timer)
		delete(r.deadlines, ev.Timer)
	case Retired, Disposed:
		r.closed = true
	}
	scheduled := map[int]Lifecycle{}
	// retries counts the attempts this step started for slots that had attempted before: one use
	// (a notice or a NeedAny demand) starts at most one.
	retries := 0
	var armed []Effect
	for i := range effects {
		f := &effects[i]
		switch f.Kind {
		case Dial:
			if r.closed {
				t.Fatalf("dial after shutdown: %v", f)
			}
			if r.ungoverned(f.Slot) && r.restFailures[f.Slot] > 0 {
				if due := r.failedAt[f.Slot] + oracleRest(r.restFailures[f.Slot]); ev.At < due {
					t.Fatalf("slot %d dialed at %v, before its rest after %d failures ended at %v",
						f.Slot, ev.At, r.restFailures[f.Slot], due)
				}
			}
			if r.attempted[f.Slot] && ev.Kind != TimerFired {
				retries++
			}
			r.attempted[f.Slot] = true
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
			armed = append(armed, *f)
			r.deadlines[f.Timer] = ev.At + f.After
			r.allTimers = append(r.allTimers, f.Timer)
		case CancelTimer:
			delete(r.timers, f.Timer)
			delete(r.rests, f.Timer)
			delete(r.deadlines, f.Timer)
		case Close:
			delete(r.dialing, f.Conn)
			delete(r.ready, f.Conn)
		case Route:
			if f.State == SlotExhausted {
				r.exhausted[f.Slot] = true
			} else if r.exhausted[f.Slot] && f.State != SlotRetired {
				t.Fatalf("slot %d left exhaustion for %v", f.Slot, f.State)
			}
			switch f.State {
			case SlotScheduled, SlotResting:
				// The timer armed just before this route is the slot's delay or rest.
				if len(armed) == 0 {
					t.Fatalf("slot %d routed to %v without a timer", f.Slot, f.State)
				}
				timer := armed[len(armed)-1]
				armed = armed[:len(armed)-1]
				if f.State == SlotScheduled {
					if r.policy == nil {
						t.Fatalf("policy delay without a policy: %v", f)
					}
					r.timers[timer.Timer] = f.Slot
					if r.attempted[f.Slot] && ev.Kind != TimerFired {
						retries++
					}
					break
				}
				if !r.ungoverned(f.Slot) {
					t.Fatalf("slot %d rests although the policy governs its attempts", f.Slot)
				}
				if want := oracleRest(r.restFailures[f.Slot]); timer.After != want {
					t.Fatalf("slot %d rests %v after %d failures, want %v", f.Slot, timer.After, r.restFailures[f.Slot], want)
				}
				r.rests[timer.Timer] = f.Slot
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
	if len(armed) > 0 {
		t.Fatalf("timers armed without a delay or a rest: %v", armed)
	}
	if (ev.Kind == Noticed || (ev.Kind == Demanded && ev.Need == NeedAny)) && retries > 1 {
		t.Fatalf("one use (%v) started %d retries", ev, retries)
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
	for _, s := range r.rests {
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

func sortedTimers(maps ...map[TimerID]int) []TimerID {
	var ids []TimerID
	for _, m := range maps {
		for id := range m {
			ids = append(ids, id)
		}
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
			if due, ok := model.deadlines[ev.Timer]; ev.Kind == TimerFired && ok && now < due {
				// A runtime fires a timer at its deadline, never before.
				now = due
			}
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
				if ts := sortedTimers(model.timers, model.rests); len(ts) > 0 {
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

// TestMuxRefusingEndpointBound: without a policy, however many slots, however fast commands
// arrive and however they split into demands and notices, a refusing endpoint is dialed at most
// as often as the no-policy spacing allows per slot. Every dial is refused; uses arrive every 0-2
// ms; rests end exactly when their timers are due. Over a horizon H, slot s may dial at most
// 1 + max{n : oracleRest(1) + ... + oracleRest(n) <= H} times after its connection was lost.
func TestMuxRefusingEndpointBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		slots := rapid.IntRange(1, 64).Draw(t, "slots")
		horizon := time.Duration(rapid.Int64Range(int64(100*time.Millisecond), int64(12*time.Second)).Draw(t, "horizon"))
		m := NewMux(MuxConfig{Slots: slots})
		var out Outbox
		var now time.Duration
		dialing := map[ConnID]bool{}
		due := map[TimerID]time.Duration{}
		dials := make([]int, slots)
		step := func(ev Event) {
			ev.At = now
			out.Reset()
			m.Step(&ev, &out)
			for _, f := range out.Effects {
				switch f.Kind {
				case Dial:
					dialing[f.Conn] = true
					dials[f.Slot]++
				case ArmTimer:
					due[f.Timer] = now + f.After
				case CancelTimer:
					delete(due, f.Timer)
				}
			}
		}
		// Connect every slot, then lose them all: the clock of the bound starts now.
		step(Event{Kind: Demanded, Waiter: 1})
		for _, c := range sortedBools(dialing) {
			delete(dialing, c)
			step(Event{Kind: HandshakeDone, Conn: c})
		}
		for i := range dials {
			dials[i] = 0
		}
		for i := 0; i < slots; i++ {
			step(Event{Kind: ConnLost, Conn: ConnID(i + 1), Err: errors.New("reset")})
		}
		waiter := WaiterID(1)
		for now <= horizon {
			// Refuse every dial in flight, fire the timers that are due, then one use.
			for _, c := range sortedBools(dialing) {
				delete(dialing, c)
				step(Event{Kind: DialFailed, Conn: c, Err: errors.New("refused")})
			}
			for _, id := range sortedDue(due) {
				if due[id] <= now {
					delete(due, id)
					step(Event{Kind: TimerFired, Timer: id})
				}
			}
			if rapid.Bool().Draw(t, "notice") {
				step(Event{Kind: Noticed, Slot: rapid.IntRange(0, slots-1).Draw(t, "slot")})
			} else {
				waiter++
				step(Event{Kind: Demanded, Waiter: waiter})
			}
			now += time.Duration(rapid.Int64Range(0, int64(2*time.Millisecond)).Draw(t, "gap"))
		}
		limit, spent := 1, time.Duration(0)
		for n := 1; spent+oracleRest(n) <= horizon; n++ {
			spent += oracleRest(n)
			limit++
		}
		for s, d := range dials {
			if d > limit {
				t.Fatalf("slot %d of %d dialed %d times in %v; the spacing allows %d", s, slots, d, horizon, limit)
			}
		}
	})
}

func sortedBools(m map[ConnID]bool) []ConnID {
	ids := make([]ConnID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func sortedDue(m map[TimerID]time.Duration) []TimerID {
	ids := make([]TimerID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}
