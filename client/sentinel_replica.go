package client

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// The Sentinel replica source: a Sentinel client whose reads may go to replicas asks the
// Sentinels for the primary's replicas (SENTINEL REPLICAS <name>), once per
// ReplicaRefreshInterval, backing off to fsm.RefreshBackoffMax while no Sentinel answers, and
// at once when the client's primary changed (a failover). The first answer that parses wins.
// Replicas the answering Sentinel flags
// s_down, o_down or disconnected are left out; the others go to the read router, which
// validates each with ROLE before its first read. When the set or the primary changes, a new
// generation (router and engines) takes the reads; the old router keeps running until its
// reads drained, then stops, and the engines of replicas that left close. A replica that left
// while blocking reads run on its dedicated connections drains them first: its engine closes
// when the last of them returned its connection (there is no deadline: a blocking read has no
// response timeout), or at once when the client closes, which aborts them.

// primaryWatch is how often the source looks for a new primary between its refreshes.
const primaryWatch = 100 * time.Millisecond

// errNoSentinelAnswer: no Sentinel answered SENTINEL REPLICAS with a well-formed reply.
var errNoSentinelAnswer = errors.New("respire: no Sentinel answered SENTINEL REPLICAS")

// sentinelReplicas is a Sentinel client's replica source.
type sentinelReplicas struct {
	c        *Client
	rs       *replicaSet
	ecfg     engine.Config // the replica engines' configuration (its endpoint is replaced)
	deps     engine.Deps   // the replica engines' dependencies: the data transport
	sdeps    engine.Deps   // the Sentinel connection's: the Sentinel transport
	query    []byte        // SENTINEL REPLICAS <name>
	timeout  time.Duration // one query's bound, connection included
	grace    time.Duration // how long a retired generation drains
	interval time.Duration
	backoff  time.Duration // the longest wait after failed refreshes

	once  sync.Once
	first chan struct{} // closed when the first refresh ended, or at close
	stop  chan struct{}
	done  chan struct{}

	mu       sync.Mutex
	closed   bool
	engines  map[fsm.Endpoint]*engine.Engine // the replica engines in use, by endpoint
	retiring sync.WaitGroup
	leases   map[*engine.Engine]int // blocking reads running on each engine's dedicated connections
	returned chan struct{}          // closed (and replaced) when an engine's last lease ends
	// The loop's own state.
	sentinel  int            // the Sentinel asked first, in sentinels
	sentinels []Endpoint     // the Sentinels to ask: the configured, then the learned
	seng      *engine.Engine // the connection to it, nil when none
	primary   Endpoint       // the client's primary at the last refresh (zero before discovery)
	set       []Endpoint     // the replicas of the current generation
}

// sentinelOnly opens every connection as a Sentinel connection (Sentinel credentials, TLS and
// RESP2).
type sentinelOnly struct{ inner engine.Transport }

// Open implements engine.Transport.
func (t sentinelOnly) Open(ctx context.Context, req engine.OpenRequest) {
	req.Sentinel = true
	t.inner.Open(ctx, req)
}

func newSentinelReplicas(c *Client, rs *replicaSet, ecfg engine.Config, deps engine.Deps) *sentinelReplicas {
	o := &c.opts
	s := &sentinelReplicas{c: c, rs: rs, ecfg: ecfg, deps: deps, interval: rs.tmpl.RefreshInterval,
		query: resp.AppendCommand(nil, "SENTINEL", "REPLICAS", o.SentinelPrimaryName),
		first: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		engines: make(map[fsm.Endpoint]*engine.Engine), leases: make(map[*engine.Engine]int),
		returned: make(chan struct{})}
	s.backoff = max(fsm.RefreshBackoffMax, s.interval)
	if st, ok := deps.Transport.(sentinelTransport); ok {
		s.deps.Transport = st.data // replica connections are not checked for the primary's ROLE
		s.sdeps = engine.Deps{Runtime: engine.NewClockRuntime(clock.New(), rand.Uint64()), Transport: sentinelOnly{st}}
	}
	q := engine.DefaultSentinelQueryTimeout
	if o.CommandTimeout > 0 {
		q = o.CommandTimeout
	}
	s.timeout = max(o.ConnectTimeout, 0) + q
	s.grace = q + time.Second
	return s
}

// start starts the source once; the first replica read of a client whose default policy is
// Primary starts it.
func (s *sentinelReplicas) start() { s.once.Do(func() { go s.run() }) }

