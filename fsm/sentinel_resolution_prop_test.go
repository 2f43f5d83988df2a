package fsm

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// resolutionModel is an independent model of a Resolution, written from the spec's rules: the
// candidates and their order, the budget of each resolution, exhaustion against depletion, the
// epoch rule, generations, the answers every waiter gets and the retries of the monitor's
// rediscoveries. It predicts the decisions of every step and checks the machine's effects
// against them.
type resolutionModel struct {
	t          *rapid.T
	policy     *Policy
	configured []Endpoint
	maxWaiters int

	learned []Endpoint
	closed  bool
	warned  bool

	// The running resolution.
	running bool
	cand    int
	n       int // the current candidate's attempt number
	stage   string
	conn    ConnID
	timer   TimerID
	// asking is the primary query outstanding ("master", "addr" or ""); peers says SENTINEL
	// SENTINELS is outstanding.
	asking string
	peers  bool
	rep    report

	// The validated primary.
	primary    Endpoint
	epoch      uint64
	epochKnown bool
	generation uint64
	live       bool

	waiters    map[WaiterID]bool
	eventNeed  bool
	again      bool
	retries    int
	waiting    bool
	retryTimer TimerID

	// failedRuns counts consecutive failed resolutions; callers get lastOutcome until restUntil.
	failedRuns  int
	restUntil   time.Duration
	lastOutcome Outcome

	nextWaiter WaiterID
	allConns   []ConnID
	allTimers  []TimerID
	published  int
}

func (m *resolutionModel) known() []Endpoint {
	return append(append([]Endpoint(nil), m.configured...), m.learned...)
}

// resExpect is what one step must show.
type resExpect struct {
	dials     []string // "endpoint/attempt"
	queries   []SentinelQuery
	timers    []time.Duration
	band      *[2]time.Duration // a fallback delay's band (the draw decides within it)
	publish   *SentinelData
	retire    []uint64
	answers   map[WaiterID]Outcome
	granted   Endpoint
	exhausted bool
	failover  bool
	warn      bool
	attempts  []string // "endpoint/n": the attempt measurement of a planned fallback
}

func dialKey(e Endpoint, attempt int) string { return e.String() + "/" + strconv.Itoa(attempt) }

// rediscoveryOracle is the no-policy schedule of rediscovery retries, written independently:
// 1 s doubled k-1 times, never above 30 s.
func rediscoveryOracle(k int) time.Duration {
	d := time.Second
	for i := 1; i < k; i++ {
		d *= 2
		if d >= 30*time.Second {
			return 30 * time.Second
		}
	}
	return d
}

func (m *resolutionModel) start(x *resExpect) {
	m.running, m.waiting, m.retryTimer = true, false, 0
	m.cand, m.n = 0, 0
	m.dialSentinel(x)
}

func (m *resolutionModel) dialSentinel(x *resExpect) {
	m.stage, m.asking, m.peers, m.rep = "sentinel", "", false, report{}
	x.dials = append(x.dials, dialKey(m.known()[m.cand], m.n))
}

// fail handles the failure of the current candidate.
func (m *resolutionModel) fail(ev *Event, x *resExpect) {
	m.conn = 0
	known := m.known()
	switch {
	case m.cand+1 >= len(known):
		m.end(OutcomeFailed, ev, x)
	case m.policy == nil:
		m.cand++
		m.dialSentinel(x)
	case m.policy.MaxAttempts > 0 && m.n >= m.policy.MaxAttempts:
		x.exhausted = true
		m.end(OutcomeExhausted, ev, x)
	default:
		m.n++
		m.cand++
		x.attempts = append(x.attempts, dialKey(known[m.cand], m.n))
		lo, hi := oracleBand(m.policy, m.n)
		if m.policy.InitialDelay == 0 {
			// Zero initial delay stays zero: the fallback dials at once.
			m.dialSentinel(x)
			return
		}
		x.band = &[2]time.Duration{lo, hi}
		m.stage = "delay"
	}
}

