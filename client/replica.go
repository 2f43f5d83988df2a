package client

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/command"
)

// ReadFrom is a read policy: where read-only commands run when the client knows replicas
// (Options.ReplicaEndpoints). Set the client's default with Options.ReadFrom and override it
// per view with Client.WithReadFrom. See docs/replicas.md.
type ReadFrom uint8

// Read policies.
const (
	// Primary: every command runs on the primary (the default).
	Primary ReadFrom = iota
	// Replica: reads run on a validated replica; a read fails with a *ConnectionError
	// matching ErrNoReadServer when none is available. It never falls back to the primary.
	Replica
	// PrimaryPreferred: reads run on the primary, and on a replica while the primary's
	// connection cannot be acquired (and for one second after it failed).
	PrimaryPreferred
	// ReplicaPreferred: reads run on a replica, and on the primary when no replica can take
	// them.
	ReplicaPreferred
	// Nearest: reads run on the candidate (primary or linked replica) with the lowest measured
	// PING latency.
	Nearest
	// AzAffinity: reads run on same-zone replicas, then other replicas, then the primary
	// (Options.ClientAvailabilityZone).
	AzAffinity
	// AzAffinityReplicasAndPrimary: same-zone replicas, the same-zone primary, other replicas,
	// then the primary.
	AzAffinityReplicasAndPrimary
)

// String returns the policy's name, as in the spec ("Primary", "ReplicaPreferred", ...).
func (r ReadFrom) String() string { return config.PolicyName(fsm.ReadFrom(r)) }

// Bounds and defaults of the replica options.
const (
	// MaxReplicaEndpoints bounds Options.ReplicaEndpoints.
	MaxReplicaEndpoints = config.MaxReplicaEndpoints
	// DefaultReplicaRefreshInterval is Options.ReplicaRefreshInterval's default.
	DefaultReplicaRefreshInterval = config.DefaultReplicaRefreshInterval
	// MaxReplicaRefreshInterval bounds Options.ReplicaRefreshInterval.
	MaxReplicaRefreshInterval = config.MaxReplicaRefreshInterval
)

// ErrNoReadServer: no server the read policy allows could take a read (Replica with no
// validated replica, say). Nothing was sent. It is matched through the *ConnectionError that
// reports it.
var ErrNoReadServer = sentinel("respire: no server the read policy allows is available")

// noReadServer is the cause inside the *ConnectionError of a read that found no server: why,
// in the router's words. It matches ErrNoReadServer.
type noReadServer struct{ reason fsm.FailReason }

func (e *noReadServer) Error() string {
	return "respire: no server the read policy allows is available (" + e.reason.String() + ")"
}

func (e *noReadServer) Is(target error) bool { return target == ErrNoReadServer }

// readRefused converts the router's refusal for the client.
func readRefused(err error) error {
	var rr *engine.ReadRefusal
	if errors.As(err, &rr) {
		return &noReadServer{reason: rr.Reason}
	}
	return err
}

// validateReplicas checks the replica options, with the resolver's rules (engine/config).
func (o *Options) validateReplicas() error {
	r := o.replicaOptions()
	return sharedErr(config.ValidateReplicas(&r))
}

// replicaOptions returns the replica-read options for the resolver (engine/config): the same
// fields under the same names.
func (o *Options) replicaOptions() config.Replicas {
	r := config.Replicas{ReadFrom: fsm.ReadFrom(o.ReadFrom), Primaries: len(o.Endpoints), Sentinel: o.SentinelPrimaryName != "",
		Cluster: o.UseCluster, LatencyTolerance: o.ReplicaLatencyTolerance, RefreshInterval: o.ReplicaRefreshInterval,
		ClientAvailabilityZone: o.ClientAvailabilityZone}
	for _, ep := range o.ReplicaEndpoints {
		r.Endpoints = append(r.Endpoints, ep.engine())
	}
	if h := o.HedgedReads; h != nil {
		r.HedgedReads = &config.HedgedReads{Delay: h.Delay, MaximumExtraLoadPercent: h.MaximumExtraLoadPercent}
	}
	return r
}

func (r ReadFrom) zoneAware() bool { return fsm.ReadFrom(r).ZoneAware() }

// replicaSet is a client's replica reads: the current generation of replica engines and the
// router that picks among them and the primary (engine.ReplicaRouter). A standalone client has
// one generation for its life; a Sentinel client replaces it when SENTINEL REPLICAS reports
// another set (sentinel_replica.go), and has none while no replica is known.
type replicaSet struct {
	cur     atomic.Pointer[replicaGen]
	hedging bool
	// tmpl is the router configuration without its endpoints.
	tmpl  fsm.RouterConfig
	meter *engine.HedgeMeter
	// src is the Sentinel source, nil for ReplicaEndpoints.
	src *sentinelReplicas
	// past adds up the hedging figures of retired routers.
	mu   sync.Mutex
	past engine.HedgeCounts
}

