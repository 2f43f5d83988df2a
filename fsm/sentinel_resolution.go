package fsm

import (
	"errors"
	"strconv"
	"time"
)

// ResolutionConfig configures a Resolution. Validate checks it; NewResolution refuses an invalid
// one.
type ResolutionConfig struct {
	// Sentinels are the configured Sentinels, in the order they are tried: 1 to MaxSentinels
	// distinct, dialable endpoints in canonical form (MakeEndpoint, ParseEndpoint).
	Sentinels []Endpoint
	// Policy is the reconnect policy, or nil for none. It must be valid.
	Policy *Policy
	// MaxWaiters bounds the callers waiting for a resolution (zero: DefaultMaxWaiters; not
	// negative).
	MaxWaiters int
	// IDBase offsets the machine's ConnIDs and TimerIDs (use IDBase(MachineSentinel); it must be
	// some machine's IDBase).
	IDBase uint64
}

// Validate reports the first invalid field of c, or nil. NewResolution panics with this error.
func (c *ResolutionConfig) Validate() error {
	bad := func(field, reason string) error {
		return &ConfigError{Config: "ResolutionConfig", Field: field, Reason: reason}
	}
	if reason := validSentinels(c.Sentinels); reason != "" {
		return bad("Sentinels", reason)
	}
	switch {
	case c.MaxWaiters < 0:
		return bad("MaxWaiters", "must not be negative")
	case !isIDBase(c.IDBase):
		return bad("IDBase", "must be the IDBase of a machine")
	}
	return validatePolicy("ResolutionConfig", c.Policy)
}

// ErrNoPrimary: a Sentinel's answer named no usable primary address.
var ErrNoPrimary = errors.New("respire: sentinel reported no usable primary address")

// errNoAnswer stands in for a failure the runtime reported without an error.
var errNoAnswer = errors.New("respire: sentinel query failed")

// rediscoveryBackoff is the schedule of rediscovery retries without a policy.
var rediscoveryBackoff = backoff{first: RediscoveryFirstWait, max: RediscoveryMaxWait}

// resolutionPhase is where a Resolution stands.
type resolutionPhase uint8

const (
	// resolutionIdle: no resolution runs and no retry waits.
	resolutionIdle resolutionPhase = iota
	// resolutionRunning: a resolution runs (its candidate stage says where).
	resolutionRunning
	// resolutionWaiting: a failed rediscovery that the monitor asked for waits for its retry
	// (retryTimer).
	resolutionWaiting
	// resolutionClosed: disposed. Terminal.
	resolutionClosed
)

var resolutionPhaseNames = [...]string{"idle", "resolving", "waiting", "closed"}

// candidateStage is where the current candidate of a running resolution stands.
type candidateStage uint8

const (
	stageNone candidateStage = iota
	// stageDelay: the policy's delay before the candidate runs (the attempt is scheduled).
	stageDelay
	// stageSentinel: connecting to the Sentinel (the attempt is dialing; conn).
	stageSentinel
	// stageAsking: the Sentinel's queries are outstanding (the attempt is handshaking; conn).
	stageAsking
	// stagePrimary: connecting to the primary it reported (conn).
	stagePrimary
	// stageRole: ROLE is outstanding on the primary (conn).
	stageRole
)

var stageNames = [...]string{"none", "delay", "sentinel", "asking", "primary", "role"}

func (s candidateStage) String() string {
	if int(s) < len(stageNames) {
		return stageNames[s]
	}
	return "stage(" + strconv.Itoa(int(s)) + ")"
}

// report is what the current candidate's Sentinel said about the primary. inFailover: the
// Sentinel is in the middle of its own failover of that primary, so its epoch may already be
// the new one while its address is still the old primary's (SentinelData.InFailover).
type report struct {
	primary    Endpoint
	epoch      uint64
	epochKnown bool
	inFailover bool
}

