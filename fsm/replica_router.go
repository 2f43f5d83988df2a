package fsm

import "time"

// Router decides where reads go among a primary and its replicas: the read policies, the
// latency estimates from PING probes and the tolerance bands over them, replica validation
// (ROLE, replication link, serve-stale), cool-downs, staleness bounds, refresh backoff and
// hedging. Measurements and time arrive as events (RouterEvent); every decision leaves as an
// effect (RouterEffect). It is pure: the same state and event always give the same effects.
//
// Candidates are numbered: 0 is the primary, i the i-th replica of RouterConfig.Endpoints.
//
// Selection ranks the usable candidates by the read's policy into tiers, takes the best tier,
// and within it the band: the candidates with a fresh estimate no slower than the fastest plus
// the tolerance (only when latency counts: ReadNearest, or RouterConfig.Banded), or the whole
// tier otherwise and when nothing in it is measured. Reads rotate through the band. A
// candidate whose probe is pending takes no read; a read that finds only such candidates
// waits for up to ProbeDeadline.
//
// A read whose policy finds no usable candidate, but a replica unusable only because its
// validation is overdue (older than two refresh intervals) while its re-validation is pending
// (sent in that step, or in flight for less than ProbeDeadline), waits the same way: for up to
// ProbeDeadline, and selects again when the answer arrives. The stale answer itself never
// serves the read, so a process that ran late waits one ROLE round trip instead of failing.
//
// A replica is usable after it answered ROLE as a replica, while that answer is younger than
// two refresh intervals, outside its cool-down, and with a connected link or serve-stale set.
// The primary is usable outside its cool-down.
type Router struct {
	cfg   RouterConfig
	cands []readCandidate
	// rotation turns reads through a band; hedgeRotation turns hedges through theirs, so that
	// hedges never shift which server the next read goes to.
	rotation, hedgeRotation uint64
	// probes counts the probes in flight (at most ProbesInFlightMax).
	probes int
	// latency turns probing on: set by the configuration or by the first read that needs it.
	latency bool
	// credits is the hedge budget, in percent of a hedge (at most hedgeCost: one stored).
	credits int
	// eligible counts hedge-eligible reads; hedges counts hedges sent.
	eligible, hedges uint64
	// waiting are the reads parked behind pending probes, in arrival (deadline) order.
	waiting []waitingRead
	// watched are the reads watched for a hedge, in routing (due) order.
	watched []watchedRead
	// armed is the time of the last WakeAt, while it is pending.
	armed    time.Duration
	hasArmed bool
	// scratch holds a selection's band; band is the last published one (a ReadStarted's).
	scratch []int
	band    RouterBand
}

// RouterBand is the outcome of the last completed band selection: the policy, the candidates
// the read rotated among, and when it was captured. It is immutable once returned.
type RouterBand struct {
	Policy     ReadFrom
	Candidates []int
	At         time.Duration
}

type readCandidate struct {
	// validated: a ROLE answer was received; replica: it reported ROLE replica.
	validated, replica bool
	link               Link
	serveStale         bool
	zone               string
	zoneKnown          bool
	validatedAt        time.Duration
	validating         bool
	validateSentAt     time.Duration
	nextValidate       time.Duration
	backoff            time.Duration
	coolUntil          time.Duration
	// The latency estimate.
	rtt, sampledAt time.Duration
	sampled        bool
	// The probe in flight, and the last one sent.
	probing     bool
	probeSentAt time.Duration
	probed      bool
	lastProbe   time.Duration
}

type waitingRead struct {
	id        ReadID
	policy    ReadFrom
	hedgeable bool
	deadline  time.Duration
}

// Hedge states of a watched read.
const (
	hedgeNone  = -1 // not sent yet
	hedgeNever = -2 // its moment passed without a budget or a peer
)

type watchedRead struct {
	id       ReadID
	policy   ReadFrom
	original int
	// hedge is the hedge's target, or hedgeNone or hedgeNever.
	hedge int
	due   time.Duration
	// originalFailed and hedgeFailed record failed attempts.
	originalFailed, hedgeFailed bool
}

// NewRouter returns a router for a valid configuration; it panics on an invalid one (check it
// with RouterConfig.Validate). Every candidate is validated at the first step.
func NewRouter(cfg RouterConfig) *Router {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg.Endpoints = append([]Endpoint(nil), cfg.Endpoints...)
	return &Router{cfg: cfg, cands: make([]readCandidate, len(cfg.Endpoints)),
		latency: cfg.Default == ReadNearest || cfg.Banded}
}

