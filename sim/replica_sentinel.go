package sim

import (
	"slices"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/stream"
)

// Replicas named by the Sentinels (issue 17), as client.Client's Sentinel replica source
// (client/sentinel_replica.go) runs them, on the virtual clock: the source asks the Sentinels
// for the primary's replicas with SENTINEL REPLICAS once per replica_refresh_interval, backing
// off while none answers (engine.SentinelRefreshDelay), and at once when the client's primary
// changed (it looks every 100 ms, as the client does). Which replicas of an answer take reads
// is engine.SentinelReadReplicas, the client's rule. When the set (or the primary) changed, a
// new generation takes the reads: a router over the primary's engine (the Sentinel client's)
// and one engine per replica, the engines of the replicas that stay reused. It takes the reads
// once one of its replicas validated (ROLE), or after one query bound; the previous router
// keeps the reads it routed for the retirement grace, then closes, and the engines of the
// replicas that left close then. Reads before the first answer wait for it; with no replica
// known a Replica read fails with nothing sent and the others read from the primary.
//
// Differences from the client, all in how the simulator drives the rules, none in the rules:
// the source asks the configured Sentinels only (the simulated Sentinels know no others), and
// keeps one query engine per Sentinel for the run (abandoning a query that timed out rather than
// closing the engine), so that each gets one generation offset.

// primaryWatchInterval is how often the source looks for a new primary between its refreshes
// (client/sentinel_replica.go's primaryWatch).
const primaryWatchInterval = 100 * time.Millisecond

// sentinelQueryGenBase is the generation offset of the query engine of configured Sentinel i,
// plus i: below record.CandidateGenBase, and free because runs with replica reads have no
// client generations (actions are refused).
const sentinelQueryGenBase = record.CandidateGenBase - fsm.MaxSentinels

// sentinelSource is the simulated client's Sentinel replica source.
type sentinelSource struct {
	rw *replicaWorld
	w  *world
	// tmpl is the routers' configuration without endpoints.
	tmpl                              fsm.RouterConfig
	query                             []byte
	interval, ceiling, timeout, grace time.Duration
	sentinels                         []engine.Endpoint
	queries                           []*engine.Engine // by Sentinel, created on first use
	qrts                              []*simRuntime
	started                           bool            // the loop runs
	first                             bool            // the first refresh ended
	held                              []*routedRead   // reads waiting for the first refresh
	delay                             time.Duration   // the last wait between refreshes
	due                               time.Duration   // when the next refresh is due
	asking                            bool            // a refresh is under way
	next, tried                       int             // the Sentinel asked first; how many this refresh asked
	cmd                               *engine.Command // the query in flight
	seq                               uint64          // numbers the queries; a stale answer or timeout is ignored
	primary                           engine.Endpoint // the primary at the last refresh
	set                               []fsm.Endpoint  // the replicas of the current generation
	byEndpoint                        map[fsm.Endpoint]*engine.Engine
	nodeOf                            map[*engine.Engine]string
	routers                           []*engine.ReplicaRouter // every router not yet closed
	pendingGen                        *sentinelGen            // a generation waiting for its first validation
	gens                              int                     // generations built so far
}

// sentinelGen is a generation waiting to take the reads.
type sentinelGen struct {
	router   *engine.ReplicaRouter
	set      []fsm.Endpoint
	engines  map[fsm.Endpoint]*engine.Engine
	n        int // candidates
	deadline time.Duration
}

