package engine

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// ReplicaJournalMax bounds a ReplicaRouter's journal: it keeps the first ReplicaJournalMax
// events (a journal replays only from its first event) and then counts the rest.
const ReplicaJournalMax = 4096

// ReadRefusal reports that no candidate the read policy allows could take a read, and why
// (fsm.NoCandidate, fsm.ProbesPending, fsm.TooManyWaiting). Nothing was sent. The client maps
// it to its public error.
type ReadRefusal struct {
	Reason fsm.FailReason
}

// Error implements error.
func (e *ReadRefusal) Error() string {
	return "respire: no server the read policy allows is available (" + e.Reason.String() + ")"
}

// ReplicaRouter runs a read router (fsm.Router) over one engine per candidate: the primary's
// at index 0, then each replica's. It steps the router under one lock and journals its events,
// keeps one timer for its WakeAt effects, and sends its probes (PING) and validations (ROLE,
// CONFIG GET replica-serve-stale-data, and INFO SERVER for the availability zone) on the
// candidates' engines. A read asks Select where to go; the caller sends it and reports
// connection failures with Failed.
//
// Only reads that pass through Select take its lock: commands under the Primary policy never
// reach it.
type ReplicaRouter struct {
	rt      Runtime
	targets []*Engine

	mu  sync.Mutex
	m   *fsm.Router
	out fsm.RouterOutbox
	// timer is the id of the armed wake timer (0: none); each arming takes a new id, so a fire
	// that raced with its cancellation only steps a spare Woke, which the router ignores.
	timer   fsm.TimerID
	timers  fsm.TimerID
	waiting map[fsm.ReadID]chan readAnswer
	nextID  uint64
	journal []fsm.RouterEvent
	total   uint64
	closed  bool
	// self is the read whose Select is stepping, and answer its decision when decided: it is
	// handed back without copying the step's effects.
	ev      fsm.RouterEvent
	self    fsm.ReadID
	answer  readAnswer
	decided bool
	// watches are the reads watched for a hedge, by id; hedge their counts.
	watches map[fsm.ReadID]*ReadWatch
	hedge   HedgeCounts
	meter   *HedgeMeter
	// onStep, when set, sees every step's event and effects, under the lock (SetOnStep).
	onStep func(ev *fsm.RouterEvent, effects []fsm.RouterEffect)
}

type readAnswer struct {
	target  int
	reason  fsm.FailReason
	watched bool
}

// HedgeSignal is what the router tells the caller of a watched read: send a hedge to Target,
// or (Settle) complete the read with the attempt on Target, a success when OK.
type HedgeSignal struct {
	Settle bool
	Target int
	OK     bool
}

// ReadWatch is a read the router watches for a hedge (Select with hedgeable set, when hedging
// is on). Its caller reports each attempt's end with Ended and completes the read when a
// Settle signal arrives on Signals; at most two signals come (a hedge, then the settlement).
// A settlement with Target -1 says the router closed.
type ReadWatch struct {
	id fsm.ReadID
	// Signals carries the router's hedge and settlement decisions.
	Signals chan HedgeSignal
	// wake is signalled (without blocking) with each signal and each attempt's end
	// (HedgedRead.Wake).
	wake chan struct{}
}

func newReadWatch(id fsm.ReadID) *ReadWatch {
	return &ReadWatch{id: id, Signals: make(chan HedgeSignal, 2), wake: make(chan struct{}, 1)}
}