// awaitReplicas returns the generation for a read under policy on a client that has none yet:
// a Sentinel client waits for its source's first refresh. nil (and no error) sends the read to
// the primary; a Replica read fails instead, with nothing sent.
func (c *Client) awaitReplicas(ctx context.Context, policy fsm.ReadFrom) (*replicaGen, error) {
	rs := c.replicas
	if src := rs.src; src != nil {
		src.start()
		select {
		case <-src.first:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if g := rs.cur.Load(); g != nil {
		return g, nil
	}
	if policy == fsm.ReadReplica {
		return nil, &ConnectionError{Endpoint: c.Endpoint(), Err: &noReadServer{reason: fsm.NoCandidate}}
	}
	return nil, nil
}

// close stops the loop, the routers and every engine of the source.
func (s *sentinelReplicas) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	s.once.Do(func() { close(s.first); close(s.done) }) // never started
	<-s.done
	s.retiring.Wait()
	if g := s.rs.cur.Swap(nil); g != nil {
		g.router.Close()
	}
	s.mu.Lock()
	engines := s.engines
	s.engines = nil
	s.mu.Unlock()
	closeEngines(slices.Collect(maps.Values(engines)))
}

// run is the source's loop: a refresh when one is due or the primary changed.
func (s *sentinelReplicas) run() {
	defer close(s.done)
	defer s.closeSentinel()
	firstDone := false
	defer func() {
		if !firstDone {
			close(s.first)
		}
	}()
	delay := s.interval
	next := time.Now()
	for {
		wait := min(time.Until(next), primaryWatch)
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-s.stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		select {
		case <-s.stop:
			return
		default:
		}
		p, known := s.c.eng.SentinelPrimary()
		moved := known && firstDone && endpointOf(p) != s.primary
		if time.Now().Before(next) && !moved {
			continue
		}
		delay = refreshDelay(delay, s.interval, s.backoff, s.refresh() != nil)
		next = time.Now().Add(delay)
		if !firstDone {
			firstDone = true
			close(s.first)
		}
	}
}

// refreshDelay returns the wait before the next refresh (engine.SentinelRefreshDelay).
func refreshDelay(prev, interval, ceiling time.Duration, failed bool) time.Duration {
	return engine.SentinelRefreshDelay(prev, interval, ceiling, failed)
}

// refresh asks the Sentinels for the replicas and publishes a new generation when the set
// changed. The set is the Sentinel's: a promoted replica leaves it, and a former primary joins
// it once the Sentinel sees it replicating; the router's ROLE validation covers the moments in
// between.
func (s *sentinelReplicas) refresh() error {
	if p, ok := s.c.eng.SentinelPrimary(); ok {
		s.primary = endpointOf(p)
	}
	reps, err := s.ask()
	if err != nil {
		return err
	}
	set := replicaEndpoints(reps)
	if slices.Equal(set, s.set) && (len(set) == 0 || s.rs.cur.Load() != nil) {
		return nil
	}
	return s.publish(set)
}

// replicaEndpoints returns the replicas a SENTINEL REPLICAS answer offers for reads, by the
// rules of engine.SentinelReadReplicas (not flagged down or disconnected, without repeats,
// sorted, at most MaxReplicaEndpoints).
func replicaEndpoints(reps []topo.SentinelReplica) []Endpoint {
	var out []Endpoint
	for _, ep := range engine.SentinelReadReplicas(reps, MaxReplicaEndpoints) {
		out = append(out, Endpoint{Host: ep.Host, Port: ep.Port})
	}
	return out
}

// compareEndpoints orders endpoints by host, then port, as fsm.CompareEndpoints does.
func compareEndpoints(a, b Endpoint) int {
	return fsm.CompareEndpoints(fsm.Endpoint(a), fsm.Endpoint(b))
}

// sentinelCandidates returns the Sentinels to ask for replicas: the configured ones, in order,
// then the ones the client learned from SENTINEL SENTINELS (known, as the engine lists them:
// configured first, then learned) that are not configured, in the order they were learned.
// The list only grows, so an index into it keeps naming the same Sentinel.
func sentinelCandidates(configured []Endpoint, known []fsm.Endpoint) []Endpoint {
	out := slices.Clone(configured)
	for _, k := range known {
		dup := false
		for _, c := range configured {
			if fsm.MakeEndpoint(c.Host, c.Port) == k {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, Endpoint{Host: k.Host, Port: k.Port})
		}
	}
	return out
}

// ask sends SENTINEL REPLICAS to the Sentinels in turn (the configured ones, then the learned
// ones), from the one that answered last, and returns the first well-formed answer.
func (s *sentinelReplicas) ask() ([]topo.SentinelReplica, error) {
	s.sentinels = sentinelCandidates(s.c.opts.Endpoints, s.c.eng.KnownSentinels())
	n := len(s.sentinels)
	s.sentinel %= n
	for range n {
		reps, err := s.askOne()
		if err == nil {
			return reps, nil
		}
		s.closeSentinel()
		s.sentinel = (s.sentinel + 1) % n
		select {
		case <-s.stop:
			return nil, errNoSentinelAnswer
		default:
		}
	}
	return nil, errNoSentinelAnswer
}

// askOne asks the current Sentinel, connecting to it first when needed.
func (s *sentinelReplicas) askOne() ([]topo.SentinelReplica, error) {
	if s.seng == nil {
		cfg := s.ecfg
		cfg.Endpoint, cfg.EpisodeBase = s.sentinels[s.sentinel].engine(), nextEpisodeBase()
		cfg.Sentinel, cfg.Cluster, cfg.Slots, cfg.Lifetime, cfg.LifetimeJitter = nil, nil, 1, 0, 0
		s.seng = engine.New(cfg, s.sdeps)
		s.seng.Start()
	}
	type answer struct {
		reps []topo.SentinelReplica
		err  error
	}
	ch := make(chan answer, 1)
	cmd := &engine.Command{Name: "SENTINEL", Frame: s.query}
	cmd.Done = func(c *engine.Command) {
		if c.Err != nil {
			ch <- answer{err: c.Err}
			return
		}
		reps, err := topo.ParseSentinelReplicas(c.Reply)
		ch <- answer{reps: reps, err: err}
	}
	cmd.Reset()
	s.seng.Submit(cmd)
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	select {
	case a := <-ch:
		return a.reps, a.err
	case <-t.C:
	case <-s.stop:
	}
	s.closeSentinel() // fails the query
	a := <-ch
	if a.err == nil {
		return a.reps, nil
	}
	return nil, errNoSentinelAnswer
}

// closeSentinel closes the connection to the current Sentinel.
func (s *sentinelReplicas) closeSentinel() {
	if s.seng != nil {
		s.seng.Close()
		s.seng.Wait()
		s.seng = nil
	}
}

// publish makes the generation of set current, reusing the engines of replicas that stay, and
// retires the previous one. The new generation takes reads once one of its replicas passed
// validation (or after the query bound), so that a change of set does not refuse reads while
// ROLE is pending.
func (s *sentinelReplicas) publish(set []Endpoint) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	engines := make([]*engine.Engine, len(set))
	keep := make(map[fsm.Endpoint]*engine.Engine, len(set))
	var fresh []*engine.Engine
	for i, ep := range set {
		k := fsm.MakeEndpoint(ep.Host, ep.Port)
		e := s.engines[k]
		if e == nil {
			e = newReplicaEngine(s.ecfg, s.deps, ep)
			e.Start()
			fresh = append(fresh, e)
		}
		engines[i], keep[k] = e, e
	}
	s.mu.Unlock()
	var g *replicaGen
	if len(set) > 0 {
		var err error
		if g, err = s.rs.build(s.primary, s.c.eng, set, engines); err != nil {
			closeEngines(fresh)
			return err
		}
		s.awaitValidated(g)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		if g != nil {
			g.router.Close()
		}
		closeEngines(fresh)
		return nil
	}
	var gone []*engine.Engine
	for k, e := range s.engines {
		if keep[k] == nil {
			gone = append(gone, e)
		}
	}
	s.engines = keep
	old := s.rs.cur.Swap(g)
	s.set = set
	s.retiring.Add(1)
	s.mu.Unlock()
	go s.retire(old, gone)
	return nil
}