// end ends the running resolution without a primary.
func (m *resolutionModel) end(outcome Outcome, ev *Event, x *resExpect) {
	m.running, m.stage = false, ""
	for w := range m.waiters {
		x.answers[w] = outcome
	}
	clear(m.waiters)
	m.failedRuns++
	m.restUntil, m.lastOutcome = ev.At+oracleRest(m.failedRuns), outcome
	if m.again {
		m.again, m.eventNeed = false, true
	}
	if !m.eventNeed {
		return
	}
	m.retries++
	var delay time.Duration
	if p := m.policy; p != nil {
		if p.MaxAttempts > 0 && m.retries-1 >= p.MaxAttempts {
			m.eventNeed, m.retries = false, 0
			return
		}
		delay = p.Delay(m.retries, ev.Draw)
	} else {
		delay = rediscoveryOracle(m.retries)
	}
	x.timers = append(x.timers, max(delay, 100*time.Millisecond))
	m.waiting = true
}

// succeed validates the current report.
func (m *resolutionModel) succeed(ev *Event, x *resExpect) {
	rep := m.rep
	// A Sentinel mid-failover pairs the new epoch with the old address: it vouches for nothing.
	if rep.epochKnown && !rep.inFailover && (!m.epochKnown || rep.epoch > m.epoch) {
		m.epoch, m.epochKnown = rep.epoch, true
	}
	changed := !m.primary.IsZero() && rep.primary != m.primary
	if m.live && changed {
		x.retire = append(x.retire, m.generation)
	}
	if !m.live || changed {
		m.generation++
		m.live = true
	}
	m.primary = rep.primary
	x.publish = &SentinelData{Primary: rep.primary, Epoch: m.epoch, EpochKnown: m.epochKnown, Generation: m.generation, Changed: changed}
	x.failover = changed
	for w := range m.waiters {
		x.answers[w] = OutcomeGranted
	}
	x.granted = rep.primary
	clear(m.waiters)
	m.running, m.stage, m.conn = false, "", 0
	m.eventNeed, m.retries = false, 0
	m.failedRuns, m.restUntil = 0, 0
	if m.again {
		m.again, m.eventNeed = false, true
		m.start(x)
	}
}

func (m *resolutionModel) learn(peers []Endpoint) {
	for _, p := range peers {
		if len(m.learned) >= 64 {
			return
		}
		if p.Host == "" || p.Port == 0 || slices.Contains(m.configured, p) || slices.Contains(m.learned, p) {
			continue
		}
		m.learned = append(m.learned, p)
	}
}

// judge decides on a complete report: the spec's epoch rule, from the model's own state.
func (m *resolutionModel) judge(ev *Event, x *resExpect) {
	rep := m.rep
	stale := rep.epochKnown && m.epochKnown && !m.primary.IsZero() && rep.primary != m.primary &&
		(rep.epoch <= m.epoch || rep.inFailover)
	if !rep.primary.Dialable() || stale {
		m.fail(ev, x)
		return
	}
	m.stage = "primary"
	x.dials = append(x.dials, dialKey(rep.primary, m.n))
}

// apply checks the effects of ev against the model's prediction and updates the model.
func (m *resolutionModel) apply(ev *Event, effects []Effect) {
	x := resExpect{answers: map[WaiterID]Outcome{}}
	owns := m.running && ev.Conn != 0 && ev.Conn == m.conn && m.stage != "delay"
	switch {
	case m.closed:
		if ev.Kind == Demanded {
			x.answers[ev.Waiter] = OutcomeClosed
		}
	case ev.Kind == Demanded:
		switch {
		case m.live:
			x.answers[ev.Waiter] = OutcomeGranted
			x.granted = m.primary
		case !m.running && ev.At < m.restUntil:
			// Callers do not start a resolution during the rest after a failed one.
			x.answers[ev.Waiter] = m.lastOutcome
		case len(m.waiters) >= m.maxWaiters:
			x.answers[ev.Waiter] = OutcomeOverflow
		default:
			m.waiters[ev.Waiter] = true
			if !m.running {
				m.start(&x)
			}
		}
	case ev.Kind == Withdrew:
		if m.waiters[ev.Waiter] {
			delete(m.waiters, ev.Waiter)
			x.answers[ev.Waiter] = OutcomeCancelled
			if m.running && len(m.waiters) == 0 && !m.eventNeed && !m.again {
				m.running, m.stage, m.conn = false, "", 0
			}
		}
	case ev.Kind == RediscoveryRequested:
		if m.running {
			m.again = true
		} else {
			m.eventNeed = true
			m.start(&x)
		}
	case ev.Kind == PrimaryFailed:
		if m.live && ev.Sentinel.Generation == m.generation {
			m.live = false
			x.retire = append(x.retire, m.generation)
		}
	case ev.Kind == HandshakeDone && owns:
		switch m.stage {
		case "sentinel":
			m.stage, m.asking = "asking", "master"
			x.queries = append(x.queries, SentinelQueryPrimary)
			if len(m.learned) < 64 {
				m.peers = true
				x.queries = append(x.queries, SentinelQueryPeers)
			}
		case "primary":
			m.stage = "role"
			x.queries = append(x.queries, SentinelQueryRole)
		}
	case (ev.Kind == DialFailed || ev.Kind == ConnLost) && owns:
		m.fail(ev, &x)
	case ev.Kind == Answered && owns:
		m.answered(ev, &x)
	case ev.Kind == TimerFired:
		switch {
		case m.running && m.stage == "delay" && ev.Timer == m.timer:
			m.dialSentinel(&x)
		case m.waiting && ev.Timer == m.retryTimer:
			m.start(&x)
		}
	case ev.Kind == Disposed:
		m.closed, m.running, m.waiting = true, false, false
		for w := range m.waiters {
			x.answers[w] = OutcomeClosed
		}
		clear(m.waiters)
	}
	m.check(ev, effects, &x)
}