// signal hands s to the watch's caller.
func (w *ReadWatch) signal(s HedgeSignal) {
	w.Signals <- s
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// HedgeCounts are the hedging figures of a router: the reads watched for a hedge, the hedges
// sent and the hedges whose answer completed the read.
type HedgeCounts struct {
	Eligible, Sent, Won uint64
}

// NewReplicaRouter returns a router over targets (the primary's engine first) with cfg, whose
// time and wake timer come from rt: a ClockRuntime in production, the simulator's virtual clock
// in a scenario. rt must be the router's own (its timer ids are not the machines'). Call Start
// to begin validating and probing.
func NewReplicaRouter(cfg fsm.RouterConfig, targets []*Engine, rt Runtime) (*ReplicaRouter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(targets) != len(cfg.Endpoints) {
		return nil, errors.Newf("respire: %d engines for %d read candidates", len(targets), len(cfg.Endpoints))
	}
	return &ReplicaRouter{rt: rt, targets: targets, m: fsm.NewRouter(cfg),
		waiting: make(map[fsm.ReadID]chan readAnswer), watches: make(map[fsm.ReadID]*ReadWatch)}, nil
}

// SetOnStep has fn called with every step's event and effects, in order, under the router's
// lock (fn must not call the router). Call it before Start; tests use it to check that the
// journal replays the same decisions.
func (r *ReplicaRouter) SetOnStep(fn func(ev *fsm.RouterEvent, effects []fsm.RouterEffect)) {
	r.onStep = fn
}

// SetHedgeMeter has the hedge metrics recorded on m (nil: none). Call it before Start.
func (r *ReplicaRouter) SetHedgeMeter(m *HedgeMeter) { r.meter = m }

// Start steps the first event: every candidate is validated.
func (r *ReplicaRouter) Start() { r.step(fsm.RouterEvent{Kind: fsm.Woke}) }

// Close stops the timer; reads waiting for a probe fail. The engines are the caller's.
func (r *ReplicaRouter) Close() {
	r.mu.Lock()
	r.closed = true
	if r.timer != 0 {
		r.rt.CancelTimer(r.timer)
		r.timer = 0
	}
	for id, ch := range r.waiting {
		ch <- readAnswer{target: -1, reason: fsm.NoCandidate}
		delete(r.waiting, id)
	}
	for id, w := range r.watches {
		w.signal(HedgeSignal{Settle: true, Target: -1}) // the router closed
		delete(r.watches, id)
	}
	r.mu.Unlock()
}

// Target returns candidate i's engine.
func (r *ReplicaRouter) Target(i int) *Engine { return r.targets[i] }

// Select returns the candidate a read under policy goes to, waiting (at most fsm.ProbeDeadline)
// when every candidate has a probe pending, or when the policy's only candidates are replicas
// whose stale validation is being checked again. A *ReadRefusal says that none can take it; ctx
// ending stops only this caller's wait.
func (r *ReplicaRouter) Select(ctx context.Context, policy fsm.ReadFrom) (int, error) {
	target, _, err := r.SelectWatched(ctx, policy, false)
	return target, err
}

// SelectWatched is Select for a read that may be hedged (hedgeable): a non-nil *ReadWatch says
// the router watches it, and its caller follows the ReadWatch protocol.
func (r *ReplicaRouter) SelectWatched(ctx context.Context, policy fsm.ReadFrom, hedgeable bool) (int, *ReadWatch, error) {
	p := r.selectBegin(policy, hedgeable)
	if p.ch == nil {
		return r.selectEnd(&p)
	}
	select {
	case p.answer = <-p.ch:
		return r.selectEnd(&p)
	case <-ctx.Done():
		if r.selectCancel(&p) {
			return r.selectEnd(&p)
		}
		return -1, nil, ctx.Err()
	}
}

// pendingSelect is a selection in progress: its read, and the answer, or (ch non-nil) the
// channel the answer comes on.
type pendingSelect struct {
	id     fsm.ReadID
	answer readAnswer
	ch     chan readAnswer
}

// selectBegin steps a read's start. The answer is p.answer, or comes on p.ch when every
// candidate has a probe pending.
func (r *ReplicaRouter) selectBegin(policy fsm.ReadFrom, hedgeable bool) pendingSelect {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return pendingSelect{answer: readAnswer{target: -1, reason: fsm.NoCandidate}}
	}
	r.nextID++
	id := fsm.ReadID(r.nextID)
	r.self, r.decided = id, false
	rest := r.stepLocked(fsm.RouterEvent{Kind: fsm.ReadStarted, Read: id, Policy: policy, Hedgeable: hedgeable})
	p := pendingSelect{id: id, answer: r.answer}
	if !r.decided {
		p.ch = make(chan readAnswer, 1)
		r.waiting[id] = p.ch
	}
	r.self = 0
	r.mu.Unlock()
	r.execute(rest)
	return p
}

// selectCancel withdraws a pending selection whose caller stops waiting. It reports true when
// the read was routed before the withdrawal and refused (p.answer holds the refusal: the
// caller reports it); otherwise the caller reports its own reason, and a routed answer is
// dropped (its watch withdrawn).
func (r *ReplicaRouter) selectCancel(p *pendingSelect) bool {
	r.mu.Lock()
	delete(r.waiting, p.id)
	rest := r.stepLocked(fsm.RouterEvent{Kind: fsm.ReadWithdrawn, Read: p.id})
	r.mu.Unlock()
	r.execute(rest)
	select {
	case a := <-p.ch: // answered before the withdrawal
		if a.watched {
			r.Withdraw(r.watchOf(p.id))
		}
		if a.target >= 0 {
			return false
		}
		p.answer, p.ch = readAnswer{target: a.target, reason: a.reason}, nil
		return true
	default:
		return false
	}
}