// Resolution is the Sentinel resolution machine: it finds the primary through the Sentinels,
// validates it with ROLE, and publishes it, generation by generation.
//
// Rules (spec "Sentinel discovery fallback", "Redis Sentinel"):
//   - Candidates are the configured Sentinels in order, then the peers learned from SENTINEL
//     SENTINELS answers (at most MaxLearnedSentinels over the client's life). A resolution walks
//     them once, from the first: endpoints are never cycled.
//   - A candidate is one attempt of the resolution's budget: connect to the Sentinel; ask
//     SENTINEL MASTER (and SENTINEL SENTINELS while peers can still be learned); connect to the
//     primary it reports; ask ROLE. Any failure on the way (a connection, a refusal, a malformed
//     or stale answer, a ROLE other than primary) fails the candidate: a rejected ROLE consumes
//     that same attempt, and neither peer expansion nor the primary connection starts a budget
//     of its own.
//   - The first candidate is immediate. With a policy, each later one consumes an attempt and
//     waits the policy's delay first; without one, the fallback is immediate. A failure with
//     candidates left but no attempt left is exhaustion (measured once, attributed to the final
//     failed candidate); running out of candidates is depletion, never exhaustion.
//   - Every resolution has a fresh budget: an explicit connect, an operation after a
//     generation was retired, a rediscovery the monitor asked for. Callers that arrive while one
//     runs share it.
//   - Resolutions that callers start are spaced like the attempts of a command slot no policy
//     governs: after the n-th consecutive failed resolution, callers fail at once with its
//     outcome and error for NoPolicyWait(n) (250 ms doubling up to 5 s), so that a busy
//     application cannot spin over Sentinels that are all down. A success resets the spacing.
//   - The configuration epoch from SENTINEL MASTER never moves backwards: a Sentinel that
//     names another primary than the validated one under an older epoch (or a different one
//     under the same epoch) is stale, and its candidate fails with ErrStaleSentinel. A
//     Sentinel still running its own failover (InFailover) pairs the new epoch with the old
//     primary's address: its report never raises the epoch, and when it names another primary
//     than the validated one it is stale whatever its epoch. Without
//     permission for SENTINEL MASTER (NOPERM) the candidate asks SENTINEL
//     GET-MASTER-ADDR-BY-NAME instead and relies on ROLE alone; the first such refusal gives a
//     warning (WarningNoConfigEpoch), once per machine.
//   - A validated primary is published (Publish). A new generation starts when none is live or
//     the primary changed; a changed primary retires the live generation and is measured as a
//     failover (InstrumentSentinelFailover). The same primary again keeps the live generation
//     and still publishes: a validated publication renews the monitors.
//   - PrimaryFailed for the live generation retires it; the next operation resolves again.
//     Reports about other generations are late and ignored.
//   - A rediscovery the monitor asks for runs at once (or once the running resolution ends).
//     When it fails it is retried: without a policy after 1 s, 2 s, 4 s ... at most 30 s apart,
//     without limit; with one after the policy's delays, at most MaxAttempts times; never sooner
//     than RediscoveryInterval. A success ends the retries.
//   - A caller's withdrawal stops a resolution that nobody else waits for; disposal stops
//     everything and answers every waiter with OutcomeClosed.
type Resolution struct {
	cfg   ResolutionConfig
	ids   ids
	rules attemptRules
	// a is the running resolution's budget (attempt.go): one attempt per candidate. It is
	// replaced by a fresh one when a resolution starts.
	a     attempt
	phase resolutionPhase
	stage candidateStage
	// cand indexes the current candidate in known.
	cand int
	// conn is the current candidate's connection: the Sentinel's (stageSentinel, stageAsking)
	// or the primary's (stagePrimary, stageRole).
	conn ConnID
	// asking is the primary query outstanding on the Sentinel (SentinelQueryPrimary, or its
	// fallback SentinelQueryPrimaryAddr), or SentinelQueryNone once answered; askingPeers says
	// SENTINEL SENTINELS is outstanding.
	asking      SentinelQuery
	askingPeers bool
	rep         report
	// learned are the peers learned so far; known caches the configured Sentinels followed by
	// them. known is rebuilt, never modified, when a peer is learned: Publish effects share it.
	learned []Endpoint
	known   []Endpoint
	// The validated primary: its endpoint (zero before the first), its generation and whether
	// that generation is live (not retired), and the highest validated configuration epoch.
	primary    Endpoint
	generation uint64
	live       bool
	epoch      uint64
	epochKnown bool
	warned     bool
	waiters    []WaiterID
	// eventNeed: a rediscovery the monitor asked for has not succeeded yet; again: one was asked
	// for while a resolution ran, so another follows it.
	eventNeed, again bool
	// retries counts the consecutive failed rediscoveries of eventNeed; retryTimer is the wait
	// before the next (resolutionWaiting).
	retries    int
	retryTimer TimerID
	// failedRuns counts the consecutive failed resolutions; until restUntil, callers get the
	// last one's outcome and error at once. now is the time of the event being stepped.
	failedRuns  int
	restUntil   time.Duration
	lastOutcome Outcome
	lastErr     error
	now         time.Duration
}