func (m *resolutionModel) answered(ev *Event, x *resExpect) {
	d := ev.Sentinel
	switch {
	case m.stage == "role" && d.Query == SentinelQueryRole:
		if ev.Err != nil || d.Role != RolePrimary {
			m.fail(ev, x)
		} else {
			m.succeed(ev, x)
		}
		return
	case m.stage != "asking":
		return
	case d.Query == SentinelQueryPeers && m.peers:
		m.peers = false
		if ev.Err == nil {
			m.learn(d.Peers)
		}
	case d.Query == SentinelQueryPrimary && m.asking == "master", d.Query == SentinelQueryPrimaryAddr && m.asking == "addr":
		if ev.Err != nil && d.Denied && d.Query == SentinelQueryPrimary {
			x.warn = !m.warned
			m.warned, m.asking = true, "addr"
			x.queries = append(x.queries, SentinelQueryPrimaryAddr)
			return
		}
		if ev.Err != nil {
			m.fail(ev, x)
			return
		}
		m.asking = ""
		m.rep = report{primary: d.Primary, epoch: d.Epoch, epochKnown: d.EpochKnown && d.Query == SentinelQueryPrimary,
			inFailover: d.InFailover && d.Query == SentinelQueryPrimary}
	default:
		return
	}
	if m.asking == "" && !m.peers {
		m.judge(ev, x)
	}
}