// awaitValidated waits until a replica of g can take reads, at most the query bound.
func (s *sentinelReplicas) awaitValidated(g *replicaGen) {
	deadline := time.Now().Add(s.timeout)
	for time.Now().Before(deadline) {
		for i := 1; i < g.fallback; i++ {
			if g.router.Usable(i) {
				return
			}
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// closeEngines closes engines and waits for them.
func closeEngines(engines []*engine.Engine) {
	for _, e := range engines {
		e.Close()
	}
	for _, e := range engines {
		e.Wait()
	}
}

// retire lets a replaced generation's reads drain for the grace, then stops its router and
// closes the engines of the replicas that left (at once when the client closes).
func (s *sentinelReplicas) retire(old *replicaGen, gone []*engine.Engine) {
	defer s.retiring.Done()
	t := time.NewTimer(s.grace)
	select {
	case <-t.C:
	case <-s.stop:
		t.Stop()
	}
	if old != nil {
		old.router.Close()
		s.rs.retired(old)
	}
	s.drain(gone)
}

// lease records a blocking read running on a dedicated connection of the replica engine e,
// until the returned func is called (once its connection went back or was discarded), so that
// e does not close under it when its replica leaves the set.
func (s *sentinelReplicas) lease(e *engine.Engine) func() {
	s.mu.Lock()
	s.leases[e]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.leases[e]--; s.leases[e] == 0 {
			delete(s.leases, e)
			close(s.returned)
			s.returned = make(chan struct{})
		}
		s.mu.Unlock()
	}
}

// drain closes the engines of replicas that left the set, each once no blocking read runs on
// it any more; when the client closes, it closes the rest at once, aborting their reads.
func (s *sentinelReplicas) drain(gone []*engine.Engine) {
	for {
		s.mu.Lock()
		var idle, busy []*engine.Engine
		for _, e := range gone {
			if s.leases[e] > 0 {
				busy = append(busy, e)
			} else {
				idle = append(idle, e)
			}
		}
		returned := s.returned
		s.mu.Unlock()
		closeEngines(idle)
		if len(busy) == 0 {
			return
		}
		gone = busy
		select {
		case <-returned:
		case <-s.stop:
			closeEngines(gone)
			return
		}
	}
}
