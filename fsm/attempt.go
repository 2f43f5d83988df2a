package fsm

import (
	"strconv"
	"time"
)

// The attempt sub-machine.
//
// Every recovery path makes connection attempts under the reconnect policy: a command slot
// replacing its connection, a dedicated rent acquiring one, a pub/sub episode restoring its
// subscriptions, and (next) a Cluster discovery round, the topology refresh, a Sentinel
// resolution and a Sentinel monitor. An attempt is that common part, written once. Its host
// machine decides when an attempt starts, fails or stops, and in which order its own effects
// (routes, completions, subscriptions) interleave; the attempt owns everything the policy
// decides:
//
//   - The attempt number n. The first attempt of a budget that the policy does not count (an
//     initial connection, a rent's immediate attempt, a round's first candidate) is attempt 0.
//     After a failure, the next attempt is n+1; the loss of a ready connection is not a failed
//     attempt, so a replacement starts at attempt 1.
//   - The delay before attempt n: Policy.Delay with the event's draw (clamped once, by
//     clampDraw). Attempts no policy governs wait on the host's backoff schedule instead, counted
//     in consecutive failures since the last success (NoPolicyWait for slots and pub/sub).
//   - Exhaustion, one definition: a failure of attempt n exhausts the budget when attempt n+1
//     would exceed MaxAttempts (Policy.Exhausts). Exhaustion is sticky until the host renews the
//     budget, and it is the only ruling that records the exhausted measurement.
//   - Candidate depletion, a distinct ruling: when the host has no candidate left to try, the
//     failure ends the budget without exhaustion, even when the last candidate used the last
//     attempt. A path without candidates (a slot, a rent, an episode) always has more.
//   - Identifiers: the ConnID of every dial and the TimerID of every delay come from its
//     machine's one allocator (ids), so they carry the machine's bits and never repeat; episode
//     ids come from the same allocator when the path has them.
//   - Emission: the attempt and delay measurements of each planned attempt, the exhausted
//     measurement, and lifecycle observations, labelled with its source, scope, slot and
//     episode.
//
// Phases and transitions are explicit, in the style of etcd-io/raft's becomeX: each become
// function checks that its edge is legal, panicking otherwise (an illegal edge is a bug in the
// host machine, never a consequence of outside input), and resets the fields that only the old
// phase used: the connection outside dialing, handshaking and ready; the timer outside
// scheduled and resting. The edges:
//
//	idle, failed, scheduled           -> dialing       becomeDialing
//	dialing                           -> handshaking   becomeHandshaking
//	dialing, handshaking              -> ready         becomeReady
//	dialing, handshaking              -> failed        fail (a failed attempt)
//	ready                             -> failed        lose (a lost connection: a new budget)
//	resting                           -> failed        endRest
//	failed                            -> scheduled     becomeScheduled (after decide and plan)
//	failed                            -> resting       becomeResting
//	failed                            -> exhausted     becomeExhausted
//	failed                            -> depleted      becomeDepleted
//	dialing, handshaking, failed,
//	exhausted, depleted               -> idle          becomeIdle, renew, maybeRenew
//	any but stopped                   -> stopped       becomeStopped, stop
//
// A failed attempt stays in failed only until the host acts in the same step (it schedules,
// dials, rests, exhausts, depletes or idles it), except in a Mux slot, whose next attempt waits
// for a use.

// attemptPhase is where an attempt stands.
type attemptPhase uint8

const (
	// attemptIdle: no attempt in this budget yet (a fresh slot, a rent waiting for capacity, an
	// episode with no connection).
	attemptIdle attemptPhase = iota
	// attemptScheduled: the delay before attempt n runs (timer).
	attemptScheduled
	// attemptDialing: attempt n is connecting (conn).
	attemptDialing
	// attemptHandshaking: attempt n's transport is up; its setup (handshake, resubscription)
	// runs (conn).
	attemptHandshaking
	// attemptReady: an attempt succeeded and its connection serves (conn). The budget is whole
	// again.
	attemptReady
	// attemptFailed: the last attempt failed, or the ready connection was lost; the host decides
	// what follows.
	attemptFailed
	// attemptExhausted: the budget is spent. Sticky until renewed.
	attemptExhausted
	// attemptStopped: retired, disposed or withdrawn. Terminal.
	attemptStopped
	// attemptResting: a failure no policy governs rests on the backoff schedule (timer); the
	// rest ends in failed, and never dials by itself.
	attemptResting
	// attemptDepleted: no candidate was left to try. Terminal for the budget.
	attemptDepleted
)

