package fsm

import (
	"errors"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// poolModel is an independent model of what a runtime sees while it executes a Pool's effects.
// It tracks connections, timers and rents from the effects alone (never from the machine's
// fields) and checks the spec's dedicated-pool rules after every step:
//
//   - every rent is answered exactly once, and a rent that is neither dialing, in backoff nor
//     answered waits only because the pool is at MaximumSize with nothing idle;
//   - a rent makes at most MaxAttempts+1 attempts (one without a policy), numbered 0, 1, 2...;
//   - a permanent failure is the rent's answer at once: no further attempt;
//   - every scheduled delay lies in the policy's band for that retry (oracleBand);
//   - connecting + rented + idle + backoff reservations never exceed MaximumSize, and idle
//     connections never exceed MaximumIdle;
//   - a granted connection has one owner: it is never granted again before it is returned;
//   - withdrawal and shutdown cancel the rent's timer and answer it without a Disconnected event;
//   - nothing dials or arms a rent timer after shutdown, and disposal closes every connection.
type poolModel struct {
	t   *rapid.T
	cfg PoolConfig

	// pending are the rents not yet answered.
	pending map[WaiterID]*modelRent
	// dialing maps attempts in flight to their rent (0 once the rent let go of it: a withdrawn
	// or shut-down attempt that still holds capacity until its end is reported).
	dialing map[ConnID]WaiterID
	// rented maps granted connections to their owner; idle holds returned connections.
	rented map[ConnID]WaiterID
	idle   map[ConnID]bool
	// broken are rented connections lost while rented: their return must close them.
	broken map[ConnID]bool
	// backoff maps armed rent timers to their rent.
	backoff map[TimerID]WaiterID
	// scan is the armed idle-retirement timer, or 0.
	scan TimerID
	// answered are the rents already answered (to catch a second answer).
	answered map[WaiterID]bool

	retired, disposed bool
	nextWaiter        WaiterID
	allTimers         []TimerID

	// expires is each ready connection's lifetime deadline, computed independently from the
	// handshake event (zero without a lifetime); expiry maps armed expiry timers to their idle
	// connection.
	expires map[ConnID]time.Duration
	expiry  map[TimerID]ConnID
	// episodes are the episode ids rents have used: each rent keeps one, no two share one.
	episodes map[uint64]bool
}

// modelRent is the model's view of one rent.
type modelRent struct {
	dials     int
	failures  int
	lastErr   error
	permanent bool
	conn      ConnID
	timer     TimerID
	episode   uint64
}

func newPoolModel(t *rapid.T, cfg PoolConfig) *poolModel {
	return &poolModel{
		t: t, cfg: cfg,
		pending: map[WaiterID]*modelRent{}, dialing: map[ConnID]WaiterID{},
		rented: map[ConnID]WaiterID{}, idle: map[ConnID]bool{}, broken: map[ConnID]bool{},
		backoff: map[TimerID]WaiterID{}, answered: map[WaiterID]bool{},
		expires: map[ConnID]time.Duration{}, expiry: map[TimerID]ConnID{}, episodes: map[uint64]bool{},
	}
}

// budget is the number of attempts a rent may make, or 0 for unlimited.
func (m *poolModel) budget() int {
	switch {
	case m.cfg.Policy == nil:
		return 1
	case m.cfg.Policy.MaxAttempts == 0:
		return 0
	}
	return m.cfg.Policy.MaxAttempts + 1
}

func (m *poolModel) maxWaiters() int {
	if m.cfg.MaxWaiters <= 0 {
		return DefaultMaxWaiters
	}
	return m.cfg.MaxWaiters
}

// apply checks and applies the effects of one step.
func (m *poolModel) apply(ev *Event, effects []Effect) {
	t := m.t
	// What the event itself tells the runtime.
	var failedRent WaiterID
	var failedPermanent bool
	// observed is the rent an observation of this step concerns: the one whose attempt failed
	// or finished its handshake.
	var observed WaiterID
	// returned, returnedBroken: a rented connection is being given back (and was lost while
	// rented).
	var returned, returnedBroken bool
	switch ev.Kind {
	case Returned:
		if _, ok := m.rented[ev.Conn]; ok {
			delete(m.rented, ev.Conn)
			returned, returnedBroken = true, m.broken[ev.Conn]
			delete(m.broken, ev.Conn)
		}
	case Demanded:
		if m.answered[ev.Waiter] || m.pending[ev.Waiter] != nil {
			t.Fatalf("test bug: waiter %d reused", ev.Waiter)
		}
		m.pending[ev.Waiter] = &modelRent{}
	case DialFailed, ConnLost:
		if w, ok := m.dialing[ev.Conn]; ok {
			delete(m.dialing, ev.Conn)
			if r := m.pending[w]; r != nil && w != 0 {
				r.failures++
				r.lastErr = ev.Err
				r.conn = 0
				failedRent = w
				failedPermanent = ev.Kind == DialFailed && ev.Class == Permanent
				r.permanent = failedPermanent
			}
		} else if ev.Kind == ConnLost {
			if m.idle[ev.Conn] {
				delete(m.idle, ev.Conn)
			} else if _, ok := m.rented[ev.Conn]; ok {
				m.broken[ev.Conn] = true
			}
		}
	case HandshakeDone:
		// Handled with the effects: a ready attempt is granted to its rent or closed.
		observed = m.dialing[ev.Conn]
	case TimerFired:
		if ev.Timer == m.scan {
			m.scan = 0
		}
		if c, ok := m.expiry[ev.Timer]; ok {
			delete(m.expiry, ev.Timer)
			defer func() {
				if m.idle[c] {
					t.Fatalf("idle conn %d kept after its lifetime timer fired", c)
				}
			}()
		}
	case Retired:
		m.retired = true
	case Disposed:
		m.retired, m.disposed = true, true
	}
	granted := map[ConnID]bool{}
	closed := map[ConnID]bool{}
	dialedFor := map[WaiterID]bool{}
	for i := range effects {
		f := &effects[i]
		switch f.Kind {
		case Dial:
			if f.Slot != -1 {
				t.Fatalf("pool dial with slot %d: %v", f.Slot, f)
			}
			if m.retired {
				t.Fatalf("dial after shutdown: %v", f)
			}
			r := m.pending[f.Waiter]
			if r == nil {
				t.Fatalf("dial for a rent that is not pending: %v", f)
			}
			if r.conn != 0 {
				t.Fatalf("rent %d dials a second attempt while conn %d is in flight", f.Waiter, r.conn)
			}
			if r.timer != 0 && !(ev.Kind == TimerFired && ev.Timer == r.timer) {
				t.Fatalf("rent %d dialed during its scheduled delay", f.Waiter)
			}
			if r.permanent {
				t.Fatalf("rent %d dialed again after a permanent failure", f.Waiter)
			}
			if f.Attempt != r.dials {
				t.Fatalf("rent %d dial attempt %d, want %d (retries count from 1)", f.Waiter, f.Attempt, r.dials)
			}
			r.dials++
			if b := m.budget(); b > 0 && r.dials > b {
				t.Fatalf("rent %d made %d attempts, budget %d", f.Waiter, r.dials, b)
			}
			if r.timer != 0 {
				delete(m.backoff, r.timer)
				r.timer = 0
			}
			r.conn = f.Conn
			m.dialing[f.Conn] = f.Waiter
			dialedFor[f.Waiter] = true
		case ArmTimer:
			if f.Conn != 0 {
				// A lifetime expiry timer for a connection becoming idle: exactly the time left.
				exp, ok := m.expires[f.Conn]
				if m.cfg.Lifetime <= 0 || !ok || ev.Kind != Returned || ev.Conn != f.Conn || f.After != exp-ev.At || f.After <= 0 {
					t.Fatalf("expiry timer %v (deadline %v, now %v)", f, exp, ev.At)
				}
				m.expiry[f.Timer] = f.Conn
				m.allTimers = append(m.allTimers, f.Timer)
				continue
			}
			if f.Waiter == 0 {
				// The idle-retirement scan.
				if m.cfg.IdleTimeout <= 0 || f.After != m.cfg.IdleTimeout {
					t.Fatalf("scan timer with IdleTimeout %v: %v", m.cfg.IdleTimeout, f)
				}
				if m.scan != 0 || m.retired {
					t.Fatalf("second scan timer or scan after shutdown: %v", f)
				}
				m.scan = f.Timer
				m.allTimers = append(m.allTimers, f.Timer)
				continue
			}
			if m.cfg.Policy == nil {
				t.Fatalf("rent timer armed without a policy: %v", f)
			}
			if m.retired {
				t.Fatalf("rent timer armed after shutdown: %v", f)
			}
			r := m.pending[f.Waiter]
			if r == nil || r.timer != 0 || r.conn != 0 {
				t.Fatalf("timer for a rent that is not between attempts: %v", f)
			}
			if f.Waiter != failedRent || failedPermanent {
				t.Fatalf("rent %d scheduled a retry without a transient failure", f.Waiter)
			}
			lo, hi := oracleBand(m.cfg.Policy, r.failures)
			if f.After < lo || f.After > hi || f.After <= 0 {
				t.Fatalf("rent %d retry %d delay %v outside (0, [%v, %v]]", f.Waiter, r.failures, f.After, lo, hi)
			}
			r.timer = f.Timer
			m.backoff[f.Timer] = f.Waiter
			m.allTimers = append(m.allTimers, f.Timer)
		case CancelTimer:
			if f.Timer == m.scan {
				m.scan = 0
				continue
			}
			if _, ok := m.expiry[f.Timer]; ok {
				delete(m.expiry, f.Timer)
				continue
			}
			if w, ok := m.backoff[f.Timer]; ok {
				delete(m.backoff, f.Timer)
				if r := m.pending[w]; r != nil {
					r.timer = 0
				}
			}
		case Close:
			closed[f.Conn] = true
			if w, ok := m.dialing[f.Conn]; ok {
				// An aborted attempt stays charged until its end is reported.
				m.dialing[f.Conn] = 0
				if r := m.pending[w]; r != nil && w != 0 {
					r.conn = 0
				}
				continue
			}
			if ev.Kind == HandshakeDone && f.Conn == ev.Conn {
				continue
			}
			if _, ok := m.rented[f.Conn]; !ok && !m.idle[f.Conn] && !(returned && f.Conn == ev.Conn) {
				t.Fatalf("close of a connection the pool does not hold: %v", f)
			}
			if _, ok := m.rented[f.Conn]; ok && ev.Kind != Disposed {
				t.Fatalf("rented conn %d closed while in use (only its return or disposal may close it): %v", f.Conn, f)
			}
			delete(m.idle, f.Conn)
			delete(m.rented, f.Conn)
			delete(m.broken, f.Conn)
		case Complete:
			r := m.pending[f.Waiter]
			if r == nil {
				if m.answered[f.Waiter] {
					t.Fatalf("rent %d answered twice: %v", f.Waiter, f)
				}
				t.Fatalf("answer for an unknown rent: %v", f)
			}
			rejected := ev.Kind == Demanded && ev.Waiter == f.Waiter && r.dials == 0
			if f.Outcome == OutcomeOverflow {
				if !rejected || len(m.pending)-1 < m.maxWaiters() {
					t.Fatalf("overflow with %d of %d waiters: %v", len(m.pending)-1, m.maxWaiters(), f)
				}
			}
			delete(m.pending, f.Waiter)
			m.answered[f.Waiter] = true
			if r.timer != 0 {
				t.Fatalf("rent %d answered %v with its timer %d still armed", f.Waiter, f.Outcome, r.timer)
			}
			if r.conn != 0 && f.Outcome != OutcomeGranted {
				t.Fatalf("rent %d answered %v with attempt %d in flight", f.Waiter, f.Outcome, r.conn)
			}
			switch f.Outcome {
			case OutcomeGranted:
				if f.Slot != -1 {
					t.Fatalf("grant with a slot: %v", f)
				}
				if owner, ok := m.rented[f.Conn]; ok {
					t.Fatalf("conn %d granted to rent %d while rent %d owns it", f.Conn, f.Waiter, owner)
				}
				if ev.Kind == HandshakeDone && ev.Conn == f.Conn && m.cfg.Lifetime > 0 {
					m.expires[f.Conn] = ev.At + m.cfg.Lifetime + time.Duration(float64(m.cfg.LifetimeJitter)*ev.Draw)
				}
				if exp, ok := m.expires[f.Conn]; ok && ev.At >= exp {
					t.Fatalf("conn %d granted at %v, past its lifetime deadline %v", f.Conn, ev.At, exp)
				}
				switch {
				case m.idle[f.Conn]:
					delete(m.idle, f.Conn)
				case ev.Kind == HandshakeDone && ev.Conn == f.Conn && r.conn == f.Conn:
					delete(m.dialing, f.Conn)
				case returned && ev.Conn == f.Conn:
					// Handed straight from its returner to a waiting rent.
					if !ev.Healthy || returnedBroken {
						t.Fatalf("unhealthy conn %d handed to rent %d", f.Conn, f.Waiter)
					}
				default:
					t.Fatalf("rent %d granted conn %d that is neither idle nor its ready attempt", f.Waiter, f.Conn)
				}
				m.rented[f.Conn] = f.Waiter
				granted[f.Conn] = true
			case OutcomeFailed:
				if f.Waiter != failedRent {
					t.Fatalf("rent %d failed without a failure of its attempt", f.Waiter)
				}
				if m.cfg.Policy != nil && !failedPermanent {
					t.Fatalf("rent %d failed on a transient failure despite its policy", f.Waiter)
				}
				if !errors.Is(f.Err, r.lastErr) {
					t.Fatalf("rent %d failed with %v, want its last failure %v", f.Waiter, f.Err, r.lastErr)
				}
			case OutcomeExhausted:
				if f.Waiter != failedRent || failedPermanent {
					t.Fatalf("rent %d exhausted without a transient failure", f.Waiter)
				}
				if b := m.budget(); b == 0 || r.dials != b {
					t.Fatalf("rent %d exhausted after %d attempts, budget %d", f.Waiter, r.dials, b)
				}
				if !errors.Is(f.Err, r.lastErr) {
					t.Fatalf("rent %d exhausted with %v, want its last failure %v", f.Waiter, f.Err, r.lastErr)
				}
			case OutcomeCancelled:
				if ev.Kind != Withdrew || ev.Waiter != f.Waiter {
					t.Fatalf("cancelled answer outside its withdrawal: %v", f)
				}
			case OutcomeClosed:
				if ev.Kind != Retired && ev.Kind != Disposed && !(rejected && m.retired) {
					t.Fatalf("closed answer outside shutdown: %v", f)
				}
			case OutcomeOverflow:
			default:
				t.Fatalf("unexpected outcome: %v", f)
			}
		case Emit:
			l := f.Lifecycle
			if l.Source != SourceDedicated || l.Slot != -1 || l.Episode == 0 {
				t.Fatalf("dedicated observation without its metadata: %v", f)
			}
			if observed == 0 {
				observed = failedRent
			}
			switch r := m.pending[observed]; {
			case r == nil:
				t.Fatalf("observation of no pending rent: %v", f)
			case r.episode == 0 && m.episodes[l.Episode]:
				t.Fatalf("rent %d observed in episode %d, another rent's", observed, l.Episode)
			case r.episode == 0:
				r.episode = l.Episode
				m.episodes[l.Episode] = true
			case r.episode != l.Episode:
				t.Fatalf("rent %d moved from episode %d to %d", observed, r.episode, l.Episode)
			}
			if l.SourceState == SourceDisconnected && (ev.Kind == Withdrew || ev.Kind == Retired || ev.Kind == Disposed) {
				t.Fatalf("cancellation or shutdown emitted a Disconnected failure: %v", f)
			}
			if l.Exhausted && (m.cfg.Policy == nil || m.cfg.Policy.MaxAttempts == 0 || l.Attempt != m.cfg.Policy.MaxAttempts) {
				t.Fatalf("exhaustion observed at attempt %d with %v", l.Attempt, m.cfg.Policy)
			}
			if l.Scheduled {
				lo, hi := oracleBand(m.cfg.Policy, l.Attempt)
				if l.NextDelay < lo || l.NextDelay > hi {
					t.Fatalf("observed delay %v of attempt %d outside [%v, %v]", l.NextDelay, l.Attempt, lo, hi)
				}
			}
		case Record:
			if f.Metric.Source != SourceDedicated {
				t.Fatalf("dedicated measurement with source %v", f.Metric.Source)
			}
		default:
			t.Fatalf("unexpected pool effect: %v", f)
		}
	}
	// The event's own consequences that need the whole step.
	switch ev.Kind {
	case DialFailed, ConnLost:
		if w, ok := m.dialing[ev.Conn]; ok && w == 0 {
			delete(m.dialing, ev.Conn) // an aborted attempt ended
		}
		if failedRent != 0 && m.pending[failedRent] != nil {
			r := m.pending[failedRent]
			if failedPermanent {
				t.Fatalf("rent %d was not answered at once after a permanent failure", failedRent)
			}
			if r.timer == 0 && r.conn == 0 {
				t.Fatalf("rent %d neither retried nor answered after a failure", failedRent)
			}
		}
	case HandshakeDone:
		if w, ok := m.dialing[ev.Conn]; ok {
			if w != 0 && m.pending[w] != nil && !granted[ev.Conn] {
				t.Fatalf("ready attempt %d of rent %d neither granted nor closed", ev.Conn, w)
			}
			if w == 0 && !closed[ev.Conn] {
				t.Fatalf("aborted attempt %d became ready and was not closed", ev.Conn)
			}
			delete(m.dialing, ev.Conn)
		} else if !granted[ev.Conn] && !closed[ev.Conn] && ev.Conn != 0 {
			t.Fatalf("stray ready conn %d not closed", ev.Conn)
		}
	case Returned:
		// A returned connection becomes idle unless it was closed or handed on.
		if returned && !granted[ev.Conn] && !closed[ev.Conn] {
			if !ev.Healthy || returnedBroken || m.retired {
				t.Fatalf("conn %d returned unhealthy, broken or after shutdown but kept", ev.Conn)
			}
			if exp, ok := m.expires[ev.Conn]; ok && ev.At >= exp {
				t.Fatalf("conn %d returned after its lifetime deadline %v but kept", ev.Conn, exp)
			}
			m.idle[ev.Conn] = true
		}
	case Withdrew:
		if m.pending[ev.Waiter] != nil {
			t.Fatalf("withdrawn rent %d still pending", ev.Waiter)
		}
	case Retired, Disposed:
		if len(m.pending) > 0 {
			t.Fatalf("%d rents pending after shutdown", len(m.pending))
		}
		if len(m.backoff) > 0 || m.scan != 0 || len(m.expiry) > 0 {
			t.Fatalf("timers still armed after shutdown: %v scan %d expiry %v", m.backoff, m.scan, m.expiry)
		}
		if len(m.idle) > 0 {
			t.Fatalf("idle connections kept after shutdown")
		}
		if ev.Kind == Disposed && len(m.rented) > 0 {
			t.Fatalf("rented connections kept after disposal")
		}
	case Demanded:
		if r := m.pending[ev.Waiter]; r != nil && len(m.idle) > 0 && !dialedFor[ev.Waiter] {
			t.Fatalf("rent %d waits although a connection is idle", ev.Waiter)
		}
	}
	// Bounds.
	charged := len(m.dialing) + len(m.rented) + len(m.idle) + len(m.backoff)
	if m.cfg.MaximumSize > 0 && charged > m.cfg.MaximumSize {
		t.Fatalf("capacity %d above MaximumSize %d (dialing %d rented %d idle %d backoff %d)", charged,
			m.cfg.MaximumSize, len(m.dialing), len(m.rented), len(m.idle), len(m.backoff))
	}
	if len(m.idle) > max(m.cfg.MaximumIdle, 0) {
		t.Fatalf("%d idle connections above MaximumIdle %d", len(m.idle), m.cfg.MaximumIdle)
	}
	// No rent is stranded: one that neither dials nor waits for its delay must be waiting for
	// capacity, which requires a full pool with nothing idle to reuse or close.
	for w, r := range m.pending {
		if r.conn != 0 || r.timer != 0 {
			continue
		}
		if m.cfg.MaximumSize == 0 || charged < m.cfg.MaximumSize || len(m.idle) > 0 {
			t.Fatalf("rent %d waits with capacity %d/%d and %d idle", w, charged, m.cfg.MaximumSize, len(m.idle))
		}
	}
}

func sortedIDs[K ~uint64, V any](m map[K]V) []K {
	ids := make([]K, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// drawPoolConfig draws a pool configuration: with or without a policy, bounded or not.
func drawPoolConfig(t *rapid.T) PoolConfig {
	cfg := PoolConfig{
		MinimumSize: rapid.IntRange(0, 2).Draw(t, "min"),
		MaximumSize: rapid.IntRange(0, 4).Draw(t, "max"),
		MaximumIdle: rapid.IntRange(0, 3).Draw(t, "idle"),
		MaxWaiters:  rapid.IntRange(0, 6).Draw(t, "waiters"),
	}
	if rapid.Bool().Draw(t, "idle-timeout") {
		cfg.IdleTimeout = time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(time.Minute)).Draw(t, "idle-timeout-value"))
	}
	if rapid.IntRange(0, 3).Draw(t, "policy") > 0 {
		p := validPolicy(t)
		if p.InitialDelay > time.Minute {
			p.InitialDelay = time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "small-initial"))
			if p.MaxDelay != 0 && p.MaxDelay < p.InitialDelay {
				p.MaxDelay = p.InitialDelay
			}
		}
		p.MaxAttempts = rapid.IntRange(0, 4).Draw(t, "attempts")
		cfg.Policy = p
	}
	if rapid.Bool().Draw(t, "lifetime") {
		cfg.Lifetime = time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(5*time.Second)).Draw(t, "lifetime-value"))
		if rapid.Bool().Draw(t, "lifetime-jitter") {
			cfg.LifetimeJitter = time.Duration(rapid.Int64Range(0, int64(2*time.Second)).Draw(t, "lifetime-jitter-value"))
		}
	}
	cfg.IDBase = IDBase(MachinePool)
	cfg.EpisodeBase = uint64(rapid.IntRange(0, 3).Draw(t, "episode-base")) << 32
	return cfg
}

