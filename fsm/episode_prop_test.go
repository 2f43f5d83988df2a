package fsm

import (
	"errors"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// episodeModel is an independent model of what a runtime sees while executing the effects of a
// pub/sub Episode. It keeps its own account of the connection, the desired topics, the server's
// acknowledgements and the recovery budget, written from the spec's rules rather than from the
// machine's code, and checks every step against it.
type episodeModel struct {
	t          *rapid.T
	policy     *Policy
	maxWaiters int

	closed    bool
	exhausted bool
	// recovering: an established connection was lost and the remaining topics are not all
	// acknowledged again yet.
	recovering bool
	// failures counts the failed attempts (connections and resubscriptions) of this recovery.
	failures int
	lastErr  error

	dialing ConnID
	ready   ConnID
	timer   TimerID

	desired map[Topic]bool
	// sent counts the subscriptions of each topic on the ready connection (Subscribe minus
	// Unsubscribe effects); acked marks the topics the server acknowledged on it.
	sent    map[Topic]int
	acked   map[Topic]bool
	waiters map[WaiterID][]Topic

	exhaustedRecords int
	allConns         []ConnID
	allTimers        []TimerID
	nextWaiter       WaiterID
	gaps             int
	recoveries       int
}

func newEpisodeModel(t *rapid.T, cfg EpisodeConfig) *episodeModel {
	return &episodeModel{t: t, policy: cfg.Policy, maxWaiters: cfg.MaxWaiters,
		desired: map[Topic]bool{}, sent: map[Topic]int{}, acked: map[Topic]bool{}, waiters: map[WaiterID][]Topic{}}
}

// noPolicyDelay is the spec's schedule without a policy after n failed replacements: 250 ms,
// doubling, capped at 5 s (written independently of the machine's arithmetic).
func noPolicyDelay(n int) time.Duration {
	d := 250 * time.Millisecond
	for i := 1; i < n; i++ {
		d *= 2
		if d >= 5*time.Second {
			return 5 * time.Second
		}
	}
	return d
}

// stepExpect is what the model requires of one step's effects.
type stepExpect struct {
	// only, when set, lists the only effect kinds the step may produce.
	only map[EffectKind]bool
	// schedule: the step must start the recovery's next attempt (a timer or an immediate dial).
	schedule bool
	// fire: the step must dial the attempt whose delay just expired.
	fire bool
	// exhaust: the step must exhaust the episode.
	exhaust bool
	// connected: the step must report the end of a recovery (or the first connection).
	connected bool
	// gap is the topic that must get a gap marker in this step.
	gap *Topic
	// closeConn must be closed in this step.
	closeConn ConnID
	// subscribeAll: the step must subscribe exactly the desired topics on the ready connection.
	subscribeAll bool
	// fresh are the topics a demand must subscribe on the ready connection.
	fresh []Topic
	// unsubscribe must be sent on the ready connection in this step.
	unsubscribe *Topic
	// endAll is the reason an End of every subscription may carry in this step; endOne and
	// endWhy the topic and reason of an End that must appear.
	endAll EndReason
	// endAllRequired: the step must end every subscription with endAll.
	endAllRequired bool
	endOne         *Topic
	endWhy         EndReason
	answers        map[WaiterID]Outcome
}

func (m *episodeModel) fatalf(format string, args ...any) { m.t.Fatalf(format, args...) }

func (m *episodeModel) allAcked() bool {
	for t := range m.desired {
		if !m.acked[t] {
			return false
		}
	}
	return true
}

// fail handles a failed attempt of the recovery or of the initial connection; x collects what
// the step must show.
func (m *episodeModel) fail(err error, x *stepExpect) {
	m.lastErr = err
	for w := range m.waiters {
		x.answers[w] = OutcomeFailed
	}
	if !m.recovering {
		// The initial attempt is single: nothing else happens until the next demand.
		clear(m.desired)
		x.only = map[EffectKind]bool{Complete: true, Emit: true}
		return
	}
	m.failures++
	if m.policy != nil && m.policy.MaxAttempts > 0 && m.failures >= m.policy.MaxAttempts {
		x.exhaust = true
		return
	}
	x.schedule = true
}

// apply checks the effects of stepping ev against the model, then updates the model.
func (m *episodeModel) apply(ev *Event, effects []Effect) {
	x := stepExpect{answers: map[WaiterID]Outcome{}}
	acceptedDemand := false
	switch ev.Kind {
	case Demanded:
		switch {
		case m.closed:
			x.answers[ev.Waiter] = OutcomeClosed
			x.only = map[EffectKind]bool{Complete: true}
		case m.exhausted:
			x.answers[ev.Waiter] = OutcomeExhausted
			x.only = map[EffectKind]bool{Complete: true}
		case m.recovering:
			// No competing connection, no skipped delay.
			x.answers[ev.Waiter] = OutcomeFailed
			x.only = map[EffectKind]bool{Complete: true}
		case len(m.waiters) >= m.maxWaiters:
			x.answers[ev.Waiter] = OutcomeOverflow
			x.only = map[EffectKind]bool{Complete: true}
		default:
			acceptedDemand = true
			m.waiters[ev.Waiter] = append([]Topic(nil), ev.Topics...)
			for _, t := range ev.Topics {
				if !m.desired[t] {
					m.desired[t] = true
					if m.ready != 0 && !containsTopic(x.fresh, t) {
						x.fresh = append(x.fresh, t)
					}
				}
			}
		}
	case Withdrew:
		if _, ok := m.waiters[ev.Waiter]; ok {
			x.answers[ev.Waiter] = OutcomeCancelled
			delete(m.waiters, ev.Waiter)
			if m.dialing != 0 && !m.recovering && len(m.waiters) == 0 {
				// The initial attempt is bounded by its callers: the last one gave up.
				x.closeConn = m.dialing
				m.dialing = 0
				clear(m.desired)
			}
		} else {
			x.only = map[EffectKind]bool{}
		}
	case Unsubscribed:
		if m.desired[ev.Topic] {
			delete(m.desired, ev.Topic)
			t := ev.Topic
			x.endOne, x.endWhy = &t, EndUnsubscribed
			if m.ready != 0 && m.sent[t] > 0 {
				x.unsubscribe = &t
			}
			if m.recovering && m.ready != 0 && m.sentAll() && m.allAcked() {
				x.connected = true
			}
		} else {
			x.only = map[EffectKind]bool{}
		}
	case HandshakeDone:
		switch {
		case ev.Conn != 0 && ev.Conn == m.dialing:
			m.ready, m.dialing = ev.Conn, 0
			clear(m.sent)
			clear(m.acked)
			x.subscribeAll = true
			if !m.recovering || len(m.desired) == 0 {
				x.connected = true
			}
		case ev.Conn != 0 && ev.Conn != m.ready:
			x.closeConn = ev.Conn
			x.only = map[EffectKind]bool{Close: true}
		default:
			x.only = map[EffectKind]bool{}
		}
	case DialFailed, ConnLost:
		switch {
		case ev.Conn != 0 && ev.Conn == m.dialing:
			m.dialing = 0
			m.fail(ev.Err, &x)
		case ev.Kind == ConnLost && ev.Conn != 0 && ev.Conn == m.ready:
			m.ready = 0
			if !m.recovering {
				// A new episode: its budget starts full.
				m.recovering = true
				m.failures = 0
				m.lastErr = ev.Err
				for w := range m.waiters {
					x.answers[w] = OutcomeFailed
				}
				x.schedule = true
			} else {
				// Connected but failed while resubscribing: it consumes the same budget.
				m.fail(ev.Err, &x)
			}
		default:
			x.only = map[EffectKind]bool{}
		}
	case Rejected:
		switch {
		case ev.Conn == 0 || ev.Conn != m.ready:
			x.only = map[EffectKind]bool{}
		case m.recovering:
			// A failed resubscription closes its replacement and consumes an attempt.
			x.closeConn = m.ready
			m.ready = 0
			m.fail(ev.Err, &x)
		case m.desired[ev.Topic]:
			delete(m.desired, ev.Topic)
			t := ev.Topic
			delete(m.sent, t) // the server did not subscribe it
			x.endOne, x.endWhy = &t, EndRejected
			for w, ts := range m.waiters {
				if containsTopic(ts, t) {
					x.answers[w] = OutcomeFailed
				}
			}
		default:
			x.only = map[EffectKind]bool{}
		}
	case Acked:
		if ev.Conn != 0 && ev.Conn == m.ready && m.desired[ev.Topic] && m.sent[ev.Topic] > 0 && !m.acked[ev.Topic] {
			m.acked[ev.Topic] = true
			if m.recovering {
				t := ev.Topic
				x.gap = &t
				if m.allAcked() {
					x.connected = true
				}
			}
			for w, ts := range m.waiters {
				if m.coversAcked(ts) {
					x.answers[w] = OutcomeGranted
				}
			}
		} else {
			x.only = map[EffectKind]bool{}
		}
	case TimerFired:
		if ev.Timer != 0 && ev.Timer == m.timer && !m.closed {
			m.timer = 0
			x.fire = true
		} else {
			x.only = map[EffectKind]bool{}
		}
	case Retired, Disposed:
		if m.closed {
			x.only = map[EffectKind]bool{}
			break
		}
		for w := range m.waiters {
			x.answers[w] = OutcomeClosed
		}
		if !m.exhausted {
			x.endAll = EndClosed
			x.endAllRequired = len(m.desired) > 0
		}
	}
	if acceptedDemand && m.ready != 0 {
		for w, ts := range m.waiters {
			if m.coversAcked(ts) {
				x.answers[w] = OutcomeGranted
			}
		}
	}
	if acceptedDemand && m.ready == 0 && m.dialing == 0 {
		x.schedule = true // the initial attempt
	}
	m.check(ev, effects, &x)
}

func (m *episodeModel) coversAcked(ts []Topic) bool {
	for _, t := range ts {
		if !m.desired[t] || !m.acked[t] {
			return false
		}
	}
	return true
}

// sentAll reports whether every desired topic was sent on the ready connection.
func (m *episodeModel) sentAll() bool {
	for t := range m.desired {
		if m.sent[t] == 0 {
			return false
		}
	}
	return true
}

func containsTopic(ts []Topic, t Topic) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// check walks the effects of one step in order, checking each against the model and the step's
// expectations, and updates the model's view of connections, timers and subscriptions.
func (m *episodeModel) check(ev *Event, effects []Effect, x *stepExpect) {
	var (
		dialed, armed, closedWant, subscribedAll, unsubscribed, gapped bool
		connected, exhaustedEmit, endAll                               bool
		fresh                                                          []Topic
		scheduled                                                      *Lifecycle
		recordedAttempt, recordedDelay                                 = -1.0, -1.0
	)
	answered := map[WaiterID]Outcome{}
	for i := range effects {
		f := &effects[i]
		if x.only != nil && !x.only[f.Kind] {
			m.fatalf("%v: unexpected effect %v", ev, f)
		}
		switch f.Kind {
		case Dial:
			switch {
			case m.closed:
				m.fatalf("dial after disposal: %v", f)
			case m.exhausted:
				m.fatalf("dial after exhaustion: %v", f)
			case m.dialing != 0 || m.ready != 0:
				m.fatalf("competing connection: dial %v while conn %d/%d is open", f, m.dialing, m.ready)
			case m.timer != 0:
				m.fatalf("dial during a scheduled delay: %v", f)
			case f.Slot != -1:
				m.fatalf("pub/sub dial with a slot: %v", f)
			}
			if m.recovering {
				want := 0
				if m.policy != nil {
					want = m.failures + 1
				}
				if f.Attempt != want {
					m.fatalf("recovery dial attempt %d, want %d (failures %d)", f.Attempt, want, m.failures)
				}
			} else if ev.Kind != Demanded || f.Attempt != 0 {
				// The initial attempt is made for a demand only, never retried on its own.
				m.fatalf("initial dial %v on %v", f, ev)
			}
			m.dialing = f.Conn
			m.allConns = append(m.allConns, f.Conn)
			dialed = true
		case ArmTimer:
			if !m.recovering || m.closed || m.exhausted {
				m.fatalf("timer armed outside recovery: %v", f)
			}
			if m.timer != 0 || m.dialing != 0 || m.ready != 0 {
				m.fatalf("timer armed while an attempt is outstanding: %v", f)
			}
			if m.policy == nil {
				if m.failures == 0 {
					m.fatalf("without a policy the first replacement is immediate, got %v", f)
				}
				if want := noPolicyDelay(m.failures); f.After != want {
					m.fatalf("no-policy wait after %d failures: %v, want %v", m.failures, f.After, want)
				}
			} else {
				lo, hi := oracleBand(m.policy, m.failures+1)
				if f.After < lo || f.After > hi {
					m.fatalf("attempt %d delay %v outside [%v, %v]", m.failures+1, f.After, lo, hi)
				}
			}
			m.timer = f.Timer
			m.allTimers = append(m.allTimers, f.Timer)
			armed = true
		case CancelTimer:
			if ev.Kind != Disposed && ev.Kind != Retired {
				m.fatalf("timer cancelled outside shutdown: %v", f)
			}
			if f.Timer != m.timer {
				m.fatalf("cancelled timer %d, armed %d", f.Timer, m.timer)
			}
			m.timer = 0
		case Close:
			switch f.Conn {
			case x.closeConn:
				closedWant = true
			case m.dialing:
				m.dialing = 0
			case m.ready:
				m.ready = 0
			default:
				m.fatalf("close of unknown conn %d", f.Conn)
			}
			if ev.Kind != Disposed && ev.Kind != Retired && f.Conn != x.closeConn {
				m.fatalf("%v: unexpected close %v", ev, f)
			}
		case Subscribe:
			if f.Conn != m.ready || m.ready == 0 {
				m.fatalf("subscribe on conn %d, ready is %d", f.Conn, m.ready)
			}
			for _, t := range f.Topics {
				if !m.desired[t] {
					m.fatalf("subscribe of undesired %v", t)
				}
				m.sent[t]++
				if m.sent[t] > 1 {
					m.fatalf("%v subscribed twice on conn %d", t, f.Conn)
				}
			}
			if x.subscribeAll {
				subscribedAll = true
				if len(f.Topics) != len(m.desired) {
					m.fatalf("resubscribed %d topics, %d desired", len(f.Topics), len(m.desired))
				}
			} else {
				fresh = append(fresh, f.Topics...)
			}
		case Unsubscribe:
			if f.Conn != m.ready || len(f.Topics) != 1 || x.unsubscribe == nil || f.Topics[0] != *x.unsubscribe {
				m.fatalf("%v: unexpected unsubscribe %v", ev, f)
			}
			m.sent[f.Topics[0]]--
			delete(m.acked, f.Topics[0])
			unsubscribed = true
		case Gap:
			if x.gap == nil || f.Topic != *x.gap || gapped {
				m.fatalf("%v: unexpected gap %v", ev, f)
			}
			gapped = true
			m.gaps++
		case End:
			switch {
			case f.Topic.Name == "" && f.Reason == EndReconnectExhausted:
				if !x.exhaust {
					m.fatalf("%v: unexpected exhaustion end", ev)
				}
				endAll = true
			case f.Topic.Name == "" && f.Reason == EndClosed:
				if x.endAll != EndClosed {
					m.fatalf("%v: unexpected closed end", ev)
				}
				endAll = true
			case x.endOne != nil && f.Topic == *x.endOne && f.Reason == x.endWhy:
				x.endOne = nil
			default:
				m.fatalf("%v: unexpected end %v", ev, f)
			}
		case Emit:
			l := f.Lifecycle
			if l.Source != SourcePubSub || l.Slot != -1 {
				m.fatalf("pub/sub lifecycle without source pubsub or with a slot: %v", f)
			}
			if l.Scheduled {
				lc := l
				scheduled = &lc
				want := 0
				if m.policy != nil {
					want = m.failures + 1
				}
				if l.Attempt != want {
					m.fatalf("scheduled attempt %d, want %d", l.Attempt, want)
				}
			}
			if l.Exhausted {
				if !x.exhaust || l.SourceState != SourceDisconnected || l.Attempt != m.policy.MaxAttempts || l.Err == nil {
					m.fatalf("%v: unexpected exhaustion event %v", ev, f)
				}
				exhaustedEmit = true
			}
			if l.SourceState == SourceConnected {
				if !x.connected {
					m.fatalf("%v: unexpected connected event", ev)
				}
				connected = true
			}
		case Record:
			if f.Metric.Source != SourcePubSub {
				m.fatalf("pub/sub metric with source %v", f.Metric.Source)
			}
			switch f.Metric.Instrument {
			case InstrumentAttempt:
				if m.policy == nil || f.Metric.Value != float64(m.failures+1) {
					m.fatalf("attempt metric %v with %d failures and %v", f.Metric.Value, m.failures, m.policy)
				}
				recordedAttempt = f.Metric.Value
			case InstrumentDelay:
				recordedDelay = f.Metric.Value
			case InstrumentExhausted:
				if !x.exhaust {
					m.fatalf("%v: exhaustion counted without exhaustion", ev)
				}
				m.exhaustedRecords++
			}
		case Complete:
			want, ok := x.answers[f.Waiter]
			if !ok {
				m.fatalf("%v: unexpected answer %v", ev, f)
			}
			if _, twice := answered[f.Waiter]; twice {
				m.fatalf("waiter %d answered twice", f.Waiter)
			}
			if f.Outcome != want {
				m.fatalf("waiter %d answered %v, want %v", f.Waiter, f.Outcome, want)
			}
			if f.Outcome == OutcomeGranted && (f.Conn != m.ready || m.ready == 0) {
				m.fatalf("granted conn %d, ready is %d", f.Conn, m.ready)
			}
			if f.Outcome == OutcomeExhausted && (f.Err == nil || f.Err != m.lastErr) {
				m.fatalf("reconnect-limit answer without the last error: %v", f)
			}
			answered[f.Waiter] = f.Outcome
			delete(m.waiters, f.Waiter)
		}
	}
	// The step's obligations.
	for w, o := range x.answers {
		if _, ok := answered[w]; !ok {
			m.fatalf("%v: waiter %d not answered (want %v)", ev, w, o)
		}
	}
	if x.closeConn != 0 && !closedWant {
		m.fatalf("%v: conn %d not closed", ev, x.closeConn)
	}
	if x.subscribeAll && len(m.desired) > 0 && !subscribedAll {
		m.fatalf("%v: desired topics not subscribed on the new connection", ev)
	}
	sortTopics(fresh)
	sortTopics(x.fresh)
	if !equalTopics(fresh, x.fresh) {
		m.fatalf("%v: subscribed %v, want the fresh topics %v", ev, fresh, x.fresh)
	}
	if x.unsubscribe != nil && !unsubscribed {
		m.fatalf("%v: %v left subscribed on conn %d", ev, *x.unsubscribe, m.ready)
	}
	if x.gap != nil && !gapped {
		m.fatalf("%v: no gap marker for %v acknowledged during recovery", ev, *x.gap)
	}
	if x.endOne != nil {
		m.fatalf("%v: %v not ended", ev, *x.endOne)
	}
	if x.endAllRequired && !endAll {
		m.fatalf("%v: subscriptions not ended with %v", ev, x.endAll)
	}
	if x.exhaust {
		if !exhaustedEmit || !endAll || dialed || armed {
			m.fatalf("%v: exhaustion incomplete (event %v, end %v, dial %v, timer %v)", ev, exhaustedEmit, endAll, dialed, armed)
		}
		m.exhausted = true
		clear(m.desired)
	}
	if x.schedule && !dialed && !armed {
		m.fatalf("%v: no attempt started or scheduled", ev)
	}
	if x.fire && (!dialed || armed) {
		m.fatalf("%v: the delay expired without its dial", ev)
	}
	if !x.schedule && !x.fire && (dialed || armed) {
		m.fatalf("%v: unexpected attempt (dial %v, timer %v)", ev, dialed, armed)
	}
	if armed && (scheduled == nil || scheduled.NextDelay != m.timerAfter(effects)) {
		m.fatalf("%v: scheduled delay not reported in its lifecycle event", ev)
	}
	if m.policy != nil && x.schedule && m.recovering {
		if recordedAttempt != float64(m.failures+1) || scheduled == nil || recordedDelay != scheduled.NextDelay.Seconds() {
			m.fatalf("%v: attempt %d not measured (attempt %v delay %v)", ev, m.failures+1, recordedAttempt, recordedDelay)
		}
	}
	if m.policy == nil && (recordedAttempt >= 0 || recordedDelay >= 0) {
		m.fatalf("measurements without a policy")
	}
	if x.connected != connected {
		m.fatalf("%v: connected event %v, want %v", ev, connected, x.connected)
	}
	if connected && m.recovering {
		// After recovery the connection carries exactly the desired topics, once each.
		for t, n := range m.sent {
			if n > 0 && !m.desired[t] {
				m.fatalf("recovered with undesired %v subscribed", t)
			}
			if n > 1 {
				m.fatalf("recovered with %v subscribed %d times", t, n)
			}
		}
		if !m.sentAll() || !m.allAcked() {
			m.fatalf("recovered before every desired topic was acknowledged")
		}
		m.recovering = false
		m.failures = 0
		m.recoveries++
	}
	if ev.Kind == Retired || ev.Kind == Disposed {
		if m.timer != 0 || m.dialing != 0 || m.ready != 0 {
			m.fatalf("disposal left timer %d dial %d conn %d", m.timer, m.dialing, m.ready)
		}
		m.closed = true
		clear(m.desired)
	}
	// Whole-state invariants.
	outstanding := 0
	for _, v := range []uint64{uint64(m.dialing), uint64(m.ready), uint64(m.timer)} {
		if v != 0 {
			outstanding++
		}
	}
	switch {
	case m.closed || m.exhausted:
		if outstanding != 0 {
			m.fatalf("work outstanding after the end: dial %d conn %d timer %d", m.dialing, m.ready, m.timer)
		}
		if m.exhausted && !m.closed && len(m.desired) != 0 {
			m.fatalf("topics survive exhaustion")
		}
	case m.recovering:
		// One recovery loop owns the replacement: exactly one attempt, delay or connection.
		if outstanding != 1 {
			m.fatalf("recovery has %d outstanding attempts (dial %d conn %d timer %d)", outstanding, m.dialing, m.ready, m.timer)
		}
	}
	if len(m.waiters) > 0 && m.dialing == 0 && m.ready == 0 {
		m.fatalf("%d demands wait with no connection", len(m.waiters))
	}
	if m.exhaustedRecords > 1 {
		m.fatalf("exhaustion counted %d times", m.exhaustedRecords)
	}
}

func (m *episodeModel) timerAfter(effects []Effect) time.Duration {
	for _, f := range effects {
		if f.Kind == ArmTimer {
			return f.After
		}
	}
	return -1
}

func sortTopics(ts []Topic) { sort.Slice(ts, func(i, j int) bool { return ts[i].Less(ts[j]) }) }

func equalTopics(a, b []Topic) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var episodeTopicPool = []Topic{
	{Kind: TopicChannel, Name: "news"}, {Kind: TopicChannel, Name: "sports"}, {Kind: TopicPattern, Name: "ev.*"},
	{Kind: TopicShard, Name: "s1"}, {Kind: TopicShard, Name: "s2"},
}

// drawEpisodeConfig draws an episode: regular or sharded, with or without a policy (small delays
// so that runs cover many attempts), and a small waiter bound.
func drawEpisodeConfig(t *rapid.T) EpisodeConfig {
	cfg := EpisodeConfig{Machine: MachinePubSub, MaxWaiters: rapid.IntRange(1, 4).Draw(t, "max-waiters")}
	if rapid.Bool().Draw(t, "sharded") {
		cfg.Machine = MachineShardedPubSub
	}
	cfg.IDBase = IDBase(cfg.Machine)
	if rapid.IntRange(0, 2).Draw(t, "policy") > 0 {
		p := validPolicy(t)
		if p.InitialDelay > time.Minute {
			p.InitialDelay = time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "small-initial"))
			if p.MaxDelay != 0 && p.MaxDelay < p.InitialDelay {
				p.MaxDelay = p.InitialDelay
			}
		}
		cfg.Policy = p
	}
	return cfg
}