var attemptPhaseNames = [...]string{"idle", "scheduled", "dialing", "handshaking", "ready",
	"failed", "exhausted", "stopped", "resting", "depleted"}

// String returns the lower-case name of the phase.
func (p attemptPhase) String() string {
	if int(p) < len(attemptPhaseNames) {
		return attemptPhaseNames[p]
	}
	return "attempt-phase(" + strconv.Itoa(int(p)) + ")"
}

// phaseSet is a set of phases: the legal sources of an edge.
type phaseSet uint16

// The legal sources of each edge, and the phases with an attempt in progress.
const (
	anyPhase      phaseSet = 1<<(attemptDepleted+1) - 1
	toDialing     phaseSet = 1<<attemptIdle | 1<<attemptFailed | 1<<attemptScheduled
	toHandshaking phaseSet = 1 << attemptDialing
	toReady       phaseSet = 1<<attemptDialing | 1<<attemptHandshaking
	toFailed      phaseSet = 1<<attemptDialing | 1<<attemptHandshaking | 1<<attemptReady | 1<<attemptResting
	fromFailed    phaseSet = 1 << attemptFailed
	toIdle        phaseSet = 1<<attemptDialing | 1<<attemptHandshaking | 1<<attemptFailed |
		1<<attemptExhausted | 1<<attemptDepleted
	toStopped  phaseSet = anyPhase &^ (1 << attemptStopped)
	inProgress phaseSet = 1<<attemptScheduled | 1<<attemptDialing | 1<<attemptHandshaking
)

// ruling is what follows a failure, as the budget decides it.
type ruling uint8

const (
	// rulingRetry: attempt n+1 is within the budget; plan it.
	rulingRetry ruling = iota
	// rulingUngoverned: no policy governs the next attempt; the host applies its own rule (a
	// rest, an immediate fallback, or no retry at all).
	rulingUngoverned
	// rulingExhausted: attempt n+1 would exceed MaxAttempts.
	rulingExhausted
	// rulingDepleted: no candidate is left; the budget ends without exhaustion.
	rulingDepleted
)

var rulingNames = [...]string{"retry", "ungoverned", "exhausted", "depleted"}

// String returns the lower-case name of the ruling.
func (v ruling) String() string {
	if int(v) < len(rulingNames) {
		return rulingNames[v]
	}
	return "ruling(" + strconv.Itoa(int(v)) + ")"
}

// backoff is a schedule of waits that no reconnect policy governs: no wait before the first
// failure, first after it, doubling after each further consecutive failure, at most max. Max
// must not be below first. The zero backoff never waits.
type backoff struct {
	first, max time.Duration
}

// noPolicyBackoff is the no-policy schedule of command slots and pub/sub (NoPolicyWait).
func noPolicyBackoff() backoff { return backoff{first: NoPolicyFirstWait, max: NoPolicyMaxWait} }

// wait returns the wait after failures consecutive failures. It never overflows, whatever
// failures and the bounds.
func (b backoff) wait(failures int) time.Duration {
	if failures <= 0 || b.first <= 0 {
		return 0
	}
	d := b.first
	for i := 1; i < failures && d < b.max; i++ {
		if d > b.max/2 {
			return b.max
		}
		d *= 2
	}
	return min(d, b.max)
}

// idSpace is the number of identifiers one machine can allocate: the bits below its machine
// bits.
const idSpace = 1 << idShift

// nodeIDSpace is the number of identifiers one node machine of a Cluster can allocate.
const nodeIDSpace = 1 << nodeShift