// TestPoolProperties steps random rents, returns, failures, withdrawals and shutdowns into the
// pool machine and checks every rule after every step (poolModel), then replays the recorded
// events into a fresh machine and checks that it produces the very same effects.
func TestPoolProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := drawPoolConfig(t)
		p := NewPool(cfg)
		model := newPoolModel(t, cfg)
		var (
			out     Outbox
			journal []Event
			trace   []string
			now     time.Duration
		)
		episodes := map[uint64]bool{}
		step := func(ev Event) {
			now += time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "advance"))
			ev.At = now
			ev.Draw = rapid.Float64Range(0, 0.999999).Draw(t, "draw")
			ev.Machine = MachinePool
			out.Reset()
			p.Step(&ev, &out)
			model.apply(&ev, out.Effects)
			for i := range out.Effects {
				if l := out.Effects[i].Lifecycle; out.Effects[i].Kind == Emit && l.Episode != 0 {
					if l.Episode <= cfg.EpisodeBase {
						t.Fatalf("episode %d not above its base %d", l.Episode, cfg.EpisodeBase)
					}
					episodes[l.Episode] = true
				}
			}
			journal = append(journal, ev)
			for i := range out.Effects {
				trace = append(trace, out.Effects[i].String())
			}
		}
		errs := []error{errors.New("refused"), errors.New("reset"), errors.New("LOADING")}
		steps := rapid.IntRange(1, 150).Draw(t, "steps")
		for n := 0; n < steps; n++ {
			switch rapid.IntRange(0, 12).Draw(t, "action") {
			case 0, 1, 2:
				model.nextWaiter++
				step(Event{Kind: Demanded, Waiter: model.nextWaiter})
			case 3:
				if ws := sortedIDs(model.pending); len(ws) > 0 {
					step(Event{Kind: Withdrew, Waiter: rapid.SampledFrom(ws).Draw(t, "withdraw")})
				} else if model.nextWaiter > 0 {
					step(Event{Kind: Withdrew, Waiter: WaiterID(rapid.IntRange(1, int(model.nextWaiter)).Draw(t, "late-withdraw"))})
				}
			case 4, 5:
				if cs := sortedIDs(model.dialing); len(cs) > 0 {
					c := rapid.SampledFrom(cs).Draw(t, "ready")
					if rapid.Bool().Draw(t, "dialed-first") {
						step(Event{Kind: DialSucceeded, Conn: c})
					}
					step(Event{Kind: HandshakeDone, Conn: c})
				}
			case 6, 7:
				if cs := sortedIDs(model.dialing); len(cs) > 0 {
					c := rapid.SampledFrom(cs).Draw(t, "fail")
					ev := Event{Kind: DialFailed, Conn: c, Err: rapid.SampledFrom(errs).Draw(t, "err")}
					switch rapid.IntRange(0, 4).Draw(t, "failure") {
					case 0:
						ev.Class = Permanent
						ev.Err = errors.New("WRONGPASS")
					case 1:
						ev.Kind = ConnLost
					}
					step(ev)
				}
			case 8, 9:
				if cs := sortedIDs(model.rented); len(cs) > 0 {
					step(Event{Kind: Returned, Conn: rapid.SampledFrom(cs).Draw(t, "return"), Healthy: rapid.IntRange(0, 3).Draw(t, "healthy") > 0})
				}
			case 10:
				var cs []ConnID
				cs = append(cs, sortedIDs(model.rented)...)
				cs = append(cs, sortedIDs(model.idle)...)
				if len(cs) > 0 {
					step(Event{Kind: ConnLost, Conn: rapid.SampledFrom(cs).Draw(t, "lose"), Err: errors.New("reset")})
				}
			case 11:
				var ts []TimerID
				ts = append(ts, sortedIDs(model.backoff)...)
				ts = append(ts, sortedIDs(model.expiry)...)
				if model.scan != 0 {
					ts = append(ts, model.scan)
				}
				if len(ts) > 0 {
					step(Event{Kind: TimerFired, Timer: rapid.SampledFrom(ts).Draw(t, "timer")})
				} else if len(model.allTimers) > 0 {
					step(Event{Kind: TimerFired, Timer: rapid.SampledFrom(model.allTimers).Draw(t, "stale-timer")})
				}
			case 12:
				switch rapid.IntRange(0, 9).Draw(t, "rare") {
				case 0:
					step(Event{Kind: Retired})
				case 1:
					step(Event{Kind: Disposed})
				default:
					step(Event{Kind: HandshakeDone, Conn: ConnID(IDBase(MachinePool) + uint64(rapid.IntRange(5000, 5010).Draw(t, "stray")))})
				}
			}
		}
		// Replay: the journal alone reproduces every effect.
		checkReplay(t, NewPool(cfg), journal, trace)
	})
}