// NewResolution returns a Sentinel resolution machine for cfg. It panics with cfg.Validate's
// *ConfigError when cfg is invalid.
func NewResolution(cfg ResolutionConfig) *Resolution {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if cfg.MaxWaiters <= 0 {
		cfg.MaxWaiters = DefaultMaxWaiters
	}
	cfg.Sentinels = append([]Endpoint(nil), cfg.Sentinels...)
	r := &Resolution{cfg: cfg, ids: newIDs(cfg.IDBase, 0)}
	r.rules = attemptRules{policy: cfg.Policy, source: SourceUnspecified, scope: ScopeSentinelDiscovery, ids: &r.ids}
	r.a = newAttempt(&r.rules, -1, 0)
	r.known = cfg.Sentinels
	return r
}

// Phase returns the machine's phase for tests and traces: "idle", "waiting", "closed", or
// "resolving/<stage>" with the current candidate's stage (delay, sentinel, asking, primary,
// role).
func (r *Resolution) Phase() string {
	if r.phase == resolutionRunning {
		return "resolving/" + r.stage.String()
	}
	return resolutionPhaseNames[r.phase]
}

// Primary returns the last validated primary (the zero Endpoint before the first), its
// generation, and whether that generation is live.
func (r *Resolution) Primary() (Endpoint, uint64, bool) { return r.primary, r.generation, r.live }

// Epoch returns the highest validated configuration epoch, and whether one is known.
func (r *Resolution) Epoch() (uint64, bool) { return r.epoch, r.epochKnown }

// Sentinels returns the known Sentinels: the configured ones, then the learned ones. The slice
// must not be modified.
func (r *Resolution) Sentinels() []Endpoint { return r.known }

// Step applies ev and appends the resulting effects to out.
func (r *Resolution) Step(ev *Event, out *Outbox) {
	r.now = ev.At
	if r.phase == resolutionClosed {
		if ev.Kind == Demanded {
			out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeClosed, Slot: -1})
		}
		return
	}
	switch ev.Kind {
	case Demanded:
		r.demanded(ev, out)
	case Withdrew:
		r.withdrew(ev, out)
	case RediscoveryRequested:
		r.requested(ev, out)
	case PrimaryFailed:
		r.primaryFailed(ev, out)
	case HandshakeDone:
		r.handshakeDone(ev, out)
	case DialFailed, ConnLost:
		if r.owns(ev.Conn) {
			// The connection is gone: nothing to close.
			r.conn = 0
			r.candidateFailed(orNoAnswer(ev.Err), ev.Draw, out)
		}
	case Answered:
		if r.owns(ev.Conn) {
			r.answered(ev, out)
		}
	case TimerFired:
		r.timerFired(ev, out)
	case Disposed:
		r.dispose(out)
	}
}

func orNoAnswer(err error) error {
	if err == nil {
		return errNoAnswer
	}
	return err
}

// owns reports whether c is the current candidate's connection.
func (r *Resolution) owns(c ConnID) bool {
	return c != 0 && c == r.conn && r.phase == resolutionRunning && r.stage >= stageSentinel
}

// candidate returns the endpoint of candidate i.
func (r *Resolution) candidate(i int) Endpoint { return r.known[i] }

// --- transitions ---

func (r *Resolution) illegal(to string) {
	panic("fsm: illegal resolution transition " + r.Phase() + " -> " + to)
}

// becomeRunning starts a resolution with a fresh budget, from idle or waiting (cancelling the
// wait's timer unless it fired); its first candidate is dialed at once.
func (r *Resolution) becomeRunning(out *Outbox) {
	switch r.phase {
	case resolutionWaiting:
		if r.retryTimer != 0 {
			out.add(Effect{Kind: CancelTimer, Timer: r.retryTimer})
			r.retryTimer = 0
		}
	case resolutionIdle:
	default:
		r.illegal("resolving")
	}
	r.phase = resolutionRunning
	r.a = newAttempt(&r.rules, -1, 0)
	r.cand = 0
	from := len(out.Effects)
	r.a.emit(Lifecycle{SourceState: SourceConnecting}, out)
	tagEndpoint(out, from, r.candidate(0))
	r.becomeSentinel(out)
}