// idSpaceOf returns the identifier space of the machine whose IDBase is base.
func idSpaceOf(base uint64) uint64 {
	if isNodeMachine(MachineOf(base)) {
		return nodeIDSpace
	}
	return idSpace
}

// ids is a machine's one identifier allocator. ConnIDs and TimerIDs share one sequence offset by
// the machine's IDBase, so every identifier names its machine (MachineOf) and no two of a
// machine are equal; episode ids have their own sequence, offset by the episode base.
type ids struct {
	base, last            uint64
	episodeBase, episodes uint64
	// space is the number of identifiers the machine may allocate.
	space uint64
	// shared, when set, is the episode counter of several machines (a Cluster machine and its
	// nodes' pools), in place of episodes.
	shared *uint64
}

func newIDs(base, episodeBase uint64) ids {
	return ids{base: base, episodeBase: episodeBase, space: idSpaceOf(base)}
}

// next returns the next identifier. It panics when the machine's identifiers are used up: 2^56
// for a client's machines, which at a million attempts a second takes more than two thousand
// years, and 2^36 for one Cluster node's machine, which at a thousand attempts a second to one
// node takes more than two years.
func (g *ids) next() uint64 {
	if g.last == g.space-1 {
		g.usedUp()
	}
	g.last++
	return g.base + g.last
}

func (g *ids) usedUp() {
	panic("fsm: machine " + MachineOf(g.base).String() + " used up its identifiers")
}

func (g *ids) conn() ConnID   { return ConnID(g.next()) }
func (g *ids) timer() TimerID { return TimerID(g.next()) }

func (g *ids) episode() uint64 {
	if g.shared != nil {
		*g.shared++
		return g.episodeBase + *g.shared
	}
	g.episodes++
	return g.episodeBase + g.episodes
}

// attemptRules are what the attempts of one machine share: the policy, the schedule of attempts
// it does not govern, the labels of their observations and the machine's allocator.
type attemptRules struct {
	// policy is the reconnect policy, or nil for none. It is valid.
	policy *Policy
	// backoff is the schedule of attempts the policy does not govern.
	backoff backoff
	// source and scope label every measurement and observation.
	source Source
	scope  Scope
	// episodes says whether attempts carry episode ids: one is allocated when a budget plans its
	// first attempt, and kept until the next budget starts.
	episodes bool
	// ids is the machine's allocator.
	ids *ids
	// candidates marks a path whose attempts contact a candidate through other machines (a
	// Cluster discovery round queries a node over the node's own connections): becomeDialing
	// allocates the attempt's identifier, which names the contact, and dials nothing itself.
	candidates bool
}

// attempt is the attempt sub-machine of one source of connections: a command slot, a dedicated
// rent, a pub/sub episode. See the top of this file.
type attempt struct {
	rules *attemptRules
	// conn is the attempt's connection while dialing or handshaking, and the ready connection.
	conn ConnID
	// timer is the armed timer while scheduled or resting.
	timer TimerID
	// n is the number of the current attempt, or of the last one while failed (see the top).
	n int
	// failures counts consecutive failed attempts since the last success: the backoff schedule's
	// input.
	failures int
	// err is the last failure of the current budget.
	err error
	// episode is the episode id of the current budget (0: none yet, or the path has none).
	episode uint64
	// owner is the waiter the attempts work for, carried by Dial and ArmTimer (dedicated
	// rents), or 0.
	owner WaiterID
	// slot is the command slot of Dial effects and observations, or -1.
	slot  int
	phase attemptPhase
	// renewed records a renewal that arrived while the budget was being spent (maybeRenew).
	renewed bool
}

func newAttempt(rules *attemptRules, slot int, owner WaiterID) attempt {
	return attempt{rules: rules, slot: slot, owner: owner}
}

// check panics unless the attempt's phase is one of from: the edge to phase to is illegal. It
// inlines; the panic's formatting stays out of line.
func (a *attempt) check(to attemptPhase, from phaseSet) {
	if from&(1<<a.phase) == 0 {
		illegalEdge(a.phase, to)
	}
}

func illegalEdge(from, to attemptPhase) {
	panic("fsm: illegal attempt transition " + from.String() + " -> " + to.String())
}