// check compares the step's effects with the prediction, then records the identifiers the
// machine allocated.
func (m *resolutionModel) check(ev *Event, effects []Effect, x *resExpect) {
	var dials, attempts []string
	var queries []SentinelQuery
	var timers []time.Duration
	var retire []uint64
	var publish *SentinelData
	answers := map[WaiterID]Outcome{}
	exhausted, failover, warn := false, false, false
	for _, f := range effects {
		switch f.Kind {
		case Dial:
			dials = append(dials, dialKey(f.Endpoint, f.Attempt))
			m.allConns = append(m.allConns, f.Conn)
			m.conn = f.Conn
		case Query:
			queries = append(queries, f.Sentinel.Query)
			if f.Conn != m.conn {
				m.t.Fatalf("%v: query on %v, the candidate's connection is %v", ev, f.Conn, m.conn)
			}
		case ArmTimer:
			timers = append(timers, f.After)
			m.allTimers = append(m.allTimers, f.Timer)
			if m.waiting && !m.running {
				m.retryTimer = f.Timer
			} else {
				m.timer = f.Timer
			}
		case Publish:
			publish = f.Sentinel
			if f.Endpoint != f.Sentinel.Primary {
				m.t.Fatalf("%v: publish of %v carries %v", ev, f.Endpoint, f.Sentinel.Primary)
			}
			if !slices.Equal(f.Sentinel.Peers, m.known()) {
				m.t.Fatalf("%v: publish lists Sentinels %v, want %v", ev, f.Sentinel.Peers, m.known())
			}
		case Retire:
			retire = append(retire, f.Sentinel.Generation)
		case Complete:
			if _, dup := answers[f.Waiter]; dup {
				m.t.Fatalf("%v: waiter %d answered twice", ev, f.Waiter)
			}
			answers[f.Waiter] = f.Outcome
			if f.Outcome == OutcomeGranted && f.Endpoint != x.granted {
				m.t.Fatalf("%v: granted %v, want %v", ev, f.Endpoint, x.granted)
			}
		case Record:
			switch f.Metric.Instrument {
			case InstrumentExhausted:
				exhausted = true
			case InstrumentSentinelFailover:
				failover = true
			case InstrumentAttempt:
				attempts = append(attempts, dialKey(f.Endpoint, int(f.Metric.Value)))
			}
			if f.Metric.Instrument != InstrumentSentinelFailover && f.Metric.Scope != ScopeSentinelDiscovery {
				m.t.Fatalf("%v: measurement outside the sentinel-discovery scope: %v", ev, f)
			}
		case Warn:
			warn = true
		}
	}
	wantTimers := x.timers
	if x.band != nil {
		if len(timers) != 1+len(x.timers) || timers[0] < x.band[0] || timers[0] > x.band[1] {
			m.t.Fatalf("%v: timers %v, want one in [%v, %v] then %v", ev, timers, x.band[0], x.band[1], x.timers)
		}
		timers = timers[1:]
	}
	fail := func(what string, got, want any) {
		m.t.Fatalf("%v: %s %v, want %v\neffects: %v", ev, what, got, want, effects)
	}
	switch {
	case !slices.Equal(dials, x.dials):
		fail("dials", dials, x.dials)
	case !slices.Equal(queries, x.queries):
		fail("queries", queries, x.queries)
	case !slices.Equal(timers, wantTimers):
		fail("timers", timers, wantTimers)
	case !slices.Equal(retire, x.retire):
		fail("retired generations", retire, x.retire)
	case exhausted != x.exhausted:
		fail("exhausted", exhausted, x.exhausted)
	case failover != x.failover:
		fail("failover measured", failover, x.failover)
	case warn != x.warn:
		fail("warning", warn, x.warn)
	case !slices.Equal(attempts, x.attempts):
		fail("attempt measurements", attempts, x.attempts)
	case fmt.Sprint(answers) != fmt.Sprint(x.answers):
		fail("answers", answers, x.answers)
	case (publish == nil) != (x.publish == nil):
		fail("publish", publish, x.publish)
	}
	if publish != nil {
		p, w := *publish, *x.publish
		if p.Primary != w.Primary || p.Epoch != w.Epoch || p.EpochKnown != w.EpochKnown ||
			p.Generation != w.Generation || p.Changed != w.Changed {
			fail("publish", p, w)
		}
		m.published++
	}
	if m.closed {
		for _, f := range effects {
			if f.Kind == Dial || f.Kind == ArmTimer || f.Kind == Query || f.Kind == Publish {
				m.t.Fatalf("%v: %v after disposal", ev, f)
			}
		}
	}
}

var (
	propSentinels = []Endpoint{ep(1), ep(2), ep(3), ep(4), ep(5), ep(6)}
	propPrimaries = []Endpoint{primaryEP(1), primaryEP(2), primaryEP(3), {}}
	propErrs      = []error{errors.New("refused"), errors.New("timeout"), errors.New("malformed")}
)

// drawResolutionConfig draws 1 to 3 configured Sentinels and a policy (or none).
func drawResolutionConfig(t *rapid.T) ResolutionConfig {
	k := rapid.IntRange(1, 3).Draw(t, "configured")
	cfg := ResolutionConfig{Sentinels: propSentinels[:k], MaxWaiters: rapid.IntRange(0, 3).Draw(t, "waiters")}
	if rapid.IntRange(0, 2).Draw(t, "policy") > 0 {
		cfg.Policy = &Policy{
			InitialDelay: time.Duration(rapid.IntRange(0, 300).Draw(t, "initial")) * time.Millisecond,
			JitterRatio:  rapid.SampledFrom([]float64{0, 0.5}).Draw(t, "jitter"),
			MaxAttempts:  rapid.IntRange(0, 3).Draw(t, "attempts"),
		}
	}
	return cfg
}