// becomeIdle ends a resolution, or a wait for a retry.
func (r *Resolution) becomeIdle() {
	if r.phase != resolutionRunning && r.phase != resolutionWaiting {
		r.illegal("idle")
	}
	r.phase, r.stage, r.conn, r.retryTimer, r.asking, r.askingPeers = resolutionIdle, stageNone, 0, 0, SentinelQueryNone, false
}

// becomeWaiting ends a failed resolution with a retry after delay.
func (r *Resolution) becomeWaiting(delay time.Duration, out *Outbox) {
	if r.phase != resolutionRunning {
		r.illegal("waiting")
	}
	r.phase, r.stage, r.conn, r.asking, r.askingPeers = resolutionWaiting, stageNone, 0, SentinelQueryNone, false
	r.retryTimer = r.ids.timer()
	out.add(Effect{Kind: ArmTimer, Timer: r.retryTimer, After: delay})
}

// becomeClosed stops the machine for good.
func (r *Resolution) becomeClosed() {
	r.phase, r.stage, r.conn, r.retryTimer, r.asking, r.askingPeers = resolutionClosed, stageNone, 0, 0, SentinelQueryNone, false
}

// becomeSentinel dials the current candidate's Sentinel: its attempt starts.
func (r *Resolution) becomeSentinel(out *Outbox) {
	if r.phase != resolutionRunning || r.stage > stageDelay {
		r.illegal("resolving/sentinel")
	}
	from := len(out.Effects)
	r.a.becomeDialing(out)
	tagEndpoint(out, from, r.candidate(r.cand))
	r.stage, r.conn, r.rep = stageSentinel, r.a.conn, report{}
}

// becomeDelayed schedules the current candidate after delay.
func (r *Resolution) becomeDelayed(delay time.Duration, out *Outbox) {
	if r.phase != resolutionRunning || r.stage != stageNone {
		r.illegal("resolving/delay")
	}
	r.a.becomeScheduled(delay, out)
	r.stage = stageDelay
}

// becomeAsking sends the Sentinel's queries: SENTINEL MASTER, and SENTINEL SENTINELS while
// peers can still be learned.
func (r *Resolution) becomeAsking(out *Outbox) {
	if r.stage != stageSentinel {
		r.illegal("resolving/asking")
	}
	r.a.becomeHandshaking()
	r.stage = stageAsking
	r.asking = SentinelQueryPrimary
	pushQuery(out, r.conn, SentinelQueryPrimary)
	if len(r.learned) < MaxLearnedSentinels {
		r.askingPeers = true
		pushQuery(out, r.conn, SentinelQueryPeers)
	}
}

// becomePrimary closes the Sentinel's connection and dials the primary it reported, within the
// same attempt.
func (r *Resolution) becomePrimary(out *Outbox) {
	if r.stage != stageAsking || r.asking != SentinelQueryNone || r.askingPeers {
		r.illegal("resolving/primary")
	}
	out.add(Effect{Kind: Close, Conn: r.conn})
	r.stage, r.conn = stagePrimary, r.ids.conn()
	f := out.push(Dial)
	f.Slot, f.Conn, f.Attempt, f.Endpoint = -1, r.conn, r.a.n, r.rep.primary
}

// becomeRole asks the primary for its ROLE.
func (r *Resolution) becomeRole(out *Outbox) {
	if r.stage != stagePrimary {
		r.illegal("resolving/role")
	}
	r.stage = stageRole
	pushQuery(out, r.conn, SentinelQueryRole)
}

// --- events ---

func (r *Resolution) demanded(ev *Event, out *Outbox) {
	switch {
	case r.live:
		f := out.push(Complete)
		f.Waiter, f.Outcome, f.Slot, f.Endpoint = ev.Waiter, OutcomeGranted, -1, r.primary
		return
	case r.phase != resolutionRunning && r.now < r.restUntil:
		// The last resolution failed a moment ago: no new one before its rest is over.
		out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: r.lastOutcome, Slot: -1, Err: r.lastErr})
		return
	case len(r.waiters) >= r.cfg.MaxWaiters:
		out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeOverflow, Slot: -1})
		return
	}
	r.waiters = append(r.waiters, ev.Waiter)
	if r.phase != resolutionRunning {
		r.becomeRunning(out)
	}
}