// Candidates returns the number of candidates (the primary and the replicas).
func (r *Router) Candidates() int { return len(r.cands) }

// Endpoint returns candidate i's endpoint.
func (r *Router) Endpoint(i int) Endpoint { return r.cfg.Endpoints[i] }

// LastBand returns the last completed band selection, or false before any.
func (r *Router) LastBand() (RouterBand, bool) { return r.band, r.band.Candidates != nil }

// Usable reports whether candidate i could take a read at time at (outside its cool-down;
// for a replica, validated as a linked or serve-stale replica within the staleness bound).
func (r *Router) Usable(i int, at time.Duration) bool { return r.usable(i, at) }

// Step applies one event and appends the effects to out.
func (r *Router) Step(ev *RouterEvent, out *RouterOutbox) {
	at := ev.At
	if ev.Kind == Woke && r.hasArmed && at >= r.armed {
		r.hasArmed = false
	}
	target := ev.Target
	known := target >= 0 && target < len(r.cands)
	switch ev.Kind {
	case ReadStarted:
		r.start(ev, out)
	case ReadWithdrawn:
		r.withdraw(ev.Read)
	case ReadEnded:
		r.ended(ev, out)
	case TargetFailed:
		if known {
			r.failed(target, at)
		}
	case ProbeAnswered:
		if known && r.cands[target].probing {
			c := &r.cands[target]
			r.probeOver(c)
			c.rtt, c.sampledAt, c.sampled = ev.RTT, at, true
		}
	case ProbeFailed:
		if known && r.cands[target].probing {
			c := &r.cands[target]
			r.probeOver(c)
			c.sampled = false
		}
	case RoleAnswered:
		if known {
			r.validated(target, ev)
		}
	case RoleFailed:
		if known && r.cands[target].validating {
			c := &r.cands[target]
			c.validating = false
			if c.backoff == 0 {
				c.backoff = r.cfg.RefreshInterval
			} else {
				c.backoff = min(2*c.backoff, max(RefreshBackoffMax, r.cfg.RefreshInterval))
			}
			c.nextValidate = at + c.backoff
			c.coolUntil = max(c.coolUntil, at+r.cooldown(target))
		}
	}
	r.due(at, out)
	r.arm(at, out)
}

func (r *Router) cooldown(i int) time.Duration {
	if i == 0 {
		return PrimaryCooldown
	}
	return r.cfg.RefreshInterval
}

func (r *Router) probeOver(c *readCandidate) {
	c.probing = false
	r.probes--
}

// failed cools candidate i down, drops its estimate, and has a replica revalidated once its
// cool-down ends: nothing is read from it before it answers ROLE again.
func (r *Router) failed(i int, at time.Duration) {
	c := &r.cands[i]
	c.coolUntil = max(c.coolUntil, at+r.cooldown(i))
	c.sampled = false
	if i != 0 {
		c.validated = false
		if !c.validating && c.nextValidate > c.coolUntil {
			c.nextValidate = c.coolUntil
		}
	}
}

func (r *Router) validated(i int, ev *RouterEvent) {
	c := &r.cands[i]
	c.validating = false
	c.validated, c.replica = true, ev.Replica
	c.link, c.serveStale = ev.Link, ev.ServeStale
	c.zone, c.zoneKnown = ev.Zone, ev.ZoneKnown
	if !ev.ZoneKnown {
		c.zone = ""
	}
	c.validatedAt = ev.At
	c.backoff = 0
	c.nextValidate = ev.At + r.cfg.RefreshInterval
}

func (r *Router) hedging(policy ReadFrom, hedgeable bool) bool {
	return r.cfg.HedgeDelay > 0 && hedgeable && policy != ReadPrimary
}