// TestPoolPermanentTriedOnce: whatever the policy, a permanent rejection of a rent's first
// attempt is its answer: one dial, no timer, no exhaustion, and the next rent starts afresh.
func TestPoolPermanentTriedOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := drawPoolConfig(t)
		cfg.MaximumSize = 0
		p := NewPool(cfg)
		var out Outbox
		for w := WaiterID(1); w <= 3; w++ {
			out.Reset()
			p.Step(&Event{Kind: Demanded, Waiter: w}, &out)
			if len(out.Effects) != 1 || out.Effects[0].Kind != Dial || out.Effects[0].Attempt != 0 {
				t.Fatalf("rent %d: want one immediate attempt, got %v", w, out.Effects)
			}
			conn := out.Effects[0].Conn
			out.Reset()
			p.Step(&Event{Kind: DialFailed, Conn: conn, Class: Permanent, Err: errors.New("NOPERM")}, &out)
			if len(out.Effects) != 1 || out.Effects[0].Kind != Complete || out.Effects[0].Outcome != OutcomeFailed {
				t.Fatalf("rent %d: a permanent failure must be answered at once, got %v", w, out.Effects)
			}
		}
	})
}

// TestPoolExhaustionLeavesPoolUsable: a rent that exhausts its budget does not disable the pool;
// the next rent makes its immediate attempt and gets its own, full budget.
func TestPoolExhaustionLeavesPoolUsable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		attempts := rapid.IntRange(1, 4).Draw(t, "attempts")
		p := NewPool(PoolConfig{MaximumIdle: 4, IDBase: IDBase(MachinePool),
			Policy: &Policy{InitialDelay: time.Millisecond, MaxAttempts: attempts}})
		var out Outbox
		last := func(kind EffectKind) Effect {
			for i := len(out.Effects) - 1; i >= 0; i-- {
				if out.Effects[i].Kind == kind {
					return out.Effects[i]
				}
			}
			t.Fatalf("no %v in %v", kind, out.Effects)
			return Effect{}
		}
		for w := WaiterID(1); w <= 2; w++ {
			out.Reset()
			p.Step(&Event{Kind: Demanded, Waiter: w}, &out)
			dials := 1
			for {
				conn := last(Dial).Conn
				out.Reset()
				p.Step(&Event{Kind: DialFailed, Conn: conn, Err: errors.New("refused")}, &out)
				if c := out.Effects[len(out.Effects)-1]; c.Kind == Complete {
					if c.Outcome != OutcomeExhausted || dials != attempts+1 {
						t.Fatalf("rent %d ended %v after %d attempts, want exhaustion after %d", w, c.Outcome, dials, attempts+1)
					}
					break
				}
				timer := last(ArmTimer).Timer
				out.Reset()
				p.Step(&Event{Kind: TimerFired, Timer: timer}, &out)
				dials++
			}
		}
	})
}