func (r *Resolution) withdrew(ev *Event, out *Outbox) {
	for i, w := range r.waiters {
		if w != ev.Waiter {
			continue
		}
		r.waiters = append(r.waiters[:i], r.waiters[i+1:]...)
		out.add(Effect{Kind: Complete, Waiter: w, Outcome: OutcomeCancelled, Slot: -1})
		if r.phase == resolutionRunning && len(r.waiters) == 0 && !r.eventNeed && !r.again {
			// Nobody waits for this resolution any more: cancellation bounds it.
			r.abandon(out)
			r.becomeIdle()
		}
		return
	}
}

// abandon cancels the running candidate's delay or closes its connection, and stops its budget.
func (r *Resolution) abandon(out *Outbox) {
	switch r.stage {
	case stageDelay:
		out.add(Effect{Kind: CancelTimer, Timer: r.a.timer})
	case stageSentinel, stageAsking, stagePrimary, stageRole:
		out.add(Effect{Kind: Close, Conn: r.conn})
	}
	r.a.becomeStopped()
}

func (r *Resolution) requested(ev *Event, out *Outbox) {
	if r.phase == resolutionRunning {
		r.again = true
		return
	}
	r.eventNeed = true
	r.becomeRunning(out)
}

func (r *Resolution) primaryFailed(ev *Event, out *Outbox) {
	if ev.Sentinel == nil || !r.live || ev.Sentinel.Generation != r.generation {
		return
	}
	r.live = false
	r.retire(out)
	from := len(out.Effects)
	r.a.emit(Lifecycle{SourceState: SourceDisconnected, Err: ev.Err}, out)
	tagEndpoint(out, from, r.primary)
}

func (r *Resolution) retire(out *Outbox) {
	f := out.push(Retire)
	f.Slot, f.Endpoint, f.Sentinel = -1, r.primary, &SentinelData{Generation: r.generation}
}

func (r *Resolution) handshakeDone(ev *Event, out *Outbox) {
	if !r.owns(ev.Conn) {
		return
	}
	switch r.stage {
	case stageSentinel:
		r.becomeAsking(out)
	case stagePrimary:
		r.becomeRole(out)
	}
}

func (r *Resolution) answered(ev *Event, out *Outbox) {
	d := ev.Sentinel
	if d == nil {
		r.candidateFailed(orNoAnswer(ev.Err), ev.Draw, out)
		return
	}
	switch {
	case r.stage == stageRole && d.Query == SentinelQueryRole:
		switch {
		case ev.Err != nil:
			r.candidateFailed(ev.Err, ev.Draw, out)
		case d.Role != RolePrimary:
			r.candidateFailed(ErrNotPrimary, ev.Draw, out)
		default:
			r.validated(out)
		}
		return
	case r.stage != stageAsking:
		return
	case d.Query == SentinelQueryPeers && r.askingPeers:
		r.askingPeers = false
		if ev.Err == nil {
			r.learn(d.Peers)
		}
	case d.Query == r.asking && r.asking != SentinelQueryNone:
		switch {
		case ev.Err != nil && d.Denied && d.Query == SentinelQueryPrimary:
			// No permission for SENTINEL MASTER: ask for the address alone and rely on ROLE.
			if !r.warned {
				r.warned = true
				pushWarn(out, WarningNoConfigEpoch, r.candidate(r.cand))
			}
			r.asking = SentinelQueryPrimaryAddr
			pushQuery(out, r.conn, SentinelQueryPrimaryAddr)
			return
		case ev.Err != nil:
			r.candidateFailed(ev.Err, ev.Draw, out)
			return
		}
		r.asking = SentinelQueryNone
		primaryQuery := d.Query == SentinelQueryPrimary
		r.rep = report{primary: d.Primary, epoch: d.Epoch, epochKnown: d.EpochKnown && primaryQuery,
			inFailover: d.InFailover && primaryQuery}
	default:
		return
	}
	if r.asking == SentinelQueryNone && !r.askingPeers {
		r.judge(ev.Draw, out)
	}
}