func (r *Router) start(ev *RouterEvent, out *RouterOutbox) {
	policy := ev.Policy
	if policy >= ReadPolicies {
		policy = r.cfg.Default
	}
	if policy == ReadNearest {
		r.latency = true
	}
	if r.hedging(policy, ev.Hedgeable) {
		r.eligible++
		r.credits = min(r.credits+r.cfg.HedgeLoadPercent, hedgeCost)
	}
	target, wait := r.pick(policy, -1, ev.At)
	switch {
	case target >= 0:
		r.route(ev.Read, policy, ev.Hedgeable, target, ev.At, out)
	case wait == waitNone:
		out.add(RouterEffect{Kind: FailRead, Read: ev.Read, Reason: NoCandidate})
	case len(r.waiting) >= ReadsWaitingMax:
		out.add(RouterEffect{Kind: FailRead, Read: ev.Read, Reason: TooManyWaiting})
	default:
		r.waiting = append(r.waiting, waitingRead{id: ev.Read, policy: policy, hedgeable: ev.Hedgeable,
			deadline: ev.At + ProbeDeadline})
	}
}

func (r *Router) route(id ReadID, policy ReadFrom, hedgeable bool, target int, at time.Duration, out *RouterOutbox) {
	watch := r.hedging(policy, hedgeable) && len(r.watched) < ReadsHedgedMax && r.watchedIndex(id) < 0
	if watch {
		r.watched = append(r.watched, watchedRead{id: id, policy: policy, original: target, hedge: hedgeNone,
			due: at + r.cfg.HedgeDelay})
	}
	out.add(RouterEffect{Kind: RouteRead, Read: id, Target: target, Watched: watch})
}

func (r *Router) watchedIndex(id ReadID) int {
	for i := range r.watched {
		if r.watched[i].id == id {
			return i
		}
	}
	return -1
}

func (r *Router) withdraw(id ReadID) {
	for i := range r.waiting {
		if r.waiting[i].id == id {
			r.waiting = append(r.waiting[:i], r.waiting[i+1:]...)
			break
		}
	}
	if i := r.watchedIndex(id); i >= 0 {
		r.watched = append(r.watched[:i], r.watched[i+1:]...)
	}
}

// ended settles a watched read: the first success wins; a failure waits for the other
// attempt if one is in flight, and otherwise completes the read with the original failure.
func (r *Router) ended(ev *RouterEvent, out *RouterOutbox) {
	i := r.watchedIndex(ev.Read)
	if i < 0 {
		return
	}
	w := &r.watched[i]
	isHedge := w.hedge >= 0 && ev.Target == w.hedge
	isOriginal := ev.Target == w.original
	switch {
	case isOriginal && !w.originalFailed:
	case isHedge && !w.hedgeFailed:
	default:
		return // not one of its attempts, or reported twice
	}
	if ev.OK {
		out.add(RouterEffect{Kind: SettleRead, Read: w.id, Target: ev.Target, OK: true})
		if isHedge && !isOriginal {
			out.add(RouterEffect{Kind: CountMetric, Name: MetricHedgeWon, Value: 1})
		}
		r.watched = append(r.watched[:i], r.watched[i+1:]...)
		return
	}
	if isOriginal {
		w.originalFailed = true
	} else {
		w.hedgeFailed = true
	}
	if w.hedge >= 0 && !w.hedgeFailed && w.originalFailed || w.hedge >= 0 && w.hedgeFailed && !w.originalFailed {
		return // the other attempt is still in flight
	}
	out.add(RouterEffect{Kind: SettleRead, Read: w.id, Target: w.original})
	r.watched = append(r.watched[:i], r.watched[i+1:]...)
}