// attachSentinelReplicas starts the Sentinel replica source of a run whose client reads from
// the replicas the Sentinels name.
func (w *world) attachSentinelReplicas() {
	rw := w.rep
	sc := w.sc
	cfg, err := sc.RouterConfig()
	if err != nil {
		panic("sim: run of an invalid scenario: " + err.Error())
	}
	rw.policy, rw.engines = cfg.Default, []*engine.Engine{w.eng}
	c := &sc.Client
	q := engine.DefaultSentinelQueryTimeout
	if c.CommandTimeout > 0 {
		q = c.CommandTimeout
	}
	s := &sentinelSource{rw: rw, w: w, tmpl: cfg, interval: cfg.RefreshInterval,
		query:     resp.AppendCommand(nil, "SENTINEL", "REPLICAS", sc.Topology.Sentinel.PrimaryName),
		sentinels: sc.SentinelEndpoints(), byEndpoint: map[fsm.Endpoint]*engine.Engine{}, nodeOf: map[*engine.Engine]string{}}
	s.ceiling = max(fsm.RefreshBackoffMax, s.interval)
	s.timeout = max(c.ConnectTimeout, 0) + q
	s.grace = q + time.Second
	s.queries = make([]*engine.Engine, len(s.sentinels))
	s.qrts = make([]*simRuntime, len(s.sentinels))
	s.delay = s.interval
	rw.src = s
	w.env.Client = rw
	if rw.policy != fsm.ReadPrimary {
		s.started = true
		w.k.after(0, sourceTick{s}, 0)
	}
}

// sourceTick is the source's loop: a refresh when one is due or the primary changed.
type sourceTick struct{ s *sentinelSource }

func (t sourceTick) Run(uint64) bool {
	s, w := t.s, t.s.w
	if s.rw.closing() {
		return false
	}
	p, known := w.eng.SentinelPrimary()
	moved := known && s.first && p != s.primary
	if s.asking || (w.k.now < s.due && !moved) {
		if !s.asking {
			w.k.after(min(s.due-w.k.now, primaryWatchInterval), t, 0)
		}
		return false
	}
	if known {
		s.primary = p
	}
	s.asking, s.tried = true, 0
	w.tr.End(w.tr.Begin("replicas refresh").Str("primary", s.primary.String()))
	s.ask()
	return true
}

// ask sends SENTINEL REPLICAS to the current Sentinel, on its query engine.
func (s *sentinelSource) ask() {
	w := s.w
	i := s.next
	if s.queries[i] == nil {
		rt := &simRuntime{w: w, timers: make(map[fsm.TimerID]*simTimer), scale: w.rt.scale}
		gen := sentinelQueryGenBase + i
		stream.Init(&rt.rng, w.seed, stream.Engine, uint64(gen))
		tp := candidateTransport{t: w.tp, gen: gen, kind: openSentinelQuery}
		onStep := func(ev *fsm.Event, effects []fsm.Effect) { w.onQueryStep(gen, ev, effects) }
		s.queries[i] = engine.New(w.sc.SentinelQueryConfig(s.sentinels[i]), engine.Deps{Runtime: rt, Transport: tp, OnStep: onStep})
		s.qrts[i] = rt
	}
	s.seq++
	seq := s.seq
	cmd := &engine.Command{Name: "SENTINEL", Frame: s.query}
	cmd.Done = func(c *engine.Command) { s.answered(seq, c) }
	cmd.Reset()
	s.cmd = cmd
	s.queries[i].Submit(cmd)
	w.k.after(s.timeout, funcAction(func() bool { return s.timedOut(seq) }), 0)
}

// answered takes the answer of query seq.
func (s *sentinelSource) answered(seq uint64, c *engine.Command) {
	if seq != s.seq || !s.asking {
		return
	}
	s.cmd = nil
	var reps []topo.SentinelReplica
	err := c.Err
	if err == nil {
		reps, err = topo.ParseSentinelReplicas(c.Reply)
	}
	b := s.w.tr.Begin("replicas answer").Str("sentinel", s.sentinels[s.next].String())
	if err != nil {
		s.w.tr.End(b.Quoted("err", err.Error()))
		s.failed()
		return
	}
	set := engine.SentinelReadReplicas(reps, config.MaxReplicaEndpoints)
	for _, ep := range set {
		b = b.Str("replica", ep.String())
	}
	s.w.tr.End(b)
	s.answer(set)
}

// timedOut fails query seq when it is still unanswered after the query bound.
func (s *sentinelSource) timedOut(seq uint64) bool {
	if seq != s.seq || s.cmd == nil || !s.asking {
		return false
	}
	cmd := s.cmd
	s.cmd = nil
	s.seq++ // its late answer is ignored
	s.queries[s.next].Abandon(cmd)
	s.w.tr.End(s.w.tr.Begin("replicas answer").Str("sentinel", s.sentinels[s.next].String()).Word("timeout"))
	s.failed()
	return true
}