// selectEnd turns a selection's answer into the candidate, its watch and a *ReadRefusal.
func (r *ReplicaRouter) selectEnd(p *pendingSelect) (int, *ReadWatch, error) {
	a := p.answer
	if a.target < 0 {
		return -1, nil, &ReadRefusal{Reason: a.reason}
	}
	if !a.watched {
		return a.target, nil, nil
	}
	return a.target, r.watchOf(p.id), nil
}

func (r *ReplicaRouter) watchOf(id fsm.ReadID) *ReadWatch {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w := r.watches[id]; w != nil {
		return w
	}
	return newReadWatch(id) // already settled or withdrawn
}

// Ended reports that the attempt of watched read w on target ended (ok: it succeeded).
func (r *ReplicaRouter) Ended(w *ReadWatch, target int, ok bool) {
	r.step(fsm.RouterEvent{Kind: fsm.ReadEnded, Read: w.id, Target: target, OK: ok})
}

// Withdraw stops watching w: its caller left.
func (r *ReplicaRouter) Withdraw(w *ReadWatch) {
	r.mu.Lock()
	delete(r.watches, w.id)
	r.mu.Unlock()
	r.step(fsm.RouterEvent{Kind: fsm.ReadWithdrawn, Read: w.id})
}

// Hedges returns the router's hedging figures.
func (r *ReplicaRouter) Hedges() HedgeCounts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hedge
}

// Failed reports that a connection of candidate i failed or could not be acquired: it cools
// down (and a replica is validated again before its next read).
func (r *ReplicaRouter) Failed(i int) { r.step(fsm.RouterEvent{Kind: fsm.TargetFailed, Target: i}) }

// Usable reports whether candidate i could take a read now.
func (r *ReplicaRouter) Usable(i int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m.Usable(i, r.now())
}

// LastBand returns the router's last completed band selection (fsm.Router.LastBand); its At is
// on the runtime's clock (ClockRuntime.Origin turns it into a wall-clock time).
func (r *ReplicaRouter) LastBand() (fsm.RouterBand, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m.LastBand()
}

// Journal returns a copy of the journal and whether it holds every event since the first.
func (r *ReplicaRouter) Journal() ([]fsm.RouterEvent, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]fsm.RouterEvent(nil), r.journal...), r.total == uint64(len(r.journal))
}

func (r *ReplicaRouter) now() time.Duration { return r.rt.Now() }

func (r *ReplicaRouter) step(ev fsm.RouterEvent) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	rest := r.stepLocked(ev)
	r.mu.Unlock()
	r.execute(rest)
}

// stepLocked journals and steps ev, handles the effects that need the lock (answers to waiting
// reads, the timer) and returns a copy of those to execute after unlocking.
func (r *ReplicaRouter) stepLocked(ev fsm.RouterEvent) []fsm.RouterEffect {
	ev.At = r.now()
	r.total++
	if len(r.journal) < ReplicaJournalMax {
		r.journal = append(r.journal, ev)
	}
	r.ev = ev // stepped from a field: the event does not escape to the heap per step
	r.out.Reset()
	r.m.Step(&r.ev, &r.out)
	if r.onStep != nil {
		r.onStep(&r.ev, r.out.Effects)
	}
	var rest []fsm.RouterEffect
	for _, e := range r.out.Effects {
		switch e.Kind {
		case fsm.RouteRead, fsm.FailRead:
			a := readAnswer{target: e.Target, reason: e.Reason, watched: e.Watched}
			if e.Kind == fsm.FailRead {
				a.target = -1
			}
			if e.Watched {
				r.watches[e.Read] = newReadWatch(e.Read)
				r.hedge.Eligible++
			}
			if e.Read == r.self && r.self != 0 {
				r.answer, r.decided = a, true
			} else if ch, ok := r.waiting[e.Read]; ok {
				delete(r.waiting, e.Read)
				ch <- a
			}
		case fsm.WakeAt:
			if r.timer != 0 {
				r.rt.CancelTimer(r.timer)
			}
			r.timers++
			r.timer = r.timers
			r.rt.ArmTimer(r.timer, e.At-ev.At, r.woke)
		case fsm.SendProbe, fsm.ValidateTarget:
			rest = append(rest, e)
		case fsm.SendHedge, fsm.SettleRead, fsm.CountMetric:
			hedgeEffect(&e, r.watches, &r.hedge, r.meter)
		}
	}
	return rest
}