// due does the work whose time has come: probe deadlines, validations, parked reads, hedges,
// and then new probes (so that a parked read is served before a new probe blocks its
// candidate).
func (r *Router) due(at time.Duration, out *RouterOutbox) {
	for i := range r.cands {
		c := &r.cands[i]
		if c.probing && at-c.probeSentAt >= ProbeDeadline {
			r.probeOver(c)
			c.sampled = false
		}
	}
	for i := range r.cands {
		c := &r.cands[i]
		if !c.validating && at >= c.nextValidate {
			c.validating, c.validateSentAt = true, at
			out.add(RouterEffect{Kind: ValidateTarget, Target: i})
		}
	}
	if len(r.waiting) > 0 {
		kept := r.waiting[:0]
		for _, w := range r.waiting {
			target, wait := r.pick(w.policy, -1, at)
			switch {
			case target >= 0:
				r.route(w.id, w.policy, w.hedgeable, target, at, out)
			case wait == waitNone:
				out.add(RouterEffect{Kind: FailRead, Read: w.id, Reason: NoCandidate})
			case at >= w.deadline && wait == waitRole:
				out.add(RouterEffect{Kind: FailRead, Read: w.id, Reason: NoCandidate})
			case at >= w.deadline:
				out.add(RouterEffect{Kind: FailRead, Read: w.id, Reason: ProbesPending})
			default:
				kept = append(kept, w)
			}
		}
		clear(r.waiting[len(kept):])
		r.waiting = kept
	}
	for i := range r.watched {
		w := &r.watched[i]
		if w.hedge != hedgeNone || w.originalFailed || at < w.due {
			continue
		}
		w.hedge = hedgeNever
		if r.credits < hedgeCost {
			continue
		}
		target, _ := r.pick(w.policy, w.original, at)
		if target < 0 {
			continue
		}
		r.credits -= hedgeCost
		r.hedges++
		w.hedge = target
		out.add(RouterEffect{Kind: SendHedge, Read: w.id, Target: target})
		out.add(RouterEffect{Kind: CountMetric, Name: MetricHedgeSent, Value: 1})
		out.add(RouterEffect{Kind: CountMetric, Name: MetricHedgeExtraLoad, Value: int64(r.hedges * 100 / r.eligible)})
	}
	if r.latency {
		for i := range r.cands {
			if r.probes >= ProbesInFlightMax {
				break
			}
			c := &r.cands[i]
			if !c.probing && r.probeWorthy(i, at) && (!c.probed || at-c.lastProbe >= ProbeSpacing) {
				c.probing, c.probeSentAt, c.probed, c.lastProbe = true, at, true, at
				r.probes++
				out.add(RouterEffect{Kind: SendProbe, Target: i})
			}
		}
	}
}

// probeWorthy reports whether candidate i is worth measuring: the primary, or a validated
// replica, outside its cool-down.
func (r *Router) probeWorthy(i int, at time.Duration) bool {
	c := &r.cands[i]
	if at < c.coolUntil {
		return false
	}
	return i == 0 || c.validated && c.replica
}

// arm asks for a wake-up at the next time something falls due.
func (r *Router) arm(at time.Duration, out *RouterOutbox) {
	next, ok := time.Duration(0), false
	consider := func(t time.Duration) {
		if t > at && (!ok || t < next) {
			next, ok = t, true
		}
	}
	for i := range r.cands {
		c := &r.cands[i]
		if !c.validating {
			consider(c.nextValidate)
		} else if len(r.waiting) > 0 && r.revalidating(i, at) {
			consider(c.validateSentAt + ProbeDeadline)
		}
		if c.probing {
			consider(c.probeSentAt + ProbeDeadline)
		} else if r.latency && r.probes < ProbesInFlightMax && c.probed {
			consider(max(c.lastProbe+ProbeSpacing, c.coolUntil))
		} else if r.latency && r.probes < ProbesInFlightMax && at < c.coolUntil {
			consider(c.coolUntil)
		}
	}
	for i := range r.waiting {
		consider(r.waiting[i].deadline)
	}
	for i := range r.watched {
		if w := &r.watched[i]; w.hedge == hedgeNone && !w.originalFailed {
			consider(w.due)
		}
	}
	if !ok || (r.hasArmed && r.armed == next) {
		return
	}
	r.armed, r.hasArmed = next, true
	out.add(RouterEffect{Kind: WakeAt, At: next})
}

// usable reports whether candidate i may take a read at time at.
func (r *Router) usable(i int, at time.Duration) bool {
	c := &r.cands[i]
	if at < c.coolUntil {
		return false
	}
	if i == 0 {
		return true
	}
	return c.validated && c.replica && at-c.validatedAt < 2*r.cfg.RefreshInterval &&
		(c.link == LinkConnected || c.serveStale)
}

// local reports whether candidate i is in the client's zone (ordinal, case-sensitive).
func (r *Router) local(i int) bool {
	c := &r.cands[i]
	return r.cfg.Zone != "" && c.zoneKnown && c.zone == r.cfg.Zone
}

