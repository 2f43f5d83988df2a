package fsm

import (
	"errors"

	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// watchModel is the model's account of one Sentinel's monitor.
type watchModel struct {
	phase    string // dialing, handshaking, ready, scheduled, exhausted, stopped
	conn     ConnID
	timer    TimerID
	n        int // attempt number
	failures int // consecutive failed attempts since the last success
	acked    map[string]bool
	gap      bool
	renewed  bool
}

// monitorModel is an independent model of a Monitor, written from the spec's monitor rules.
type monitorModel struct {
	t          *rapid.T
	policy     *Policy
	configured []Endpoint
	name       string

	started  bool
	watches  map[Endpoint]*watchModel
	order    []Endpoint
	byConn   map[ConnID]Endpoint
	byTimer  map[TimerID]Endpoint
	due      map[TimerID]time.Duration
	requests []time.Duration // when each Rediscover went out

	requested   bool
	lastRequest time.Duration
	throttle    TimerID

	disposing bool
	closed    bool
	closing   map[ConnID]bool
	grace     TimerID
	disposer  WaiterID

	allConns  []ConnID
	allTimers []TimerID
}

// monExpect is what one step must show.
type monExpect struct {
	dials      []string
	subscribes []Endpoint
	timers     []string // "what" for each armed timer: "watch:<ep>", "throttle", "grace"
	bands      map[Endpoint][2]time.Duration
	exactAfter map[string]time.Duration
	rediscover int
	exhausted  int
	warnings   []Warning
	closes     int
	complete   WaiterID
}

func (m *monitorModel) request(at time.Duration, x *monExpect) {
	switch {
	case m.throttle != 0:
	case !m.requested || at-m.lastRequest >= 100*time.Millisecond:
		m.requested, m.lastRequest = true, at
		x.rediscover++
	default:
		x.timers = append(x.timers, "throttle")
		x.exactAfter["throttle"] = m.lastRequest + 100*time.Millisecond - at
		m.throttle = 1 // the identifier is learned from the effect
	}
}

func (m *monitorModel) dial(e Endpoint, w *watchModel, x *monExpect) {
	w.phase, w.acked = "dialing", map[string]bool{}
	x.dials = append(x.dials, dialKey(e, w.n))
}

func (m *monitorModel) startWatch(e Endpoint, x *monExpect) {
	if !e.Dialable() || len(m.order) >= MaxSentinels+MaxLearnedSentinels || m.watches[e] != nil {
		return
	}
	w := &watchModel{}
	m.watches[e] = w
	m.order = append(m.order, e)
	m.dial(e, w, x)
}

// next schedules a watch's next attempt.
func (m *monitorModel) next(e Endpoint, w *watchModel, x *monExpect) {
	key := "watch:" + e.String()
	if p := m.policy; p != nil {
		w.n++
		if p.InitialDelay == 0 {
			m.dial(e, w, x)
			return
		}
		lo, hi := oracleBand(p, w.n)
		x.bands[e] = [2]time.Duration{lo, hi}
	} else {
		rest := oracleRest(w.failures)
		if w.failures == 0 {
			rest = 0
		}
		if rest == 0 {
			m.dial(e, w, x)
			return
		}
		x.exactAfter[key] = rest
	}
	w.phase = "scheduled"
	x.timers = append(x.timers, key)
}

func (m *monitorModel) failed(e Endpoint, w *watchModel, x *monExpect) {
	w.gap = true
	delete(m.byConn, w.conn)
	w.conn = 0
	if w.phase == "ready" {
		w.n, w.failures = 0, 0
		m.next(e, w, x)
		return
	}
	w.failures++
	if p := m.policy; p != nil && p.MaxAttempts > 0 && w.n >= p.MaxAttempts {
		w.phase = "exhausted"
		x.exhausted++
		x.warnings = append(x.warnings, WarningMonitorExhausted)
		if w.renewed {
			w.renewed, w.n, w.failures = false, 0, 0
			m.dial(e, w, x)
		}
		return
	}
	m.next(e, w, x)
}

func (m *monitorModel) watchOf(c ConnID) (Endpoint, *watchModel) {
	e, ok := m.byConn[c]
	if !ok || c == 0 {
		return Endpoint{}, nil
	}
	return e, m.watches[e]
}

func (m *monitorModel) apply(ev *Event, effects []Effect) {
	x := monExpect{bands: map[Endpoint][2]time.Duration{}, exactAfter: map[string]time.Duration{}}
	switch {
	case m.closed:
	case m.disposing:
		switch ev.Kind {
		case DialFailed, ConnLost:
			if m.closing[ev.Conn] {
				delete(m.closing, ev.Conn)
				if len(m.closing) == 0 {
					m.closed, x.complete = true, m.disposer
				}
			}
		case TimerFired:
			if ev.Timer == m.grace {
				m.closed, x.complete = true, m.disposer
				x.warnings = append(x.warnings, WarningMonitorDisposal)
			}
		}
	case ev.Kind == Published:
		if !m.started {
			m.started = true
			for _, s := range m.configured {
				m.startWatch(s, &x)
			}
		} else {
			for _, e := range m.order {
				switch w := m.watches[e]; w.phase {
				case "exhausted":
					w.n, w.failures, w.renewed = 0, 0, false
					m.dial(e, w, &x)
				case "scheduled", "dialing", "handshaking":
					w.renewed = true
				}
			}
		}
		for _, s := range ev.Sentinel.Peers {
			m.startWatch(s, &x)
		}
	case ev.Kind == Disposed:
		m.disposing, m.disposer = true, ev.Waiter
		m.closing = map[ConnID]bool{}
		for _, e := range m.order {
			if w := m.watches[e]; w.conn != 0 {
				m.closing[w.conn] = true
				x.closes++
			}
		}
		if len(m.closing) == 0 {
			m.closed, x.complete = true, ev.Waiter
		} else {
			x.timers = append(x.timers, "grace")
			x.exactAfter["grace"] = 10 * time.Second
		}
	case ev.Kind == HandshakeDone:
		if e, w := m.watchOf(ev.Conn); w != nil && w.phase == "dialing" {
			w.phase = "handshaking"
			x.subscribes = append(x.subscribes, e)
		}
	case ev.Kind == Acked:
		if _, w := m.watchOf(ev.Conn); w != nil && w.phase == "handshaking" {
			w.acked[ev.Topic.Name] = true
			if len(w.acked) == 3 {
				w.phase, w.n, w.failures, w.renewed = "ready", 0, 0, false
				if w.gap {
					w.gap = false
					m.request(ev.At, &x)
				}
			}
		}
	case ev.Kind == Rejected:
		if e, w := m.watchOf(ev.Conn); w != nil && w.phase == "handshaking" {
			x.closes++
			m.failed(e, w, &x)
		}
	case ev.Kind == DialFailed || ev.Kind == ConnLost:
		if e, w := m.watchOf(ev.Conn); w != nil {
			m.failed(e, w, &x)
		}
	case ev.Kind == Notified:
		_, w := m.watchOf(ev.Conn)
		msg := ev.Sentinel.Message
		relevant := msg.Primary == m.name && (msg.Kind == MessageSwitchPrimary ||
			(msg.Instance == InstancePrimary && (msg.Kind == MessageSubjectivelyDown || msg.Kind == MessageObjectivelyDown)))
		if w != nil && (w.phase == "handshaking" || w.phase == "ready") && relevant {
			m.request(ev.At, &x)
		}
	case ev.Kind == TimerFired:
		if ev.Timer != 0 && ev.Timer == m.throttle {
			m.throttle = 0
			m.requested, m.lastRequest = true, ev.At
			x.rediscover++
		} else if e, ok := m.byTimer[ev.Timer]; ok {
			if w := m.watches[e]; w.phase == "scheduled" && w.timer == ev.Timer {
				m.dial(e, w, &x)
			}
		}
	}
	m.check(ev, effects, &x)
}

// check compares the effects with the prediction and learns the identifiers they carry.
func (m *monitorModel) check(ev *Event, effects []Effect, x *monExpect) {
	var dials []string
	var subscribes []Endpoint
	var warnings []Warning
	rediscover, exhausted, closes := 0, 0, 0
	var complete WaiterID
	timers := 0
	for _, f := range effects {
		switch f.Kind {
		case Dial:
			dials = append(dials, dialKey(f.Endpoint, f.Attempt))
			w := m.watches[f.Endpoint]
			if w == nil {
				m.t.Fatalf("%v: dial of an unwatched %v", ev, f.Endpoint)
			}
			w.conn = f.Conn
			m.byConn[f.Conn] = f.Endpoint
			m.allConns = append(m.allConns, f.Conn)
		case Subscribe:
			subscribes = append(subscribes, f.Endpoint)
			if len(f.Topics) != 3 || f.Topics[0].Name != "+switch-master" || f.Topics[1].Name != "+sdown" || f.Topics[2].Name != "+odown" {
				m.t.Fatalf("%v: subscribes %v", ev, f.Topics)
			}
		case ArmTimer:
			if timers >= len(x.timers) {
				m.t.Fatalf("%v: unexpected timer %v\n%v", ev, f, effects)
			}
			what := x.timers[timers]
			timers++
			m.allTimers = append(m.allTimers, f.Timer)
			m.due[f.Timer] = ev.At + f.After
			switch {
			case what == "throttle":
				m.throttle = f.Timer
			case what == "grace":
				m.grace = f.Timer
			default:
				var e Endpoint
				for _, o := range m.order {
					if "watch:"+o.String() == what {
						e = o
					}
				}
				m.watches[e].timer = f.Timer
				m.byTimer[f.Timer] = e
				if b, ok := x.bands[e]; ok && (f.After < b[0] || f.After > b[1]) {
					m.t.Fatalf("%v: delay %v outside [%v, %v]", ev, f.After, b[0], b[1])
				}
			}
			if want, ok := x.exactAfter[what]; ok && f.After != want {
				m.t.Fatalf("%v: %s timer after %v, want %v", ev, what, f.After, want)
			}
		case Rediscover:
			rediscover++
			m.requests = append(m.requests, ev.At)
		case Record:
			if f.Metric.Instrument == InstrumentExhausted {
				exhausted++
			}
			if f.Metric.Scope != ScopeSentinelMonitor || f.Endpoint.IsZero() {
				m.t.Fatalf("%v: measurement %v without its scope or Sentinel", ev, f)
			}
		case Warn:
			warnings = append(warnings, f.Sentinel.Warning)
		case Close:
			closes++
		case Complete:
			complete = f.Waiter
		}
	}
	fail := func(what string, got, want any) {
		m.t.Fatalf("%v: %s %v, want %v\neffects: %v", ev, what, got, want, effects)
	}
	switch {
	case !slices.Equal(dials, x.dials):
		fail("dials", dials, x.dials)
	case !slices.Equal(subscribes, x.subscribes):
		fail("subscriptions", subscribes, x.subscribes)
	case timers != len(x.timers):
		fail("timers", timers, x.timers)
	case rediscover != x.rediscover:
		fail("rediscoveries", rediscover, x.rediscover)
	case exhausted != x.exhausted:
		fail("exhaustions", exhausted, x.exhausted)
	case !slices.Equal(warnings, x.warnings):
		fail("warnings", warnings, x.warnings)
	case closes != x.closes:
		fail("closes", closes, x.closes)
	case complete != x.complete:
		fail("completed waiter", complete, x.complete)
	}
	// However events arrive, rediscoveries go out at least 100 ms apart.
	if n := len(m.requests); n >= 2 && m.requests[n-1]-m.requests[n-2] < 100*time.Millisecond {
		m.t.Fatalf("rediscoveries at %v and %v", m.requests[n-2], m.requests[n-1])
	}
}

var propMessages = []SentinelMessage{
	{Kind: MessageSwitchPrimary, Instance: InstancePrimary, Primary: "mymaster"},
	{Kind: MessageSubjectivelyDown, Instance: InstancePrimary, Primary: "mymaster"},
	{Kind: MessageObjectivelyDown, Instance: InstancePrimary, Primary: "mymaster"},
	{Kind: MessageSubjectivelyDown, Instance: InstanceReplica, Primary: "mymaster"},
	{Kind: MessageSubjectivelyUp, Instance: InstancePrimary, Primary: "mymaster"},
	{Kind: MessageSwitchPrimary, Instance: InstancePrimary, Primary: "other"},
	{Kind: MessageObjectivelyDown, Instance: InstanceSentinel, Primary: "mymaster"},
}

// TestMonitorProperties steps random timelines into a Monitor: publications listing random
// Sentinels, connection outcomes, acknowledgements and rejections, Sentinel events of every
// kind, timers (stale ones too) and disposal with its waiter; it checks every step against the
// model, the 100 ms spacing of rediscoveries, and replays the journal.
func TestMonitorProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(1, 3).Draw(t, "configured")
		cfg := MonitorConfig{Sentinels: propSentinels[:k], PrimaryName: "mymaster", IDBase: IDBase(MachineSentinelMonitor)}
		if rapid.IntRange(0, 2).Draw(t, "policy") > 0 {
			cfg.Policy = &Policy{
				InitialDelay: time.Duration(rapid.IntRange(0, 300).Draw(t, "initial")) * time.Millisecond,
				JitterRatio:  rapid.SampledFrom([]float64{0, 0.5}).Draw(t, "jitter"),
				MaxAttempts:  rapid.IntRange(0, 3).Draw(t, "attempts"),
			}
		}
		mon := NewMonitor(cfg)
		m := &monitorModel{t: t, policy: cfg.Policy, configured: cfg.Sentinels, name: cfg.PrimaryName,
			watches: map[Endpoint]*watchModel{}, byConn: map[ConnID]Endpoint{}, byTimer: map[TimerID]Endpoint{}, due: map[TimerID]time.Duration{}}
		var (
			out     Outbox
			journal []Event
			trace   []string
			now     time.Duration
		)
		step := func(ev Event) {
			now += time.Duration(rapid.Int64Range(0, int64(200*time.Millisecond)).Draw(t, "advance"))
			if due, ok := m.due[ev.Timer]; ev.Kind == TimerFired && ok && now < due {
				now = due // a runtime never fires a timer early
			}
			ev.At, ev.Draw, ev.Machine = now, rapid.Float64Range(0, 0.999999).Draw(t, "draw"), MachineSentinelMonitor
			out.Reset()
			mon.Step(&ev, &out)
			m.apply(&ev, out.Effects)
			journal = append(journal, ev)
			for i := range out.Effects {
				trace = append(trace, out.Effects[i].String())
			}
		}
		inPhase := func(phases ...string) []Endpoint {
			var eps []Endpoint
			for _, e := range m.order {
				if slices.Contains(phases, m.watches[e].phase) && m.watches[e].conn != 0 {
					eps = append(eps, e)
				}
			}
			return eps
		}
		steps := rapid.IntRange(1, 150).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			switch rapid.IntRange(0, 11).Draw(t, "action") {
			case 0:
				peers := rapid.SliceOfNDistinct(rapid.SampledFrom(propSentinels), 0, 6, func(e Endpoint) string { return e.String() }).Draw(t, "peers")
				step(Event{Kind: Published, Sentinel: &SentinelData{Generation: 1, Primary: primaryEP(1), Peers: peers}})
			case 1, 2:
				if eps := inPhase("dialing"); len(eps) > 0 {
					w := m.watches[rapid.SampledFrom(eps).Draw(t, "watch")]
					if rapid.IntRange(0, 2).Draw(t, "dial-fails") == 0 {
						step(Event{Kind: DialFailed, Conn: w.conn, Err: errors.New("refused")})
					} else {
						step(Event{Kind: HandshakeDone, Conn: w.conn})
					}
				}
			case 3, 4:
				if eps := inPhase("handshaking"); len(eps) > 0 {
					w := m.watches[rapid.SampledFrom(eps).Draw(t, "watch")]
					topic := Topic{Kind: TopicChannel, Name: rapid.SampledFrom(MonitorChannels[:]).Draw(t, "channel")}
					if rapid.IntRange(0, 6).Draw(t, "reject") == 0 {
						step(Event{Kind: Rejected, Conn: w.conn, Topic: topic, Err: errors.New("NOPERM")})
					} else {
						step(Event{Kind: Acked, Conn: w.conn, Topic: topic})
					}
				}
			case 5:
				if eps := inPhase("handshaking", "ready"); len(eps) > 0 {
					w := m.watches[rapid.SampledFrom(eps).Draw(t, "watch")]
					step(Event{Kind: ConnLost, Conn: w.conn, Err: errors.New("reset")})
				}
			case 6, 7:
				if eps := inPhase("handshaking", "ready"); len(eps) > 0 {
					w := m.watches[rapid.SampledFrom(eps).Draw(t, "watch")]
					msg := rapid.SampledFrom(propMessages).Draw(t, "message")
					step(Event{Kind: Notified, Conn: w.conn, Sentinel: &SentinelData{Message: msg}})
				}
			case 8, 9:
				var armed []TimerID
				for _, e := range m.order {
					if w := m.watches[e]; w.phase == "scheduled" {
						armed = append(armed, w.timer)
					}
				}
				if m.throttle != 0 {
					armed = append(armed, m.throttle)
				}
				if m.disposing && !m.closed {
					armed = append(armed, m.grace)
				}
				switch {
				case len(armed) > 0:
					step(Event{Kind: TimerFired, Timer: rapid.SampledFrom(armed).Draw(t, "timer")})
				case len(m.allTimers) > 0:
					step(Event{Kind: TimerFired, Timer: rapid.SampledFrom(m.allTimers).Draw(t, "stale-timer")})
				}
			case 10:
				if m.disposing && len(m.closing) > 0 {
					cs := sortedIDs(m.closing)
					step(Event{Kind: ConnLost, Conn: rapid.SampledFrom(cs).Draw(t, "closed")})
				} else if len(m.allConns) > 0 {
					c := rapid.SampledFrom(m.allConns).Draw(t, "stale-conn")
					if _, w := m.watchOf(c); w == nil || w.conn != c {
						step(Event{Kind: ConnLost, Conn: c, Err: errors.New("late")})
					}
				}
			case 11:
				if rapid.IntRange(0, 12).Draw(t, "dispose") == 0 {
					step(Event{Kind: Disposed, Waiter: WaiterID(rapid.IntRange(0, 2).Draw(t, "disposer"))})
				}
			}
			// An exhausted watch only dials again after a publication (checked by the model's
			// dial list); the phases agree with the machine's.
			eps, phases := mon.Watches()
			if !slices.Equal(eps, m.order) {
				t.Fatalf("watches %v, model %v", eps, m.order)
			}
			for j, e := range eps {
				if want := m.watches[e].phase; !m.disposing && want != phases[j] {
					t.Fatalf("watch %v is %s, model %s", e, phases[j], want)
				}
			}
		}
		checkReplay(t, NewMonitor(cfg), journal, trace)
	})
}