// judge decides on the Sentinel's report once every query is answered: a usable primary that
// would not roll the client back is checked with ROLE.
func (r *Resolution) judge(draw float64, out *Outbox) {
	rep := r.rep
	switch {
	case !rep.primary.Dialable() || rep.primary.Host != CanonicalHost(rep.primary.Host):
		r.candidateFailed(ErrNoPrimary, draw, out)
	case rep.epochKnown && r.epochKnown && !r.primary.IsZero() && rep.primary != r.primary &&
		(rep.epoch <= r.epoch || rep.inFailover):
		// An older epoch, or the same one for another primary, rolls the client back. A
		// Sentinel in the middle of a failover names the primary it is failing over from,
		// whatever epoch it gives: following it would roll back too.
		r.candidateFailed(ErrStaleSentinel, draw, out)
	default:
		r.becomePrimary(out)
	}
}

// learn adds the peers not known yet, up to MaxLearnedSentinels.
func (r *Resolution) learn(peers []Endpoint) {
	grew := false
	for _, p := range peers {
		if len(r.learned) >= MaxLearnedSentinels {
			break
		}
		p = Endpoint{Host: CanonicalHost(p.Host), Port: p.Port}
		if !p.Dialable() || p.Port > 65535 || containsEndpoint(r.known, p) || containsEndpoint(r.learned, p) {
			continue
		}
		r.learned = append(r.learned, p)
		grew = true
	}
	if grew {
		known := make([]Endpoint, 0, len(r.cfg.Sentinels)+len(r.learned))
		r.known = append(append(known, r.cfg.Sentinels...), r.learned...)
	}
}

func containsEndpoint(eps []Endpoint, e Endpoint) bool {
	for _, x := range eps {
		if x == e {
			return true
		}
	}
	return false
}

// candidateFailed fails the current candidate with err, closing its connection unless the
// runtime reported it gone (conn is then zero), and moves on: to the next candidate,
// after the policy's delay (or at once without a policy), or to the end of the resolution, by
// depletion or exhaustion.
func (r *Resolution) candidateFailed(err error, draw float64, out *Outbox) {
	failed := r.candidate(r.cand)
	if r.conn != 0 {
		// The candidate failed for what it answered: its connection is still open.
		out.add(Effect{Kind: Close, Conn: r.conn})
		r.conn = 0
	}
	r.stage, r.asking, r.askingPeers = stageNone, SentinelQueryNone, false
	r.a.fail(err)
	from := len(out.Effects)
	switch r.a.decide(r.cand+1 < len(r.known)) {
	case rulingDepleted:
		r.a.becomeDepleted()
		r.failedResolution(OutcomeFailed, err, failed, draw, out)
	case rulingExhausted:
		r.a.becomeExhausted(out)
		tagEndpoint(out, from, failed)
		r.failedResolution(OutcomeExhausted, err, failed, draw, out)
	case rulingUngoverned:
		r.a.emit(Lifecycle{SourceState: SourceDisconnected, Err: err}, out)
		tagEndpoint(out, from, failed)
		r.cand++
		r.becomeSentinel(out)
	case rulingRetry:
		r.a.emit(Lifecycle{SourceState: SourceDisconnected, Attempt: r.a.n, Err: err}, out)
		tagEndpoint(out, from, failed)
		r.cand++
		from = len(out.Effects)
		delay := r.a.plan(draw, out)
		scheduled := Lifecycle{SourceState: SourceConnecting, Attempt: r.a.n, NextDelay: delay, Scheduled: true}
		if delay <= 0 {
			r.a.emit(scheduled, out)
			tagEndpoint(out, from, r.candidate(r.cand))
			r.becomeSentinel(out)
			return
		}
		r.becomeDelayed(delay, out)
		r.a.emit(scheduled, out)
		tagEndpoint(out, from, r.candidate(r.cand))
	}
}