// failed moves on to the next Sentinel, or ends the refresh as failed when every one was asked.
func (s *sentinelSource) failed() {
	s.next = (s.next + 1) % len(s.sentinels)
	if s.tried++; s.tried < len(s.sentinels) {
		s.ask()
		return
	}
	s.done(true)
}

// answer publishes the set when it changed, as the client's refresh does.
func (s *sentinelSource) answer(set []fsm.Endpoint) {
	if slices.Equal(set, s.set) && (len(set) == 0 || s.rw.router != nil) {
		s.done(false)
		return
	}
	s.publish(set)
}

// publish builds the generation of set: a router over the primary's engine and the replicas'
// engines, started at once; it takes the reads once validated (poll).
func (s *sentinelSource) publish(set []fsm.Endpoint) {
	w, rw := s.w, s.rw
	if len(set) == 0 {
		s.swap(&sentinelGen{})
		return
	}
	g := &sentinelGen{set: set, engines: map[fsm.Endpoint]*engine.Engine{}, n: len(set) + 1, deadline: w.k.now + s.timeout}
	targets := []*engine.Engine{w.eng}
	cfg := s.tmpl
	cfg.Endpoints = []fsm.Endpoint{fsm.MakeEndpoint(s.primary.Host, s.primary.Port)}
	for _, ep := range set {
		e := s.byEndpoint[ep]
		if e == nil {
			k := len(rw.engines)
			if candidateGen(k) > 255 {
				w.tr.End(w.tr.Begin("replicas").Word("engines-exhausted"))
				s.done(true)
				return
			}
			e = w.newCandidateEngine(k, w.sc.SentinelReplicaConfig(ep.Host))
			rw.engines = append(rw.engines, e)
			s.nodeOf[e] = ep.Host
			w.res.CandidateNodes = append(w.res.CandidateNodes, ep.Host)
		}
		g.engines[ep] = e
		targets = append(targets, e)
		cfg.Endpoints = append(cfg.Endpoints, ep)
	}
	gen := s.gens
	s.gens++
	rt := &simRuntime{w: w, timers: make(map[fsm.TimerID]*simTimer), scale: 1}
	stream.Init(&rt.rng, w.seed, stream.Engine, routerStream+uint64(gen)<<8)
	router, err := engine.NewReplicaRouter(cfg, targets, rt)
	if err != nil {
		panic("sim: read router of a valid scenario: " + err.Error())
	}
	router.SetOnStep(w.routerOnStep(gen))
	w.res.RouterConfigs = append(w.res.RouterConfigs, cfg)
	b := w.tr.Begin("replicas publish").Int("gen", gen)
	for _, ep := range set {
		b = b.Str("replica", ep.String())
	}
	w.tr.End(b)
	g.router = router
	s.routers = append(s.routers, router)
	s.pendingGen = g
	router.Start()
	w.k.after(s.timeout, funcAction(func() bool { return s.poll() }), 0)
}

// poll makes the pending generation current once one of its replicas can take reads, or its
// wait is over. It reports whether it did.
func (s *sentinelSource) poll() bool {
	g := s.pendingGen
	if g == nil {
		return false
	}
	ready := s.w.k.now >= g.deadline
	for i := 1; i < g.n && !ready; i++ {
		ready = g.router.Usable(i)
	}
	if !ready {
		return false
	}
	s.pendingGen = nil
	s.swap(g)
	return true
}

// swap makes g current and retires the previous generation: its router closes after the grace,
// and so do the engines of the replicas that left.
func (s *sentinelSource) swap(g *sentinelGen) {
	w, rw := s.w, s.rw
	var gone []*engine.Engine
	for ep, e := range s.byEndpoint {
		if g.engines[ep] == nil {
			gone = append(gone, e)
		}
	}
	slices.SortFunc(gone, func(a, b *engine.Engine) int { return slices.Index(rw.engines, a) - slices.Index(rw.engines, b) })
	old := rw.router
	rw.router = g.router
	s.set = g.set
	s.byEndpoint = g.engines
	if s.byEndpoint == nil {
		s.byEndpoint = map[fsm.Endpoint]*engine.Engine{}
	}
	w.tr.End(w.tr.Begin("replicas current").Int("replicas", len(g.set)))
	if old != nil || len(gone) > 0 {
		w.k.after(s.grace, funcAction(func() bool {
			if old != nil {
				old.Close()
				s.routers = slices.DeleteFunc(s.routers, func(r *engine.ReplicaRouter) bool { return r == old })
			}
			for _, e := range gone {
				w.tr.End(w.tr.Begin("replicas retired").Str("node", s.nodeOf[e]))
				rw.closeEngine(e)
			}
			return true
		}), 0)
	}
	s.done(false)
}

