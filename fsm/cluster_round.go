package fsm

import (
	"errors"
	"slices"
)

// Discovery rounds (spec "Cluster discovery fallback").
//
// A round looks for one node that answers a topology query (CLUSTER SLOTS) with a reply that
// is not inconclusive. Its candidates, in order: the known primaries (those with a ready
// connection first; among them from a rotating start, so that refreshes spread over the
// shards), the known replicas (refresh fallbacks, ready ones first), then the configured seeds that are not aliases of a candidate already listed (skipping such a duplicate
// consumes nothing). A candidate is tried through its node's own command slots: a demand for one
// of them (which may dial), then the query on the granted connection; the connection and the
// query share the candidate until one fails, and CandidateTimeout bounds both.
//
// One policy budget covers the whole round, on the attempt sub-machine: the first candidate is
// immediate (attempt 0); after a failure, the next candidate consumes attempt n+1 and waits the
// policy's delay first, measured and announced with that candidate's endpoint. Without a policy
// the fallback is immediate and unmeasured. Running out of candidates ends the round by
// depletion, never by exhaustion, even when the last candidate used the last attempt; a failure
// when another fallback would exceed MaxAttempts ends it by exhaustion, attributed to the final
// failed candidate. An episode (its id, its lifecycle observations) begins only when a fallback
// is scheduled. ClusterPassDeadline bounds the round.
//
// One round runs at a time: every trigger and every waiter shares it. A failed round keeps the
// last map, and a later round starts with a fresh budget.

// candidate is one candidate of a round: a tracked node, or a configured seed not tracked yet.
type candidate struct {
	num  uint32
	seed Endpoint
}

// round is the Cluster machine's discovery round.
type round struct {
	a       attempt
	running bool
	cands   []candidate
	next    int
	// cur is the node of the candidate being tried; querying says its query is in flight.
	cur       uint32
	curAddr   Endpoint
	querying  bool
	candTimer TimerID
	deadline  TimerID
	lastErr   error
	// rounds counts the rounds started, for the rotating start among primaries.
	rounds int
}

var (
	errNoReply    = errors.New("respire: the Cluster topology query got no reply")
	errNodeClosed = errors.New("respire: the Cluster node retired before the topology query")
	errNoSeeds    = errors.New("respire: no Cluster discovery candidate")
)

// queryID is the id of the current candidate's demand and query: the attempt's identifier.
func (r *round) queryID() WaiterID { return WaiterID(r.a.conn) }

// owns reports whether t is one of the round's timers.
func (r *round) owns(t TimerID) bool {
	return r.running && (t == r.candTimer || t == r.deadline || (r.a.phase == attemptScheduled && t == r.a.timer))
}

// start begins a round with a fresh budget.
func (r *round) start(c *Cluster, ev *Event, out *Outbox) {
	r.a = newAttempt(&c.rules, -1, 0)
	r.cands = c.candidates(r.rounds)
	r.rounds++
	r.next, r.lastErr, r.running, r.querying = 0, nil, true, false
	r.deadline = c.ids.timer()
	f := out.push(ArmTimer)
	f.Timer, f.After = r.deadline, ClusterPassDeadline
	if len(r.cands) == 0 {
		r.a.becomeDialing(out)
		r.lastErr = errNoSeeds
		r.a.fail(errNoSeeds)
		r.a.becomeDepleted()
		r.finish(c, false, ev, out)
		return
	}
	r.a.becomeDialing(out)
	r.try(c, ev, out)
}

// candidates lists a round's candidates (see the top of this file).
func (c *Cluster) candidates(rotation int) []candidate {
	var primaries, replicas []candidate
	listed := func(ep Endpoint) bool {
		for _, l := range [][]candidate{primaries, replicas} {
			for _, cd := range l {
				if n := c.node(cd.num); n != nil && (n.addr == ep || slices.Contains(n.aliases, ep)) {
					return true
				}
			}
		}
		return false
	}
	if c.known {
		for _, n := range c.nodes {
			if n.retired || n.kind != nodeMember {
				continue
			}
			if n.role == RolePrimary {
				primaries = append(primaries, candidate{num: n.num})
			} else {
				replicas = append(replicas, candidate{num: n.num})
			}
		}
		if len(primaries) > 1 {
			k := rotation % len(primaries)
			primaries = append(primaries[k:], primaries[:k]...)
		}
		// Nodes with a ready connection first: a round should not start by redialing the node
		// whose loss triggered it.
		ready := func(cd candidate) int {
			if c.node(cd.num).mux.anyReady() {
				return 0
			}
			return 1
		}
		byReadiness := func(a, b candidate) int { return ready(a) - ready(b) }
		slices.SortStableFunc(primaries, byReadiness)
		slices.SortStableFunc(replicas, byReadiness)
	}
	out := append(primaries, replicas...)
	for _, s := range c.cfg.Seeds {
		if listed(s) {
			continue
		}
		out = append(out, candidate{seed: s})
	}
	return out
}