func sortedTopicKeys[V any](m map[Topic]V) []Topic {
	out := make([]Topic, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	sortTopics(out)
	return out
}

func sortedEpisodeWaiters(m map[WaiterID][]Topic) []WaiterID {
	out := make([]WaiterID, 0, len(m))
	for w := range m {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TestEpisodeProperties steps random timelines of demands, cancellations, unsubscriptions,
// connection outcomes, server acknowledgements and rejections, timers and disposal into an
// Episode, checks every step against the independent model, answers every demand by the end,
// and replays the journal into a fresh machine to check that it reproduces every effect.
func TestEpisodeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := drawEpisodeConfig(t)
		e := NewEpisode(cfg)
		m := newEpisodeModel(t, cfg)
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
			ev.Machine = cfg.Machine
			out.Reset()
			e.Step(&ev, &out)
			m.apply(&ev, out.Effects)
			journal = append(journal, ev)
			for i := range out.Effects {
				trace = append(trace, out.Effects[i].String())
			}
		}
		errs := []error{errors.New("refused"), errors.New("reset"), errors.New("NOPERM denied")}
		steps := rapid.IntRange(1, 150).Draw(t, "steps")
		for n := 0; n < steps; n++ {
			switch rapid.IntRange(0, 15).Draw(t, "action") {
			case 0, 1:
				m.nextWaiter++
				k := rapid.IntRange(1, 3).Draw(t, "topics")
				var ts []Topic
				for i := 0; i < k; i++ {
					tp := rapid.SampledFrom(episodeTopicPool).Draw(t, "topic")
					if !containsTopic(ts, tp) {
						ts = append(ts, tp)
					}
				}
				step(Event{Kind: Demanded, Waiter: m.nextWaiter, Topics: ts})
			case 2:
				if ws := sortedEpisodeWaiters(m.waiters); len(ws) > 0 {
					step(Event{Kind: Withdrew, Waiter: rapid.SampledFrom(ws).Draw(t, "withdraw")})
				}
			case 3:
				step(Event{Kind: Unsubscribed, Topic: rapid.SampledFrom(episodeTopicPool).Draw(t, "unsubscribe")})
			case 4, 5:
				if m.dialing != 0 {
					if rapid.Bool().Draw(t, "dialed-first") {
						step(Event{Kind: DialSucceeded, Conn: m.dialing})
					}
					step(Event{Kind: HandshakeDone, Conn: m.dialing})
				}
			case 6:
				if m.dialing != 0 {
					kind := DialFailed
					if rapid.Bool().Draw(t, "lost-in-handshake") {
						kind = ConnLost
					}
					step(Event{Kind: kind, Conn: m.dialing, Err: rapid.SampledFrom(errs).Draw(t, "err")})
				}
			case 7:
				if m.ready != 0 {
					step(Event{Kind: ConnLost, Conn: m.ready, Err: rapid.SampledFrom(errs).Draw(t, "err")})
				}
			case 8, 9, 10:
				// The server acknowledges a topic sent on the ready connection.
				if m.ready != 0 {
					var pending []Topic
					for _, tp := range sortedTopicKeys(m.sent) {
						if m.sent[tp] > 0 && !m.acked[tp] {
							pending = append(pending, tp)
						}
					}
					if len(pending) > 0 {
						step(Event{Kind: Acked, Conn: m.ready, Topic: rapid.SampledFrom(pending).Draw(t, "ack")})
					}
				}
			case 11:
				if m.ready != 0 && rapid.IntRange(0, 2).Draw(t, "reject") == 0 {
					var sent []Topic
					for _, tp := range sortedTopicKeys(m.sent) {
						if m.sent[tp] > 0 && !m.acked[tp] {
							sent = append(sent, tp)
						}
					}
					if len(sent) > 0 {
						step(Event{Kind: Rejected, Conn: m.ready, Topic: rapid.SampledFrom(sent).Draw(t, "rejected"), Err: errs[2]})
					}
				}
			case 12, 13:
				if m.timer != 0 {
					step(Event{Kind: TimerFired, Timer: m.timer})
				} else if len(m.allTimers) > 0 {
					step(Event{Kind: TimerFired, Timer: rapid.SampledFrom(m.allTimers).Draw(t, "stale-timer")})
				}
			case 14:
				// Noise: stale connection events and acknowledgements for unknown topics.
				if len(m.allConns) > 0 {
					c := rapid.SampledFrom(m.allConns).Draw(t, "stale-conn")
					if c != m.dialing && c != m.ready {
						switch rapid.IntRange(0, 3).Draw(t, "stale-kind") {
						case 0:
							step(Event{Kind: HandshakeDone, Conn: c})
						case 1:
							step(Event{Kind: ConnLost, Conn: c, Err: errs[1]})
						case 2:
							step(Event{Kind: Acked, Conn: c, Topic: rapid.SampledFrom(episodeTopicPool).Draw(t, "stale-topic")})
						default:
							step(Event{Kind: Rejected, Conn: c, Topic: rapid.SampledFrom(episodeTopicPool).Draw(t, "stale-topic"), Err: errs[2]})
						}
					}
				}
			case 15:
				if rapid.IntRange(0, 9).Draw(t, "dispose") == 0 {
					step(Event{Kind: Disposed})
				}
			}
		}
		// Disposal answers every demand still waiting: every demand is answered exactly once.
		step(Event{Kind: Disposed})
		if len(m.waiters) > 0 {
			t.Fatalf("%d demands never answered", len(m.waiters))
		}
		checkReplay(t, NewEpisode(cfg), journal, trace)
	})
}