// failedResolution ends a resolution that found no primary: its waiters fail, and a rediscovery
// the monitor asked for is retried.
func (r *Resolution) failedResolution(outcome Outcome, err error, failed Endpoint, draw float64, out *Outbox) {
	from := len(out.Effects)
	r.a.emit(Lifecycle{SourceState: SourceDisconnected, Attempt: r.a.n, Exhausted: outcome == OutcomeExhausted, Err: err}, out)
	tagEndpoint(out, from, failed)
	for _, w := range r.waiters {
		out.add(Effect{Kind: Complete, Waiter: w, Outcome: outcome, Slot: -1, Err: err})
	}
	r.waiters = r.waiters[:0]
	r.failedRuns++
	r.restUntil, r.lastOutcome, r.lastErr = r.now+NoPolicyWait(r.failedRuns), outcome, err
	if r.again {
		r.again, r.eventNeed = false, true
	}
	if !r.eventNeed {
		r.becomeIdle()
		return
	}
	r.retries++
	var delay time.Duration
	if p := r.rules.policy; p != nil {
		if p.Exhausts(r.retries - 1) {
			// The policy's budget for retrying this rediscovery is spent: discovery runs again
			// on demand, or on the monitor's next request.
			r.eventNeed, r.retries = false, 0
			r.becomeIdle()
			return
		}
		delay = p.Delay(r.retries, draw)
	} else {
		delay = rediscoveryBackoff.wait(r.retries)
	}
	r.becomeWaiting(max(delay, RediscoveryInterval), out)
}

// validated publishes the candidate's primary, which answered ROLE as a primary, and ends the
// resolution.
func (r *Resolution) validated(out *Outbox) {
	out.add(Effect{Kind: Close, Conn: r.conn})
	attempt := r.a.n
	r.a.becomeReady()
	r.publish(out)
	from := len(out.Effects)
	r.a.emit(Lifecycle{SourceState: SourceConnected, Attempt: attempt}, out)
	tagEndpoint(out, from, r.primary)
	for _, w := range r.waiters {
		f := out.push(Complete)
		f.Waiter, f.Outcome, f.Slot, f.Endpoint = w, OutcomeGranted, -1, r.primary
	}
	r.waiters = r.waiters[:0]
	r.eventNeed, r.retries = false, 0
	r.failedRuns, r.restUntil, r.lastErr = 0, 0, nil
	r.becomeIdle()
	if r.again {
		// The monitor asked while this resolution ran: what it saw may be newer.
		r.again, r.eventNeed = false, true
		r.becomeRunning(out)
	}
}

// publish makes the candidate's report the validated primary.
func (r *Resolution) publish(out *Outbox) {
	rep := r.rep
	// A Sentinel in the middle of a failover gives the epoch of the primary it promotes with
	// the address of the one it replaces: that epoch must not vouch for this primary, or the
	// promoted one, reported under the same epoch once the failover completes, would be
	// refused as stale for good.
	if rep.epochKnown && !rep.inFailover && (!r.epochKnown || rep.epoch > r.epoch) {
		r.epoch, r.epochKnown = rep.epoch, true
	}
	changed := !r.primary.IsZero() && rep.primary != r.primary
	if !r.live || changed {
		if r.live {
			r.retire(out)
		}
		r.generation++
		r.live = true
	}
	r.primary = rep.primary
	f := out.push(Publish)
	f.Slot, f.Endpoint = -1, r.primary
	f.Sentinel = &SentinelData{Primary: r.primary, Epoch: r.epoch, EpochKnown: r.epochKnown,
		Generation: r.generation, Changed: changed, Peers: r.known}
	if changed {
		g := out.push(Record)
		g.Slot, g.Endpoint = -1, r.primary
		g.Metric = Metric{Instrument: InstrumentSentinelFailover, Source: SourceUnspecified, Value: 1}
	}
}

func (r *Resolution) timerFired(ev *Event, out *Outbox) {
	switch {
	case r.phase == resolutionRunning && r.stage == stageDelay && ev.Timer == r.a.timer:
		r.stage = stageNone
		r.becomeSentinel(out)
	case r.phase == resolutionWaiting && ev.Timer == r.retryTimer:
		r.retryTimer = 0 // it fired: nothing to cancel
		r.becomeRunning(out)
	}
}

func (r *Resolution) dispose(out *Outbox) {
	switch r.phase {
	case resolutionRunning:
		r.abandon(out)
	case resolutionWaiting:
		out.add(Effect{Kind: CancelTimer, Timer: r.retryTimer})
	}
	for _, w := range r.waiters {
		out.add(Effect{Kind: Complete, Waiter: w, Outcome: OutcomeClosed, Slot: -1})
	}
	r.waiters = r.waiters[:0]
	r.eventNeed, r.again = false, false
	r.becomeClosed()
}