// candidateAddr returns the endpoint a candidate reaches.
func (c *Cluster) candidateAddr(cd candidate) Endpoint {
	if n := c.node(cd.num); n != nil {
		return n.addr
	}
	return cd.seed
}

// try contacts the next candidate: a demand for one of its node's command slots, which the
// node answers at once or once a connection is ready.
func (r *round) try(c *Cluster, ev *Event, out *Outbox) {
	cd := r.cands[r.next]
	r.next++
	n := c.activeNode(cd.num)
	if n == nil {
		for _, m := range c.nodes {
			if !m.retired && (m.addr == cd.seed || slices.Contains(m.aliases, cd.seed)) {
				n = m
				break
			}
		}
		if n == nil && !cd.seed.IsZero() {
			n = c.addNode(cd.seed, nodeSeed)
		}
	}
	if n == nil {
		r.cur, r.curAddr = 0, c.candidateAddr(cd)
		r.failed(c, ErrTooManyNodes, ev, out)
		return
	}
	r.cur, r.curAddr = n.num, n.addr
	r.candTimer = c.ids.timer()
	f := out.push(ArmTimer)
	f.Timer, f.After = r.candTimer, c.cfg.CandidateTimeout
	w := r.queryID()
	c.internal[w] = purposeRound
	dem := Event{Kind: Demanded, At: ev.At, Draw: ev.Draw, Waiter: w, Need: NeedAny}
	c.forward(n, false, &dem, out)
}

// granted handles the node's answer to the candidate's demand: on a grant, the query goes out
// on the granted connection.
func (r *round) granted(c *Cluster, f *Effect, ev *Event, out *Outbox) {
	if !r.running || f.Waiter != r.queryID() || r.querying {
		return
	}
	if f.Outcome != OutcomeGranted {
		err := f.Err
		if err == nil {
			err = errNodeClosed
		}
		r.failed(c, err, ev, out)
		return
	}
	r.querying = true
	q := out.push(Query)
	q.Waiter, q.Conn, q.Node, q.Endpoint, q.Machine = r.queryID(), f.Conn, r.cur, r.curAddr, MachineCluster
}

// answered handles the answer to the candidate's query: a reply that is not inconclusive ends
// the round; anything else fails the candidate.
func (r *round) answered(c *Cluster, ev *Event, out *Outbox) {
	if !r.running || !r.querying || ev.Waiter != r.queryID() {
		return
	}
	r.querying = false
	switch {
	case ev.Kind == QueryFailed:
		err := ev.Err
		if err == nil {
			err = errNoReply
		}
		r.failed(c, err, ev, out)
	case ev.Reply == nil:
		r.failed(c, errNoReply, ev, out)
	default:
		t, ch := c.topo.Apply(*ev.Reply)
		if ch.Verdict == VerdictInconclusive {
			r.failed(c, ch.Err, ev, out)
			return
		}
		r.succeeded(c, t, &ch, ev, out)
	}
}

// timer handles one of the round's timers: a fallback's delay, the candidate's timeout, or the
// round's deadline.
func (r *round) timer(c *Cluster, ev *Event, out *Outbox) {
	switch ev.Timer {
	case r.candTimer:
		r.candTimer = 0
		r.abandonCandidate(c, ev, out)
		r.failed(c, ErrCandidateTimeout, ev, out)
	case r.deadline:
		r.deadline = 0
		r.abandonCandidate(c, ev, out)
		if r.a.phase == attemptScheduled {
			out.push(CancelTimer).Timer = r.a.timer
		}
		r.lastErr = ErrPassDeadline
		r.a.becomeStopped()
		r.finish(c, false, ev, out)
	case r.a.timer:
		r.a.becomeDialing(out)
		r.try(c, ev, out)
	}
}

// abandonCandidate withdraws the candidate's demand if the node still holds it, and forgets its
// query: a late answer is ignored.
func (r *round) abandonCandidate(c *Cluster, ev *Event, out *Outbox) {
	r.querying = false
	w := r.queryID()
	if _, ok := c.internal[w]; !ok {
		return
	}
	delete(c.internal, w)
	if n := c.node(r.cur); n != nil {
		wd := Event{Kind: Withdrew, At: ev.At, Draw: ev.Draw, Waiter: w}
		c.forward(n, false, &wd, out)
	}
}

