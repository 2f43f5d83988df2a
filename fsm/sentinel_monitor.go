package fsm

import (
	"strconv"
	"strings"
	"time"
)

// MonitorConfig configures a Monitor. Validate checks it; NewMonitor refuses an invalid one.
type MonitorConfig struct {
	// Sentinels are the configured Sentinels (the Resolution's list): 1 to MaxSentinels
	// distinct, dialable endpoints in canonical form. The monitor also watches the peers each
	// publication lists.
	Sentinels []Endpoint
	// PrimaryName is the name the Sentinels monitor the primary under: 1 to
	// MaxPrimaryNameLength bytes without spaces or control characters (Sentinel events separate
	// their fields with spaces). Events about other names are ignored.
	PrimaryName string
	// Policy is the reconnect policy of the monitors' connections, or nil for the no-policy
	// schedule (NoPolicyWait). It must be valid.
	Policy *Policy
	// IDBase offsets the machine's ConnIDs and TimerIDs (use IDBase(MachineSentinelMonitor); it
	// must be some machine's IDBase).
	IDBase uint64
}

// Validate reports the first invalid field of c, or nil. NewMonitor panics with this error.
func (c *MonitorConfig) Validate() error {
	bad := func(field, reason string) error {
		return &ConfigError{Config: "MonitorConfig", Field: field, Reason: reason}
	}
	if reason := validSentinels(c.Sentinels); reason != "" {
		return bad("Sentinels", reason)
	}
	switch {
	case c.PrimaryName == "":
		return bad("PrimaryName", "must not be empty")
	case len(c.PrimaryName) > MaxPrimaryNameLength:
		return bad("PrimaryName", "must be at most "+strconv.Itoa(MaxPrimaryNameLength)+" bytes")
	case strings.IndexFunc(c.PrimaryName, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return bad("PrimaryName", "must not contain spaces or control characters")
	case !isIDBase(c.IDBase):
		return bad("IDBase", "must be the IDBase of a machine")
	}
	return validatePolicy("MonitorConfig", c.Policy)
}

// maxWatches bounds the Sentinels a Monitor watches: the configured ones and the learned ones.
const maxWatches = MaxSentinels + MaxLearnedSentinels

// allChannels has a bit set for each of MonitorChannels.
const allChannels = 1<<len(MonitorChannels) - 1

// watch is the monitor of one Sentinel: a subscription connection to MonitorChannels.
type watch struct {
	addr Endpoint
	// a is the subscription's attempt sub-machine: dialing, then handshaking while the
	// subscriptions await their acknowledgements, ready while watching, scheduled or resting
	// before a replacement, exhausted (until a renewal), stopped at disposal.
	a attempt
	// acked has a bit per channel of MonitorChannels acknowledged on the current connection.
	acked uint8
	// gap records that the watch may have missed events since it last watched: a loss or a
	// failed attempt. Its next subscription then asks for one rediscovery.
	gap bool
}

// monitorPhase is where a Monitor stands.
type monitorPhase uint8

const (
	// monitorWaiting: no primary was validated yet, so nothing is watched.
	monitorWaiting monitorPhase = iota
	// monitorWatching: every known Sentinel has a watch.
	monitorWatching
	// monitorDisposing: disposal closed the watches and waits for their connections to end, at
	// most MonitorDisposalGrace.
	monitorDisposing
	// monitorClosed: terminal.
	monitorClosed
)

var monitorPhaseNames = [...]string{"waiting", "watching", "disposing", "closed"}

// Monitor is the Sentinel event monitor: after the first validated primary, it subscribes to
// +switch-master, +sdown and +odown on every known Sentinel, one connection each, and asks the
// Resolution to rediscover when one of them may mean a failover.
//
// Rules (spec "Sentinel discovery fallback" on monitors, "Redis Sentinel"):
//   - The first Published starts a watch on every configured Sentinel and every Sentinel the
//     publication lists; later publications add the Sentinels learned since.
//   - A +switch-master for the primary's name, or a +sdown or +odown of the primary itself,
//     asks for a rediscovery (Rediscover). So does a watch that subscribes again after a window
//     in which it could have missed events (a reconnect, a failed attempt): once per window.
//     Requests are at least RediscoveryInterval apart; one that comes sooner is deferred to
//     that time, and requests that arrive while one is deferred are covered by it.
//   - Each watch reconnects under the policy (scope sentinel-monitor, tagged with its
//     Sentinel): the initial subscription is attempt 0 and MaxAttempts counts replacements, so
//     a failed initial subscription still gets a retry. Without a policy, a lost subscription
//     is replaced at once and failed attempts rest 250 ms doubling up to 5 s, without limit. A
//     rejected subscription closes its connection and counts as a failed attempt.
//   - An exhausted watch stops and warns (WarningMonitorExhausted); the Resolution still runs on
//     demand. Every Published renews it: an exhausted watch starts over at once, and one still
//     spending its retries starts over as soon as it exhausts.
//   - Disposal closes every watch and waits for their connections to end (the runtime reports
//     each closed connection's end as ConnLost or DialFailed), at most MonitorDisposalGrace
//     (WarningMonitorDisposal); then it completes the Disposed event's waiter, if any.
type Monitor struct {
	cfg     MonitorConfig
	ids     ids
	rules   attemptRules
	phase   monitorPhase
	watches []watch
	topics  []Topic
	// The rediscovery requests: when the last went out, and the deferred one (throttle, with the
	// trigger it carries).
	lastRequest time.Duration
	requested   bool
	throttle    TimerID
	deferred    SentinelTrigger
	// Disposal: the connections still to end, the deadline's timer and the waiter to answer.
	closing  []ConnID
	grace    TimerID
	disposer WaiterID
}

// NewMonitor returns a Sentinel event monitor for cfg. It panics with cfg.Validate's
// *ConfigError when cfg is invalid.
func NewMonitor(cfg MonitorConfig) *Monitor {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg.Sentinels = append([]Endpoint(nil), cfg.Sentinels...)
	m := &Monitor{cfg: cfg, ids: newIDs(cfg.IDBase, 0)}
	m.rules = attemptRules{policy: cfg.Policy, backoff: noPolicyBackoff(), source: SourceUnspecified,
		scope: ScopeSentinelMonitor, ids: &m.ids}
	for _, ch := range MonitorChannels {
		m.topics = append(m.topics, Topic{Kind: TopicChannel, Name: ch})
	}
	return m
}

// Phase returns the machine's phase for tests and traces: "waiting", "watching", "disposing" or
// "closed".
func (m *Monitor) Phase() string { return monitorPhaseNames[m.phase] }

// Watches returns the watched Sentinels and each watch's phase ("dialing", "handshaking",
// "ready", "scheduled", "exhausted", ...), in the order they started.
func (m *Monitor) Watches() ([]Endpoint, []string) {
	eps := make([]Endpoint, len(m.watches))
	phases := make([]string, len(m.watches))
	for i := range m.watches {
		eps[i], phases[i] = m.watches[i].addr, m.watches[i].a.phase.String()
	}
	return eps, phases
}

// Step applies ev and appends the resulting effects to out.
func (m *Monitor) Step(ev *Event, out *Outbox) {
	switch m.phase {
	case monitorClosed:
		return
	case monitorDisposing:
		m.stepDisposing(ev, out)
		return
	}
	switch ev.Kind {
	case Published:
		m.published(ev, out)
	case Disposed:
		m.dispose(ev, out)
	case HandshakeDone:
		if w := m.byConn(ev.Conn); w != nil && w.a.phase == attemptDialing {
			w.a.becomeHandshaking()
			w.acked = 0
			out.add(Effect{Kind: Subscribe, Slot: -1, Conn: w.a.conn, Topics: m.topics, Endpoint: w.addr})
		}
	case Acked:
		if w := m.byConn(ev.Conn); w != nil && w.a.phase == attemptHandshaking {
			m.acked(w, ev, out)
		}
	case Rejected:
		if w := m.byConn(ev.Conn); w != nil && w.a.phase == attemptHandshaking {
			out.add(Effect{Kind: Close, Conn: w.a.conn})
			m.failed(w, ev, out)
		}
	case DialFailed, ConnLost:
		if w := m.byConn(ev.Conn); w != nil {
			m.failed(w, ev, out)
		}
	case Notified:
		w := m.byConn(ev.Conn)
		if w == nil || ev.Sentinel == nil || (w.a.phase != attemptHandshaking && w.a.phase != attemptReady) {
			return
		}
		if t := m.triggerOf(&ev.Sentinel.Message); t != TriggerNone {
			m.request(t, ev.At, out)
		}
	case TimerFired:
		m.timerFired(ev, out)
	}
}

// byConn returns the watch whose connection is c, or nil.
func (m *Monitor) byConn(c ConnID) *watch {
	if c == 0 {
		return nil
	}
	for i := range m.watches {
		if m.watches[i].a.conn == c {
			return &m.watches[i]
		}
	}
	return nil
}

// triggerOf returns the trigger a Sentinel event is, or TriggerNone when it says nothing about a
// failover of the primary.
func (m *Monitor) triggerOf(msg *SentinelMessage) SentinelTrigger {
	if msg.Primary != m.cfg.PrimaryName {
		return TriggerNone
	}
	switch {
	case msg.Kind == MessageSwitchPrimary:
		return TriggerSwitchPrimary
	case msg.Kind == MessageSubjectivelyDown && msg.Instance == InstancePrimary:
		return TriggerSubjectivelyDown
	case msg.Kind == MessageObjectivelyDown && msg.Instance == InstancePrimary:
		return TriggerObjectivelyDown
	}
	return TriggerNone
}

// published starts or renews the watches.
func (m *Monitor) published(ev *Event, out *Outbox) {
	if m.phase == monitorWaiting {
		m.becomeWatching()
		for _, s := range m.cfg.Sentinels {
			m.watch(s, out)
		}
	} else {
		// A validated publication renews every watch's budget.
		for i := range m.watches {
			if w := &m.watches[i]; w.a.renew() {
				m.dial(w, out)
			}
		}
	}
	if ev.Sentinel != nil {
		for _, s := range ev.Sentinel.Peers {
			m.watch(Endpoint{Host: CanonicalHost(s.Host), Port: s.Port}, out)
		}
	}
}

// watch starts watching s, unless it is watched already, is not dialable, or the bound is
// reached.
func (m *Monitor) watch(s Endpoint, out *Outbox) {
	if !s.Dialable() || s.Port > 65535 || len(m.watches) >= maxWatches {
		return
	}
	for i := range m.watches {
		if m.watches[i].addr == s {
			return
		}
	}
	m.watches = append(m.watches, watch{addr: s})
	w := &m.watches[len(m.watches)-1]
	w.a = newAttempt(&m.rules, -1, 0)
	m.dial(w, out)
}

// dial starts w's attempt at once.
func (m *Monitor) dial(w *watch, out *Outbox) {
	from := len(out.Effects)
	w.a.becomeDialing(out)
	if w.a.n == 0 {
		w.a.emit(Lifecycle{SourceState: SourceConnecting}, out)
	}
	tagEndpoint(out, from, w.addr)
}

func (m *Monitor) acked(w *watch, ev *Event, out *Outbox) {
	for i := range m.topics {
		if ev.Topic == m.topics[i] {
			w.acked |= 1 << i
		}
	}
	if w.acked != allChannels {
		return
	}
	attempt := w.a.n
	w.a.becomeReady()
	from := len(out.Effects)
	w.a.emit(Lifecycle{SourceState: SourceConnected, Attempt: attempt}, out)
	tagEndpoint(out, from, w.addr)
	if w.gap {
		// Events published while this watch was not subscribed are lost: look again.
		w.gap = false
		m.request(TriggerMonitorGap, ev.At, out)
	}
}

// failed handles the loss of w's subscription or the failure of its attempt.
func (m *Monitor) failed(w *watch, ev *Event, out *Outbox) {
	w.gap = true
	err := ev.Err
	from := len(out.Effects)
	if w.a.phase == attemptReady {
		// A new budget: the replacement is attempt 1.
		w.a.lose(err)
		w.a.emit(Lifecycle{SourceState: SourceDisconnected, Err: err}, out)
		tagEndpoint(out, from, w.addr)
		m.next(w, ev.Draw, out)
		return
	}
	w.a.fail(err)
	if w.a.decide(true) == rulingExhausted {
		w.a.becomeExhausted(out)
		w.a.emit(Lifecycle{SourceState: SourceDisconnected, Attempt: w.a.n, Exhausted: true, Err: err}, out)
		tagEndpoint(out, from, w.addr)
		pushWarn(out, WarningMonitorExhausted, w.addr)
		if w.a.maybeRenew() {
			// A publication arrived while the retries were being spent.
			m.dial(w, out)
		}
		return
	}
	w.a.emit(Lifecycle{SourceState: SourceDisconnected, Attempt: w.a.n, Err: err}, out)
	tagEndpoint(out, from, w.addr)
	m.next(w, ev.Draw, out)
}

// next schedules w's next attempt: after the policy's delay, or on the no-policy schedule (at
// once after a loss, then 250 ms doubling up to 5 s).
func (m *Monitor) next(w *watch, draw float64, out *Outbox) {
	from := len(out.Effects)
	governed := m.rules.policy != nil
	var delay time.Duration
	if governed {
		delay = w.a.plan(draw, out)
	} else {
		delay = w.a.wait()
	}
	scheduled := Lifecycle{SourceState: SourceConnecting, Attempt: w.a.n, NextDelay: delay, Scheduled: governed || delay > 0}
	if delay <= 0 {
		w.a.emit(scheduled, out)
		w.a.becomeDialing(out)
	} else {
		w.a.becomeScheduled(delay, out)
		w.a.emit(scheduled, out)
	}
	tagEndpoint(out, from, w.addr)
}

// request asks for a rediscovery, at most once per RediscoveryInterval.
func (m *Monitor) request(t SentinelTrigger, at time.Duration, out *Outbox) {
	if m.throttle != 0 {
		return // the deferred request covers this one
	}
	if !m.requested || at-m.lastRequest >= RediscoveryInterval {
		m.requested, m.lastRequest = true, at
		f := out.push(Rediscover)
		f.Slot, f.Sentinel = -1, &triggerData[t]
		return
	}
	m.throttle, m.deferred = m.ids.timer(), t
	out.add(Effect{Kind: ArmTimer, Timer: m.throttle, After: m.lastRequest + RediscoveryInterval - at})
}

func (m *Monitor) timerFired(ev *Event, out *Outbox) {
	if ev.Timer == 0 {
		return
	}
	if ev.Timer == m.throttle {
		m.throttle = 0
		m.requested, m.lastRequest = true, ev.At
		f := out.push(Rediscover)
		f.Slot, f.Sentinel = -1, &triggerData[m.deferred]
		return
	}
	for i := range m.watches {
		if w := &m.watches[i]; w.a.phase == attemptScheduled && w.a.timer == ev.Timer {
			from := len(out.Effects)
			w.a.becomeDialing(out)
			tagEndpoint(out, from, w.addr)
			return
		}
	}
}

// --- transitions and disposal ---

func (m *Monitor) illegal(to monitorPhase) {
	panic("fsm: illegal monitor transition " + m.Phase() + " -> " + monitorPhaseNames[to])
}

func (m *Monitor) becomeWatching() {
	if m.phase != monitorWaiting {
		m.illegal(monitorWatching)
	}
	m.phase = monitorWatching
}

// becomeDisposing stops every watch and the deferred request, and remembers the connections
// whose end disposal waits for.
func (m *Monitor) becomeDisposing(out *Outbox) {
	if m.phase != monitorWaiting && m.phase != monitorWatching {
		m.illegal(monitorDisposing)
	}
	m.phase = monitorDisposing
	for i := range m.watches {
		w := &m.watches[i]
		switch w.a.phase {
		case attemptDialing, attemptHandshaking, attemptReady:
			m.closing = append(m.closing, w.a.conn)
		}
		w.a.stop(false, out)
	}
	if m.throttle != 0 {
		out.add(Effect{Kind: CancelTimer, Timer: m.throttle})
		m.throttle = 0
	}
}

// becomeClosed ends disposal: its waiter is answered.
func (m *Monitor) becomeClosed(out *Outbox) {
	if m.phase == monitorClosed {
		m.illegal(monitorClosed)
	}
	m.phase = monitorClosed
	m.closing, m.grace = nil, 0
	if m.disposer != 0 {
		out.add(Effect{Kind: Complete, Waiter: m.disposer, Outcome: OutcomeClosed, Slot: -1})
	}
}

func (m *Monitor) dispose(ev *Event, out *Outbox) {
	m.disposer = ev.Waiter
	m.becomeDisposing(out)
	if len(m.closing) == 0 {
		m.becomeClosed(out)
		return
	}
	m.grace = m.ids.timer()
	out.add(Effect{Kind: ArmTimer, Timer: m.grace, After: MonitorDisposalGrace})
}

// stepDisposing waits for the closed connections to end, or for the grace to run out.
func (m *Monitor) stepDisposing(ev *Event, out *Outbox) {
	switch ev.Kind {
	case DialFailed, ConnLost:
		for i, c := range m.closing {
			if c == ev.Conn {
				m.closing = append(m.closing[:i], m.closing[i+1:]...)
				if len(m.closing) == 0 {
					out.add(Effect{Kind: CancelTimer, Timer: m.grace})
					m.becomeClosed(out)
				}
				return
			}
		}
	case TimerFired:
		if ev.Timer == m.grace {
			pushWarn(out, WarningMonitorDisposal, Endpoint{})
			m.becomeClosed(out)
		}
	}
}