// replicaGen is one generation of replica reads: a router over the primary's engine and one
// engine per replica. It never changes once published.
type replicaGen struct {
	engines  []*engine.Engine // the replicas' (the primary's is the client's)
	router   *engine.ReplicaRouter
	eps      []Endpoint // the candidates: the primary, then the replicas
	fallback int        // how many selections a read may make: one per candidate
	cfg      fsm.RouterConfig
	rt       *engine.ClockRuntime // the router's time and wake timer
}

// replicaOnStep, set by tests only (export_replica_test.go), sees every step of the read
// routers created after it is set.
var replicaOnStep func(ev *fsm.RouterEvent, effects []fsm.RouterEffect)

// newReplicaSet returns the replica reads of options o, without a generation yet.
func newReplicaSet(o *Options) (*replicaSet, error) {
	rs := &replicaSet{hedging: o.HedgedReads != nil}
	ro := o.replicaOptions()
	cfg, err := config.ResolveReplicas(&ro)
	if err != nil {
		return nil, sharedErr(err)
	}
	rs.tmpl = cfg
	if o.HedgedReads != nil {
		meter, err := engine.NewHedgeMeter(o.MeterProvider)
		if err != nil {
			return nil, errors.Wrap(err, "respire: creating the hedge metrics")
		}
		rs.meter = meter
	}
	return rs, nil
}

// build returns a started generation over primary (served by primaryEng) and the replicas,
// each served by the engine of the same index.
func (rs *replicaSet) build(primary Endpoint, primaryEng *engine.Engine, replicas []Endpoint, engines []*engine.Engine) (*replicaGen, error) {
	g := &replicaGen{engines: engines, eps: append([]Endpoint{primary}, replicas...), cfg: rs.tmpl}
	g.cfg.Endpoints = nil
	for _, ep := range g.eps {
		g.cfg.Endpoints = append(g.cfg.Endpoints, fsm.MakeEndpoint(ep.Host, ep.Port))
	}
	targets := append([]*engine.Engine{primaryEng}, engines...)
	g.rt = engine.NewClockRuntime(clock.New(), rand.Uint64())
	router, err := engine.NewReplicaRouter(g.cfg, targets, g.rt)
	if err != nil {
		return nil, errors.Wrap(err, "respire: configuring replica reads")
	}
	if replicaOnStep != nil {
		router.SetOnStep(replicaOnStep)
	}
	router.SetHedgeMeter(rs.meter)
	g.router, g.fallback = router, len(targets)
	router.Start()
	return g, nil
}

// retired adds the figures of a generation's router, which stopped, to the client's.
func (rs *replicaSet) retired(g *replicaGen) {
	h := g.router.Hedges()
	rs.mu.Lock()
	rs.past.Eligible += h.Eligible
	rs.past.Sent += h.Sent
	rs.past.Won += h.Won
	rs.mu.Unlock()
}

// newReplicaEngine returns an unstarted engine for replica ep, with the client's configuration
// and its own runtime.
func newReplicaEngine(ecfg engine.Config, deps engine.Deps, ep Endpoint) *engine.Engine {
	rcfg := ecfg
	rcfg.Endpoint, rcfg.EpisodeBase = ep.engine(), nextEpisodeBase()
	rcfg.Sentinel, rcfg.Cluster = nil, nil
	rdeps := deps
	rdeps.Runtime = engine.NewClockRuntime(clock.New(), rand.Uint64())
	rdeps.PubSub = nil
	rdeps.SentinelWarn = nil
	return engine.New(rcfg, rdeps)
}

// startReplicas builds and starts the replica engines and the router, when the options name
// replicas; a Sentinel client gets its Sentinel source (started with the first replica read).
func (c *Client) startReplicas(ecfg engine.Config, deps engine.Deps) error {
	o := &c.opts
	if len(o.ReplicaEndpoints) == 0 && o.SentinelPrimaryName == "" {
		return nil
	}
	rs, err := newReplicaSet(o)
	if err != nil {
		return err
	}
	if o.SentinelPrimaryName != "" {
		rs.src = newSentinelReplicas(c, rs, ecfg, deps)
		c.replicas = rs
		if o.ReadFrom != Primary {
			rs.src.start()
		}
		return nil
	}
	engines := make([]*engine.Engine, 0, len(o.ReplicaEndpoints))
	for _, ep := range o.ReplicaEndpoints {
		engines = append(engines, newReplicaEngine(ecfg, deps, ep))
	}
	for _, e := range engines {
		e.Start()
	}
	g, err := rs.build(c.ep, c.eng, o.ReplicaEndpoints, engines)
	if err != nil {
		for _, e := range engines {
			e.Close()
			e.Wait()
		}
		return err
	}
	rs.cur.Store(g)
	c.replicas = rs
	return nil
}