// rank returns candidate i's tier under policy (lower is better), or -1 when the policy never
// reads from it.
func (r *Router) rank(policy ReadFrom, i int) int {
	if i == 0 {
		switch policy {
		case ReadPrimary, ReadPrimaryPreferred, ReadNearest:
			return 0
		case ReadReplicaPreferred:
			return 3
		case ReadAzAffinity:
			return 6
		case ReadAzAffinityReplicasAndPrimary:
			if r.local(0) {
				return 1
			}
			return 7
		}
		return -1
	}
	link := int(r.cands[i].link)
	local := r.local(i)
	switch policy {
	case ReadReplica, ReadReplicaPreferred, ReadNearest:
		return link
	case ReadPrimaryPreferred:
		return 1 + link
	case ReadAzAffinity:
		if local {
			return 2 * link
		}
		return 2*link + 1
	case ReadAzAffinityReplicasAndPrimary:
		switch {
		case link == int(LinkConnected) && local:
			return 0
		case link == int(LinkConnected):
			return 2
		case local:
			return 1 + 2*link
		}
		return 2 + 2*link
	}
	return -1
}

// fresh reports whether candidate i has a usable latency estimate at time at.
func (r *Router) fresh(i int, at time.Duration) bool {
	c := &r.cands[i]
	return c.sampled && at-c.sampledAt < EstimateFresh
}

// pick selects a candidate for a read under policy, never exclude. It returns -1 and the
// reason to wait when the only usable candidates have a probe pending (waitProbe) or the policy
// has none usable but a replica being revalidated (waitRole), -1 and waitNone when nothing can
// take the read.
func (r *Router) pick(policy ReadFrom, exclude int, at time.Duration) (target int, wait waitFor) {
	best := -1
	for i := range r.cands {
		rank := r.rank(policy, i)
		if rank < 0 || i == exclude {
			continue
		}
		if !r.usable(i, at) {
			if wait == waitNone && r.revalidating(i, at) {
				wait = waitRole
			}
			continue
		}
		if r.cands[i].probing {
			wait = waitProbe
			continue
		}
		if best < 0 || rank < best {
			best = rank
		}
	}
	if best < 0 {
		return -1, wait
	}
	inTier := func(i int) bool {
		return i != exclude && !r.cands[i].probing && r.rank(policy, i) == best && r.usable(i, at)
	}
	band := r.scratch[:0]
	if policy == ReadNearest || r.cfg.Banded {
		fastest := time.Duration(-1)
		for i := range r.cands {
			if inTier(i) && r.fresh(i, at) && (fastest < 0 || r.cands[i].rtt < fastest) {
				fastest = r.cands[i].rtt
			}
		}
		if fastest >= 0 {
			limit := fastest
			if r.cfg.Banded {
				limit += r.cfg.Tolerance
			}
			for i := range r.cands {
				if inTier(i) && r.fresh(i, at) && r.cands[i].rtt <= limit {
					band = append(band, i)
				}
			}
		}
	}
	if len(band) == 0 {
		for i := range r.cands {
			if inTier(i) {
				band = append(band, i)
			}
		}
	}
	r.scratch = band
	if exclude >= 0 {
		target = band[r.hedgeRotation%uint64(len(band))]
		r.hedgeRotation++
		return target, waitNone
	}
	target = band[r.rotation%uint64(len(band))]
	r.rotation++
	r.publish(policy, band, at)
	return target, waitNone
}

// waitFor says why a read that found no candidate may wait.
type waitFor uint8

const (
	waitNone  waitFor = iota // nothing to wait for: the read fails
	waitRole                 // a replica's overdue validation is being renewed
	waitProbe                // usable candidates have a probe pending
)

// revalidating reports whether replica i is unusable at time at only because its validation
// is overdue, while a re-validation is pending: due now (the step emits it), or in flight for
// less than ProbeDeadline. A read may wait for that answer; the stale one never serves it.
func (r *Router) revalidating(i int, at time.Duration) bool {
	c := &r.cands[i]
	if i == 0 || at < c.coolUntil || !c.validated || !c.replica || !(c.link == LinkConnected || c.serveStale) ||
		at-c.validatedAt < 2*r.cfg.RefreshInterval {
		return false
	}
	if c.validating {
		return at-c.validateSentAt < ProbeDeadline
	}
	return at >= c.nextValidate
}

// publish records a band selection, keeping the previous observation when nothing changed.
func (r *Router) publish(policy ReadFrom, band []int, at time.Duration) {
	if r.band.Candidates != nil && r.band.Policy == policy && equalInts(r.band.Candidates, band) {
		return
	}
	r.band = RouterBand{Policy: policy, Candidates: append([]int(nil), band...), At: at}
}

func equalInts(a, b []int) bool {
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