// hedgeEffect carries out a router effect of hedging (SendHedge, SettleRead, CountMetric), which
// the standalone router and each Cluster shard's handle alike: it signals the watched read's
// caller, forgets a settled read, and counts and records the hedge metrics.
func hedgeEffect(e *fsm.RouterEffect, watches map[fsm.ReadID]*ReadWatch, counts *HedgeCounts, m *HedgeMeter) {
	switch e.Kind {
	case fsm.SendHedge:
		if w := watches[e.Read]; w != nil {
			w.signal(HedgeSignal{Target: e.Target})
		}
	case fsm.SettleRead:
		if w := watches[e.Read]; w != nil {
			delete(watches, e.Read)
			w.signal(HedgeSignal{Settle: true, Target: e.Target, OK: e.OK})
		}
	case fsm.CountMetric:
		m.record(e)
		switch e.Name {
		case fsm.MetricHedgeSent:
			counts.Sent += uint64(e.Value)
		case fsm.MetricHedgeWon:
			counts.Won += uint64(e.Value)
		}
	}
}

// woke steps the wake timer's fire.
func (r *ReplicaRouter) woke() { r.step(fsm.RouterEvent{Kind: fsm.Woke}) }

// execute sends the probes and validations of a step.
func (r *ReplicaRouter) execute(effects []fsm.RouterEffect) {
	for _, e := range effects {
		switch e.Kind {
		case fsm.SendProbe:
			r.probe(e.Target)
		case fsm.ValidateTarget:
			r.validate(e.Target)
		}
	}
}

var (
	pingFrame       = frameOf("PING")
	roleFrame       = frameOf("ROLE")
	serveStaleFrame = frameOf("CONFIG", "GET", "replica-serve-stale-data")
	infoServerFrame = frameOf("INFO", "SERVER")
)

func frameOf(words ...string) []byte {
	b := resp.AppendArrayHeader(nil, len(words))
	for _, w := range words {
		b = resp.AppendBulkString(b, w)
	}
	return b
}

func (r *ReplicaRouter) probe(i int) {
	sent := r.rt.Now()
	cmd := &Command{Name: "PING", Frame: pingFrame}
	cmd.Reset()
	cmd.Done = func(c *Command) {
		ev := fsm.RouterEvent{Kind: fsm.ProbeFailed, Target: i}
		if c.Err == nil && !c.Reply.IsError() {
			ev.Kind, ev.RTT = fsm.ProbeAnswered, r.rt.Now()-sent
		}
		r.step(ev)
	}
	r.targets[i].Submit(cmd)
}

// validate sends ROLE, CONFIG GET replica-serve-stale-data and INFO SERVER, pipelined, and
// steps RoleAnswered when ROLE answered (the other two are advisory: a refusal leaves
// serve-stale on, Redis's default, and the zone unknown), RoleFailed otherwise.
func (r *ReplicaRouter) validate(i int) {
	v := newValidation(i, r.step)
	role := &Command{Name: "ROLE", Frame: roleFrame, Done: v.role}
	stale := &Command{Name: "CONFIG", Frame: serveStaleFrame, Done: v.stale}
	info := &Command{Name: "INFO", Frame: infoServerFrame, Done: v.info}
	for _, c := range []*Command{role, stale, info} {
		c.Reset()
		r.targets[i].Submit(c)
	}
}

// configValue returns the value of a one-parameter CONFIG GET reply (pairs in an array or a
// map).
func configValue(v *resp.Value) (string, bool) {
	m, err := v.AsStringMap()
	if err != nil || len(m) != 1 {
		return "", false
	}
	for _, val := range m {
		return val, true
	}
	return "", false
}

// infoField returns the value of field in an INFO reply.
func infoField(info, field string) (string, bool) {
	for _, line := range strings.Split(info, "\n") {
		if k, val, ok := strings.Cut(strings.TrimRight(line, "\r"), ":"); ok && k == field {
			return val, true
		}
	}
	return "", false
}