// closeReplicas stops the routers and closes the replica engines.
func (c *Client) closeReplicas() {
	rs := c.replicas
	if rs == nil {
		return
	}
	if rs.src != nil {
		rs.src.close()
		return
	}
	g := rs.cur.Load()
	g.router.Close()
	for _, e := range g.engines {
		e.Close()
	}
	for _, e := range g.engines {
		e.Wait()
	}
}

// readable reports whether a command follows the read policy: a read-only command of the
// catalogue that holds no cursor (a cursor belongs to the server that issued it, so SCAN and
// its kin stay on the primary).
func readable(info *command.Info) bool {
	if info == nil || !info.ReadOnly() {
		return false
	}
	switch info.Name() {
	case "SCAN", "HSCAN", "SSCAN", "ZSCAN":
		return false
	}
	return true
}

// policyOfCall returns the read policy of a call: its view's, or the client's.
func (c *Client) policyOfCall(cl *call) fsm.ReadFrom {
	if cl.policy != 0 {
		return fsm.ReadFrom(cl.policy - 1)
	}
	return fsm.ReadFrom(c.opts.ReadFrom)
}

// routesRead reports whether a call goes through the read router.
func (c *Client) routesRead(cl *call) bool {
	return c.replicas != nil && cl.readable && !cl.blocking && cl.node == 0 && c.policyOfCall(cl) != fsm.ReadPrimary
}

// executeRead runs a read-only call where its policy sends it, through the router's read path
// (engine.ReadRoute): a selection whose connection cannot be acquired (nothing was sent) cools
// that server down and selects again, at most once per candidate; a read that may have been
// sent is never sent again. done false leaves the call to execute's primary path: a Sentinel
// client knows no replica yet.
func (c *Client) executeRead(ctx context.Context, cl *call) (done bool, err error) {
	rs := c.replicas
	policy := c.policyOfCall(cl)
	g := rs.cur.Load()
	if g == nil {
		if g, err = c.awaitReplicas(ctx, policy); err != nil {
			c.putCall(cl)
			return true, err
		}
		if g == nil { // no replica known: the primary takes the read
			return false, nil
		}
	}
	return true, c.executeRouted(ctx, cl, g, policy)
}

// executeRouted runs a read on generation g's router.
func (c *Client) executeRouted(ctx context.Context, cl *call, g *replicaGen, policy fsm.ReadFrom) error {
	rt := g.router.Route(policy, c.replicas.hedging && cl.hedgeable)
	for {
		target, w, err := rt.Select(ctx)
		if err != nil {
			c.putCall(cl)
			var ae *engine.AcquireError
			switch {
			case ctx.Err() != nil && errors.Is(err, ctx.Err()):
				return err
			case errors.As(err, &ae): // no fallback: the original failure
				return acquireFailure(c.readEndpoint(g, rt.Target()), c.opts.ConnectTimeout, ae)
			}
			return &ConnectionError{Endpoint: c.readEndpoint(g, 0), Err: readRefused(err)}
		}
		if w != nil {
			return c.executeHedged(ctx, cl, g, &rt, w, target)
		}
		again, err := c.executeOn(ctx, cl, &rt, c.readEndpoint(g, target))
		if !again {
			return err
		}
	}
}

// readEndpoint names candidate i of generation g: a replica's endpoint, or the primary's (a
// Sentinel client's current one).
func (c *Client) readEndpoint(g *replicaGen, i int) Endpoint {
	if i == 0 && c.replicas.src != nil {
		return c.Endpoint()
	}
	return g.eps[i]
}

// executeOn submits the call to the route's selection and waits as execute does. again
// reports a definite failure to acquire a connection, before anything was sent: the caller
// still owns the call and selects again (the route knows the failure). Otherwise the call is
// the caller's on success and recycled on error, as with execute.
func (c *Client) executeOn(ctx context.Context, cl *call, rt *engine.ReadRoute, ep Endpoint) (again bool, err error) {
	cl.cmd.Reset()
	rt.Submit(&cl.cmd)
	if answered, ctxErr := c.awaitReply(ctx, cl); !answered { // maint.go: relaxed in a maintenance window
		return false, c.abandonOn(cl, rt, ep, ctxErr)
	}
	cmd := &cl.cmd
	if rt.Completed(cmd, c.closed.Load()) {
		return true, nil
	}
	if cmd.Err == nil {
		return false, nil
	}
	var ae *engine.AcquireError
	switch {
	case errors.As(cmd.Err, &ae):
		err = acquireFailure(ep, c.opts.ConnectTimeout, ae)
	case cmd.MaybeSent():
		err = &UnknownOutcomeError{CommandName: cmd.Name, Endpoint: ep, Stage: stageOf(cmd.FinalStage()), Err: cmd.Err}
	case c.closed.Load():
		err = ErrClosed
	default:
		err = &ConnectionError{Endpoint: ep, Err: cmd.Err}
	}
	c.putCall(cl)
	return false, err
}