// inProgress reports whether an attempt is scheduled or running.
func (a *attempt) inProgress() bool { return inProgress&(1<<a.phase) != 0 }

// becomeDialing starts attempt n: it allocates the connection and dials it.
func (a *attempt) becomeDialing(out *Outbox) {
	a.check(attemptDialing, toDialing)
	a.phase = attemptDialing
	a.timer = 0
	a.conn = a.rules.ids.conn()
	if a.rules.candidates {
		return
	}
	f := out.push(Dial)
	f.Slot, f.Conn, f.Attempt, f.Waiter = a.slot, a.conn, a.n, a.owner
}

// becomeHandshaking records that the attempt's transport is up; its setup runs.
func (a *attempt) becomeHandshaking() {
	a.check(attemptHandshaking, toHandshaking)
	a.phase = attemptHandshaking
}

// becomeReady records the attempt's success: its connection serves, and the budget is whole
// again (number, failures and error reset). The episode id stays for the observation of the
// success; the next budget starts a new one.
func (a *attempt) becomeReady() {
	a.check(attemptReady, toReady)
	a.phase = attemptReady
	a.n, a.failures, a.err, a.renewed = 0, 0, nil, false
}

// adopt makes c the ready connection, in place of the one it returns (lifetime recycling).
func (a *attempt) adopt(c ConnID) (old ConnID) {
	a.check(attemptReady, 1<<attemptReady)
	old, a.conn = a.conn, c
	return old
}

// fail records the failure of the attempt in progress with err.
func (a *attempt) fail(err error) {
	a.check(attemptFailed, toReady)
	a.failures++
	a.err = err
	a.becomeFailed()
}

// lose records the loss of the ready connection with err. It is not a failed attempt: the next
// attempt is a replacement, attempt 1 of a new budget (and a new episode).
func (a *attempt) lose(err error) {
	a.check(attemptFailed, 1<<attemptReady)
	a.err = err
	a.episode = 0
	a.becomeFailed()
}

// endRest ends a rest: the next attempt awaits the host.
func (a *attempt) endRest() {
	a.check(attemptFailed, 1<<attemptResting)
	a.becomeFailed()
}

func (a *attempt) becomeFailed() {
	a.check(attemptFailed, toFailed)
	a.phase = attemptFailed
	a.conn, a.timer = 0, 0
}

// decide says what follows the failure: depletion when the host has no candidate left (more is
// false), whatever the budget; the host's own rule without a policy; exhaustion when attempt
// n+1 would exceed MaxAttempts; a retry otherwise.
func (a *attempt) decide(more bool) ruling {
	a.check(attemptFailed, fromFailed)
	switch p := a.rules.policy; {
	case !more:
		return rulingDepleted
	case p == nil:
		return rulingUngoverned
	case p.Exhausts(a.n):
		return rulingExhausted
	}
	return rulingRetry
}

// plan consumes attempt n+1 of the budget, which decide allowed: it starts the budget's episode
// when the path has episode ids and none runs, records the attempt and delay measurements (a
// scheduled attempt is measured before its delay, even when the delay is later cancelled), and
// returns the delay, drawn with draw. The host then dials at once (zero delay) or schedules.
func (a *attempt) plan(draw float64, out *Outbox) time.Duration {
	if a.decide(true) != rulingRetry {
		a.overBudget()
	}
	a.n++
	if a.rules.episodes && a.episode == 0 {
		a.episode = a.rules.ids.episode()
	}
	delay := a.rules.policy.Delay(a.n, draw)
	a.record(out, InstrumentAttempt, float64(a.n))
	a.record(out, InstrumentDelay, delay.Seconds())
	return delay
}

func (a *attempt) overBudget() {
	panic("fsm: attempt " + strconv.Itoa(a.n+1) + " planned beyond the budget of " + a.rules.policy.String())
}

// wait returns the backoff schedule's wait after the consecutive failures so far.
func (a *attempt) wait() time.Duration { return a.rules.backoff.wait(a.failures) }