// TestEpisodeExhaustionIsSticky: once an episode exhausts, no number of demands, unsubscriptions
// or stray events makes it dial or arm a timer again, and every demand fails with the reconnect
// limit and the last error.
func TestEpisodeExhaustionIsSticky(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		attempts := rapid.IntRange(1, 4).Draw(t, "attempts")
		e := NewEpisode(EpisodeConfig{Machine: MachinePubSub, IDBase: IDBase(MachinePubSub),
			Policy: &Policy{InitialDelay: time.Millisecond, MaxAttempts: attempts}})
		var out Outbox
		conn, timer := ConnID(0), TimerID(0)
		step := func(ev Event) {
			out.Reset()
			e.Step(&ev, &out)
			for _, f := range out.Effects {
				switch f.Kind {
				case Dial:
					conn = f.Conn
				case ArmTimer:
					timer = f.Timer
				}
			}
		}
		news := Topic{Kind: TopicChannel, Name: "news"}
		step(Event{Kind: Demanded, Waiter: 1, Topics: []Topic{news}})
		step(Event{Kind: HandshakeDone, Conn: conn})
		step(Event{Kind: Acked, Conn: conn, Topic: news})
		step(Event{Kind: ConnLost, Conn: conn, Err: errors.New("reset")})
		for i := 0; i < attempts; i++ {
			step(Event{Kind: TimerFired, Timer: timer})
			if rapid.Bool().Draw(t, "fail-by-rejection") {
				step(Event{Kind: HandshakeDone, Conn: conn})
				step(Event{Kind: Rejected, Conn: conn, Topic: news, Err: errors.New("NOPERM refused")})
			} else {
				step(Event{Kind: DialFailed, Conn: conn, Err: errors.New("refused")})
			}
		}
		if e.Phase() != "exhausted" {
			t.Fatalf("episode %s after %d failures", e.Phase(), attempts)
		}
		for i := 0; i < rapid.IntRange(1, 50).Draw(t, "more"); i++ {
			out.Reset()
			var ev Event
			switch i % 4 {
			case 0:
				ev = Event{Kind: Demanded, Waiter: WaiterID(100 + i), Topics: []Topic{news}}
			case 1:
				ev = Event{Kind: Unsubscribed, Topic: news}
			case 2:
				ev = Event{Kind: TimerFired, Timer: timer}
			default:
				ev = Event{Kind: HandshakeDone, Conn: conn}
			}
			e.Step(&ev, &out)
			for _, f := range out.Effects {
				if f.Kind == Dial || f.Kind == ArmTimer || f.Kind == Subscribe {
					t.Fatalf("exhausted episode started work: %v", f)
				}
				if f.Kind == Complete && (f.Outcome != OutcomeExhausted || f.Err == nil) {
					t.Fatalf("demand on an exhausted episode: %v", f)
				}
			}
		}
	})
}