// TestResolutionProperties steps random timelines into a Resolution: callers, withdrawals, the
// monitor's requests, primary failures, connection outcomes, every kind of answer (stale epochs,
// refusals, NOPERM, unusable addresses, replicas, peers beyond the bound), timers and disposal;
// it checks each step against the model, then replays the journal into a fresh machine.
func TestResolutionProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := drawResolutionConfig(t)
		r := NewResolution(cfg)
		maxWaiters := cfg.MaxWaiters
		if maxWaiters == 0 {
			maxWaiters = DefaultMaxWaiters
		}
		m := &resolutionModel{t: t, policy: cfg.Policy, configured: cfg.Sentinels, maxWaiters: maxWaiters, waiters: map[WaiterID]bool{}}
		var (
			out     Outbox
			journal []Event
			trace   []string
			now     time.Duration
		)
		step := func(ev Event) {
			now += time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "advance"))
			ev.At, ev.Draw, ev.Machine = now, rapid.Float64Range(0, 0.999999).Draw(t, "draw"), MachineSentinel
			out.Reset()
			r.Step(&ev, &out)
			m.apply(&ev, out.Effects)
			journal = append(journal, ev)
			for i := range out.Effects {
				trace = append(trace, out.Effects[i].String())
			}
		}
		answer := func(q SentinelQuery) Event {
			ev := Event{Kind: Answered, Conn: m.conn}
			d := &SentinelData{Query: q}
			ev.Sentinel = d
			if rapid.IntRange(0, 5).Draw(t, "answer-error") == 0 {
				ev.Err = rapid.SampledFrom(propErrs).Draw(t, "err")
				return ev
			}
			switch q {
			case SentinelQueryPrimary:
				if rapid.IntRange(0, 5).Draw(t, "denied") == 0 {
					d.Denied, ev.Err = true, errors.New("NOPERM")
					return ev
				}
				d.Primary = rapid.SampledFrom(propPrimaries).Draw(t, "primary")
				d.Epoch, d.EpochKnown = uint64(rapid.IntRange(0, 3).Draw(t, "epoch")), rapid.IntRange(0, 5).Draw(t, "no-epoch") > 0
				d.InFailover = rapid.IntRange(0, 4).Draw(t, "in-failover") == 0
			case SentinelQueryPrimaryAddr:
				d.Primary = rapid.SampledFrom(propPrimaries).Draw(t, "primary")
			case SentinelQueryPeers:
				if rapid.IntRange(0, 20).Draw(t, "many-peers") == 0 {
					for i := 0; i < 70; i++ {
						d.Peers = append(d.Peers, MakeEndpoint("10.3.0."+strconv.Itoa(i), 26379))
					}
				} else {
					d.Peers = rapid.SliceOfNDistinct(rapid.SampledFrom(propSentinels), 0, 4, func(e Endpoint) string { return e.String() }).Draw(t, "peers")
				}
			case SentinelQueryRole:
				d.Role = rapid.SampledFrom([]Role{RolePrimary, RolePrimary, RoleReplica, RoleUnknown}).Draw(t, "role")
			}
			return ev
		}
		steps := rapid.IntRange(1, 150).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			switch rapid.IntRange(0, 13).Draw(t, "action") {
			case 0:
				m.nextWaiter++
				step(Event{Kind: Demanded, Waiter: m.nextWaiter})
			case 1:
				if ws := sortedIDs(m.waiters); len(ws) > 0 && rapid.IntRange(0, 2).Draw(t, "withdraw") == 0 {
					step(Event{Kind: Withdrew, Waiter: rapid.SampledFrom(ws).Draw(t, "waiter")})
				}
			case 2:
				step(Event{Kind: RediscoveryRequested, Sentinel: &triggerData[rapid.IntRange(1, 4).Draw(t, "trigger")]})
			case 3:
				g := uint64(rapid.IntRange(0, int(m.generation)+1).Draw(t, "generation"))
				step(Event{Kind: PrimaryFailed, Sentinel: &SentinelData{Generation: g}, Err: errors.New("READONLY")})
			case 4, 5, 6:
				if m.running && m.conn != 0 && (m.stage == "sentinel" || m.stage == "primary") {
					if rapid.IntRange(0, 3).Draw(t, "dial-fails") == 0 {
						step(Event{Kind: DialFailed, Conn: m.conn, Err: rapid.SampledFrom(propErrs).Draw(t, "err")})
					} else {
						step(Event{Kind: HandshakeDone, Conn: m.conn})
					}
				}
			case 7, 8, 9:
				switch {
				case m.running && m.stage == "asking" && m.asking != "" && (!m.peers || rapid.Bool().Draw(t, "primary-first")):
					q := SentinelQueryPrimary
					if m.asking == "addr" {
						q = SentinelQueryPrimaryAddr
					}
					step(answer(q))
				case m.running && m.stage == "asking" && m.peers:
					step(answer(SentinelQueryPeers))
				case m.running && m.stage == "role":
					step(answer(SentinelQueryRole))
				}
			case 10:
				if m.running && m.conn != 0 && m.stage != "delay" && rapid.IntRange(0, 3).Draw(t, "lose") == 0 {
					step(Event{Kind: ConnLost, Conn: m.conn, Err: errors.New("reset")})
				}
			case 11, 12:
				switch {
				case m.running && m.stage == "delay":
					step(Event{Kind: TimerFired, Timer: m.timer})
				case m.waiting:
					step(Event{Kind: TimerFired, Timer: m.retryTimer})
				case len(m.allTimers) > 0:
					step(Event{Kind: TimerFired, Timer: rapid.SampledFrom(m.allTimers).Draw(t, "stale-timer")})
				}
			case 13:
				// Noise: events for connections that are no longer the candidate's, and rare
				// disposal.
				if len(m.allConns) > 0 {
					c := rapid.SampledFrom(m.allConns).Draw(t, "stale-conn")
					if c != m.conn {
						step(Event{Kind: rapid.SampledFrom([]EventKind{HandshakeDone, ConnLost, Answered}).Draw(t, "stale-kind"),
							Conn: c, Sentinel: &SentinelData{Query: SentinelQueryRole, Role: RolePrimary}})
					}
				}
				if rapid.IntRange(0, 15).Draw(t, "dispose") == 0 {
					step(Event{Kind: Disposed})
				}
			}
		}
		step(Event{Kind: Disposed})
		if len(m.waiters) > 0 {
			t.Fatalf("%d callers never answered", len(m.waiters))
		}
		checkReplay(t, NewResolution(cfg), journal, trace)
	})
}