// becomeScheduled arms the delay before attempt n.
func (a *attempt) becomeScheduled(delay time.Duration, out *Outbox) {
	a.check(attemptScheduled, fromFailed)
	a.phase = attemptScheduled
	a.arm(delay, out)
}

// becomeResting arms a rest of wait after a failure no policy governs.
func (a *attempt) becomeResting(wait time.Duration, out *Outbox) {
	a.check(attemptResting, fromFailed)
	a.phase = attemptResting
	a.arm(wait, out)
}

func (a *attempt) arm(after time.Duration, out *Outbox) {
	a.conn = 0
	a.timer = a.rules.ids.timer()
	f := out.push(ArmTimer)
	f.Timer, f.After, f.Waiter = a.timer, after, a.owner
}

// becomeExhausted ends the budget at its limit and records the exhausted measurement.
func (a *attempt) becomeExhausted(out *Outbox) {
	a.check(attemptExhausted, fromFailed)
	a.phase = attemptExhausted
	a.record(out, InstrumentExhausted, 1)
}

// becomeDepleted ends the budget for want of candidates. Nothing is recorded: depletion is not
// exhaustion.
func (a *attempt) becomeDepleted() {
	a.check(attemptDepleted, fromFailed)
	a.phase = attemptDepleted
}

// becomeIdle starts a fresh budget. From dialing or handshaking it abandons the attempt: the host
// closes its connection.
func (a *attempt) becomeIdle() {
	a.check(attemptIdle, toIdle)
	a.phase = attemptIdle
	a.n, a.failures, a.conn, a.timer, a.episode, a.err, a.renewed = 0, 0, 0, 0, 0, nil, false
}

// renew gives the attempt a fresh budget, as a validated primary publication does for a Sentinel
// monitor. An exhausted attempt becomes idle and renew reports true: the host starts over. While
// a budget is being spent, the renewal is remembered for maybeRenew. Otherwise (idle, ready,
// depleted, stopped) there is nothing to renew.
func (a *attempt) renew() bool {
	switch a.phase {
	case attemptExhausted:
		a.becomeIdle()
		return true
	case attemptScheduled, attemptDialing, attemptHandshaking, attemptFailed, attemptResting:
		a.renewed = true
	}
	return false
}

// maybeRenew renews an exhausted attempt whose budget was renewed while it was being spent, and
// reports whether it did: the host then starts over at once instead of waiting for another
// renewal.
func (a *attempt) maybeRenew() bool {
	if a.phase != attemptExhausted || !a.renewed {
		return false
	}
	a.becomeIdle()
	return true
}

// becomeStopped ends the attempt for good.
func (a *attempt) becomeStopped() {
	a.check(attemptStopped, toStopped)
	a.phase = attemptStopped
	a.conn, a.timer = 0, 0
}

// stop cancels what the attempt holds (its timer, its connection in progress, or its ready
// connection, drained first when drain is set) and stops it.
func (a *attempt) stop(drain bool, out *Outbox) {
	switch a.phase {
	case attemptScheduled, attemptResting:
		out.add(Effect{Kind: CancelTimer, Timer: a.timer})
	case attemptDialing, attemptHandshaking:
		out.add(Effect{Kind: Close, Conn: a.conn})
	case attemptReady:
		out.add(Effect{Kind: Close, Conn: a.conn, Drain: drain})
	}
	a.becomeStopped()
}

// emit appends the lifecycle observation l, labelled with the attempt's source, scope, slot and
// episode.
func (a *attempt) emit(l Lifecycle, out *Outbox) {
	f := out.push(Emit)
	f.Lifecycle = l
	f.Lifecycle.Source, f.Lifecycle.Scope, f.Lifecycle.Slot, f.Lifecycle.Episode = a.rules.source, a.rules.scope, a.slot, a.episode
}

// record appends a measurement of instrument, labelled with the attempt's source and scope.
func (a *attempt) record(out *Outbox, instrument Instrument, value float64) {
	out.push(Record).Metric = Metric{Instrument: instrument, Source: a.rules.source, Scope: a.rules.scope, Value: value}
}