// TestEpisodesAreIndependent: exhausting the regular episode leaves the sharded one usable.
func TestEpisodesAreIndependent(t *testing.T) {
	p := &Policy{InitialDelay: time.Millisecond, MaxAttempts: 1}
	regular := NewEpisode(EpisodeConfig{Machine: MachinePubSub, Policy: p, IDBase: IDBase(MachinePubSub)})
	sharded := NewEpisode(EpisodeConfig{Machine: MachineShardedPubSub, Policy: p, IDBase: IDBase(MachineShardedPubSub)})
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
	step := func(e *Episode, ev Event) {
		out.Reset()
		e.Step(&ev, &out)
	}
	ch := Topic{Kind: TopicChannel, Name: "a"}
	sh := Topic{Kind: TopicShard, Name: "b"}
	for _, x := range []struct {
		e *Episode
		t Topic
	}{{regular, ch}, {sharded, sh}} {
		step(x.e, Event{Kind: Demanded, Waiter: 1, Topics: []Topic{x.t}})
		c := last(Dial).Conn
		step(x.e, Event{Kind: HandshakeDone, Conn: c})
		step(x.e, Event{Kind: Acked, Conn: c, Topic: x.t})
		if last(Complete).Outcome != OutcomeGranted {
			t.Fatal("not granted")
		}
	}
	step(regular, Event{Kind: ConnLost, Conn: ConnID(IDBase(MachinePubSub) + 1), Err: errors.New("reset")})
	step(regular, Event{Kind: TimerFired, Timer: last(ArmTimer).Timer})
	step(regular, Event{Kind: DialFailed, Conn: last(Dial).Conn, Err: errors.New("refused")})
	if regular.Phase() != "exhausted" || sharded.Phase() != "active" {
		t.Fatalf("regular %s sharded %s", regular.Phase(), sharded.Phase())
	}
	step(sharded, Event{Kind: Demanded, Waiter: 2, Topics: []Topic{{Kind: TopicShard, Name: "c"}}})
	if s := last(Subscribe); len(s.Topics) != 1 {
		t.Fatalf("sharded episode refused a subscription after regular exhaustion: %v", out.Effects)
	}
}