// abandonOn is Client.abandon for a read sent to the route's selection, the server at ep.
func (c *Client) abandonOn(cl *call, rt *engine.ReadRoute, ep Endpoint, ctxErr error) error {
	cmd := &cl.cmd
	a := rt.Engine().Abandon(cmd)
	if cl.timer != nil {
		cl.timer.Stop()
	}
	if a.Wait {
		<-cl.done
		if cmd.Err == nil {
			return nil
		}
		err := c.commandFailure(cmd)
		c.putCall(cl)
		return err
	}
	return c.abandonedErr(cl, a, ep, ctxErr)
}

// WithReadFrom returns a View of the client whose read-only commands follow policy instead of
// Options.ReadFrom. It composes with key prefixes: a view of a view keeps both prefixes and
// the innermost policy. On a Sentinel client, the first read of such a view starts asking the
// Sentinels for the replicas. A policy other than Primary on a client without
// ReplicaEndpoints, SentinelPrimaryName or UseCluster, or a
// zone-aware one without Options.ClientAvailabilityZone, makes every command of the view fail
// with a *ConfigError.
func (c *Client) WithReadFrom(policy ReadFrom) *View { return newPolicyView(c, c.ns, policy) }

// WithReadFrom returns a View with the view's key prefix and policy as its read policy.
func (v *View) WithReadFrom(policy ReadFrom) *View { return newPolicyView(v.c, v.ns, policy) }

func newPolicyView(c *Client, ns *namespace, policy ReadFrom) *View {
	switch {
	case policy > AzAffinityReplicasAndPrimary:
		ns = &namespace{err: configErr("WithReadFrom", "is not a read policy")}
	case policy != Primary && c.replicas == nil && c.creads == nil:
		ns = &namespace{err: configErr("WithReadFrom", policy.String()+" needs replicas: set Options.ReplicaEndpoints or Options.SentinelPrimaryName")}
	case policy.zoneAware() && c.opts.ClientAvailabilityZone == "":
		ns = &namespace{err: configErr("WithReadFrom", policy.String()+" needs Options.ClientAvailabilityZone")}
	}
	v := newView(c, ns)
	v.policy = uint8(policy) + 1
	v.Commands = Commands{x: &viewExec{base: c, ns: ns, policy: v.policy}}
	return v
}

// ReadFrom returns the view's read policy.
func (v *View) ReadFrom() ReadFrom {
	if v.policy == 0 {
		return v.c.opts.ReadFrom
	}
	return ReadFrom(v.policy - 1)
}

// ReadRoutingSnapshot is the last completed selection of read servers: the policy, the
// endpoints the reads rotated among, and when it was captured. It is immutable, and may be
// outdated as soon as it is returned.
type ReadRoutingSnapshot struct {
	Policy            ReadFrom
	EligibleEndpoints []Endpoint
	CapturedAt        time.Time
	// Slot is the Cluster slot of the read that made the selection, and Shard the primary of
	// that slot's shard (the selection is among that shard's primary and replicas). Slot is -1
	// and Shard zero outside a Cluster.
	Slot  int
	Shard Endpoint
}

// ReadRoutingSnapshot returns the last completed read selection, or nil before any (and on a
// client without replicas). On a Cluster client it is the last selection of any shard, with
// its slot and shard; ClusterReadRoutingSnapshots gives each shard's. An unchanged band, policy
// and slot keep their capture time. It does no I/O.
func (c *Client) ReadRoutingSnapshot() *ReadRoutingSnapshot {
	if c.creads != nil {
		return c.clusterReadRoutingSnapshot() // cluster_replica_hedge.go
	}
	rs := c.replicas
	if rs == nil {
		return nil
	}
	g := rs.cur.Load()
	if g == nil {
		return nil
	}
	band, ok := g.router.LastBand()
	if !ok {
		return nil
	}
	s := &ReadRoutingSnapshot{Policy: ReadFrom(band.Policy), CapturedAt: g.rt.Origin().Add(band.At), Slot: -1}
	for _, i := range band.Candidates {
		s.EligibleEndpoints = append(s.EligibleEndpoints, c.readEndpoint(g, i))
	}
	return s
}