// failed handles the failure of the current candidate with err: the budget decides between the
// next candidate (at once without a policy, after the policy's delay with one), exhaustion and
// depletion.
func (r *round) failed(c *Cluster, err error, ev *Event, out *Outbox) {
	if r.candTimer != 0 {
		out.push(CancelTimer).Timer = r.candTimer
		r.candTimer = 0
	}
	r.querying = false
	r.lastErr = err
	r.a.fail(err)
	switch r.a.decide(r.next < len(r.cands)) {
	case rulingDepleted:
		r.a.becomeDepleted()
		r.finish(c, false, ev, out)
	case rulingExhausted:
		start := len(out.Effects)
		r.a.becomeExhausted(out)
		label(out, start, r.curAddr)
		r.emit(Lifecycle{SourceState: SourceDisconnected, Attempt: r.a.n, Exhausted: true, Err: err}, r.curAddr, out)
		r.finish(c, true, ev, out)
	case rulingUngoverned:
		r.a.becomeDialing(out)
		r.try(c, ev, out)
	case rulingRetry:
		next := c.candidateAddr(r.cands[r.next])
		start := len(out.Effects)
		delay := r.a.plan(spread(ev.Draw, 0), out)
		label(out, start, next)
		r.emit(Lifecycle{SourceState: SourceConnecting, Attempt: r.a.n, NextDelay: delay, Scheduled: true}, next, out)
		if delay > 0 {
			r.a.becomeScheduled(delay, out)
			return
		}
		r.a.becomeDialing(out)
		r.try(c, ev, out)
	}
}

// succeeded ends the round with the topology t the candidate's reply gave.
func (r *round) succeeded(c *Cluster, t Topology, ch *TopologyChange, ev *Event, out *Outbox) {
	r.cancelTimers(out)
	n := r.a.n
	r.a.becomeReady()
	if r.a.episode != 0 {
		r.emit(Lifecycle{SourceState: SourceConnected, Attempt: n}, r.curAddr, out)
	}
	r.running = false
	if !c.known || ch.Changed() {
		c.dirty = true
	}
	c.topo, c.known = t, true
	c.syncNodes(ch, ev, out)
	c.retireSeeds(ev, out)
	c.ref.succeeded(c, ev, out)
	c.roundEnded(OutcomeGranted, nil, ev, out)
}

// finish ends a failed round: exhausted, depleted or past its deadline.
func (r *round) finish(c *Cluster, exhausted bool, ev *Event, out *Outbox) {
	r.cancelTimers(out)
	r.running = false
	if !exhausted && r.a.episode != 0 {
		r.emit(Lifecycle{SourceState: SourceDisconnected, Attempt: r.a.n, Err: r.lastErr}, r.curAddr, out)
	}
	outcome := OutcomeFailed
	if exhausted {
		outcome = OutcomeExhausted
	}
	if c.known {
		c.retireSeeds(ev, out)
		c.ref.failed(c, r.lastErr, ev, out)
	}
	c.roundEnded(outcome, r.lastErr, ev, out)
}

// cancelTimers cancels the candidate's timeout and the round's deadline.
func (r *round) cancelTimers(out *Outbox) {
	for _, t := range []*TimerID{&r.candTimer, &r.deadline} {
		if *t != 0 {
			out.push(CancelTimer).Timer = *t
			*t = 0
		}
	}
}

// stop ends a running round without an outcome (the machine is shutting down).
func (r *round) stop(c *Cluster, out *Outbox) {
	if !r.running {
		return
	}
	r.cancelTimers(out)
	if r.a.phase == attemptScheduled {
		out.push(CancelTimer).Timer = r.a.timer
	}
	r.a.becomeStopped()
	r.running = false
}

// emit appends the round's lifecycle observation l about the candidate at ep.
func (r *round) emit(l Lifecycle, ep Endpoint, out *Outbox) {
	start := len(out.Effects)
	r.a.emit(l, out)
	label(out, start, ep)
}

// label attributes the effects from start on to the candidate at ep.
func label(out *Outbox, start int, ep Endpoint) {
	for i := start; i < len(out.Effects); i++ {
		out.Effects[i].Endpoint = ep
	}
}

// roundEnded answers the waiters a round ends: demands waiting for a topology are routed (or
// fail with the round), NeedTopology demands learn the node serving their slot, and connect
// demands ask every primary.
func (c *Cluster) roundEnded(outcome Outcome, err error, ev *Event, out *Outbox) {
	waiters := c.waiters
	c.waiters = nil
	for _, w := range waiters {
		if outcome != OutcomeGranted {
			if w.kind == waitConnect && w.started {
				c.waiters = append(c.waiters, w) // asking the primaries; the round does not concern it
				continue
			}
			c.complete(w.ev.Waiter, outcome, err, out)
			continue
		}
		switch w.kind {
		case waitRoute:
			dem := w.ev
			dem.At, dem.Draw = ev.At, ev.Draw
			c.route(&dem, out)
		case waitTopology:
			n := c.serving(w.ev.Slot)
			if n == nil {
				c.complete(w.ev.Waiter, OutcomeFailed, ErrSlotUncovered, out)
				continue
			}
			f := out.push(Complete)
			f.Waiter, f.Outcome, f.Node, f.Endpoint, f.Slot, f.Machine = w.ev.Waiter, OutcomeGranted, n.num, n.addr, w.ev.Slot, MachineCluster
		case waitConnect:
			c.waiters = append(c.waiters, w)
			if !w.started {
				c.startConnect(w, ev, out)
			}
		}
	}
}