// TestResolutionPublicationsNeverRollBack: whatever the Sentinels report, in any order, each
// publication of another primary than the last comes with a newer known epoch (when both are
// known), published epochs never decrease, and generations only grow.
func TestResolutionPublicationsNeverRollBack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		A, B := ep(1), ep(2)
		r := NewResolution(ResolutionConfig{Sentinels: []Endpoint{A, B}})
		roles := map[Endpoint]Role{}
		for _, p := range propPrimaries[:3] {
			roles[p] = RolePrimary
		}
		var last *SentinelData
		for i := 0; i < rapid.IntRange(1, 20).Draw(t, "rounds"); i++ {
			w := sentinelWorld{sentinels: map[Endpoint]worldSentinel{}, roles: roles}
			for _, s := range []Endpoint{A, B} {
				w.sentinels[s] = worldSentinel{
					primary: rapid.SampledFrom(propPrimaries[:3]).Draw(t, "primary"),
					epoch:   uint64(rapid.IntRange(0, 5).Draw(t, "epoch")),
				}
			}
			var run worldRun
			_, g, _ := r.Primary()
			w.drive(r, &run, 3, Event{Kind: PrimaryFailed, Sentinel: &SentinelData{Generation: g}}, Event{Kind: Demanded, Waiter: WaiterID(i + 1)})
			for k := range run.published {
				p := run.published[k]
				if last != nil {
					if p.Epoch < last.Epoch || p.Generation <= last.Generation {
						t.Fatalf("publication %+v after %+v", p, *last)
					}
					if p.Primary != last.Primary && p.Epoch <= last.Epoch {
						t.Fatalf("rolled from %v (epoch %d) to %v (epoch %d)", last.Primary, last.Epoch, p.Primary, p.Epoch)
					}
				}
				last = &p
			}
		}
	})
}