// done ends a refresh: the next is due after the interval, or the backoff after a failure. The
// first one releases the reads that waited for it.
func (s *sentinelSource) done(failed bool) {
	w := s.w
	s.delay = engine.SentinelRefreshDelay(s.delay, s.interval, s.ceiling, failed)
	s.due = w.k.now + s.delay
	s.asking = false
	w.k.after(min(s.delay, primaryWatchInterval), sourceTick{s}, 0)
	if !s.first {
		s.first = true
		held := s.held
		s.held = nil
		for _, rd := range held {
			rd.held = false
			s.route(rd)
		}
	}
}

// route sends a read under a replica policy: through the current generation's router, or, with
// none, to the primary (a Replica read fails, nothing sent). Before the first refresh ended, the
// read waits for it.
func (s *sentinelSource) route(rd *routedRead) {
	rw := s.rw
	if !s.started {
		// A client whose default is Primary starts asking on its view's first replica read.
		s.started = true
		s.w.k.after(0, sourceTick{s}, 0)
	}
	switch {
	case !s.first:
		rd.held = true
		s.held = append(s.held, rd)
	case rw.router != nil:
		rd.route = rw.router.Route(rd.policy, false)
		rd.routed = true
		rd.selectNext()
	case rd.policy == fsm.ReadReplica:
		rd.finish()
		rd.cmd.Complete(&engine.ReadRefusal{Reason: fsm.NoCandidate})
	default:
		rd.eng = rw.engines[0]
		rd.eng.Submit(rd.cmd)
	}
}

// unhold forgets a read that waited for the first refresh (its caller left).
func (s *sentinelSource) unhold(rd *routedRead) {
	s.held = slices.DeleteFunc(s.held, func(x *routedRead) bool { return x == rd })
}

// runPending steps the query engines' pending events and reports whether any was.
func (s *sentinelSource) runPending() bool {
	any := false
	for _, e := range s.queries {
		if e != nil && e.RunPending() {
			any = true
		}
	}
	return any
}

// pending reports whether a query engine has events waiting.
func (s *sentinelSource) pending() bool {
	for _, e := range s.queries {
		if e != nil && e.Pending() {
			return true
		}
	}
	return false
}

// closeQueries closes the query engines at the end of the run.
func (s *sentinelSource) closeQueries() {
	s.seq++
	for _, e := range s.queries {
		if e != nil {
			e.Close()
		}
	}
}

// closeRouters closes every router still open at the end of the run, the current one last.
func (s *sentinelSource) closeRouters() {
	if g := s.pendingGen; g != nil {
		s.pendingGen = nil
		g.router.Close()
	}
	for _, r := range s.routers {
		r.Close()
	}
	s.routers = nil
}

// closing reports whether the run is closing the client (its end).
func (rw *replicaWorld) closing() bool { return rw.w.k.now >= rw.w.sc.Duration }

// onQueryStep traces a step of a Sentinel query engine (its line starts with "q<gen>"); the
// checkers do not judge these engines, whose only command is the query.
func (w *world) onQueryStep(gen int, ev *fsm.Event, effects []fsm.Effect) {
	w.stepped = true
	off := record.GenOffset(gen)
	e := *ev
	record.ShiftEvent(&e, off)
	b := append(w.tr.Raw(), 'q')
	b = strconv.AppendInt(b, int64(gen), 10)
	b = append(b, ' ')
	b = e.AppendTo(b)
	for i := range effects {
		f := []fsm.Effect{effects[i]}
		record.ShiftEffects(f, off)
		b = append(b, " | "...)
		b = f[0].AppendTo(b)
	}
	w.tr.End(b)
}
