package sim

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/node"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/sim/stream"
)

// Reading from replicas in a run (issue 17). A topology with replication makes its first node
// the primary of a replication group (sim/node: ROLE, INFO with the zone, link state,
// serve-stale, READONLY for writes on a replica). The client is what client.Client builds
// for ReplicaEndpoints: one engine per candidate (the primary's is the world's engine, each
// replica's its own, on a runtime of its own), and an engine.ReplicaRouter over them on the
// virtual clock. The callers' reads go through the router's read path (engine.ReadRoute, and
// engine.HedgedRead when the router watches a read), their writes to the primary's engine;
// the simulator only waits, as the client's calls do, and polls what the client would wait
// for (a selection pending a probe, a hedged read's signals) after every scheduler event.
//
// Identifiers: candidate k's engine numbers its connections, timers and waiters from 1, as
// every engine does; the world adds record.GenOffset(candidateGen(k)) to them (as it does for
// client generations, which replication does not combine with), so connections, sends, dials
// and the trace keep them apart. Its steps are recorded in Result.Candidates, tagged with k,
// and the router's in Result.Router.

// candidateGen is the generation offset of replica k's engine (record.CandidateGenBase+k;
// k < fsm.MaxReplicaCandidates, so it fits the 8 bits of a generation).
func candidateGen(k int) int { return record.CandidateGenBase + k }

// routerStream is the stream index (stream.Engine) of the router's runtime: its draws never
// feed a machine of the engines.
const routerStream = 255

// replicaWorld is the replication group and the client's replica reads.
type replicaWorld struct {
	w     *world
	group *node.Group
	// engines are the candidates' engines: the primary's (the world's) first.
	engines []*engine.Engine
	rts     []*simRuntime
	router  *engine.ReplicaRouter
	rrt     *simRuntime
	policy  fsm.ReadFrom
	hedging bool
	// extra is the extra one-way latency of connections to each node.
	extra map[*server]time.Duration
	// live are the callers' commands on their way, by command; waiting the reads to poll.
	live    map[*engine.Command]*routedRead
	waiting []*routedRead
	// planted says which one-shot plant already acted.
	plantedWrite, plantedRead bool
	// src is the Sentinel replica source (replica_sentinel.go), nil for topology.replication;
	// opening says which kind of connection a candidate's engine is opening.
	src     *sentinelSource
	opening openKind
	// closed are the replica engines closed before the run's end (their replica left).
	closed map[*engine.Engine]bool
	// rents are the blocking reads whose selection waits for a probe (replica_blocking.go).
	rents []*blockingRent
}

// routedRead is one caller's command through the replica client: a read through the router,
// or a write (route unused) on the primary's engine.
type routedRead struct {
	rw   *replicaWorld
	cmd  *engine.Command
	done func(*engine.Command)
	read bool
	// policy is the read's policy: its caller's view's, or the client's default.
	policy fsm.ReadFrom
	// eng is the engine the command was last submitted to.
	eng   *engine.Engine
	route engine.ReadRoute
	// routed: the read goes through route (a router took it).
	routed bool
	// held: the read waits for the Sentinel source's first answer (replica_sentinel.go).
	held bool
	// selecting: a selection waits for a probe; h: the router watches the read.
	selecting bool
	h         *engine.HedgedRead
	left      bool
}

// buildReplication makes the first node the primary of the replication group, when the
// topology has one.
func (w *world) buildReplication() {
	sc := w.sc
	if sc.SentinelReplicaReads() {
		w.rep = &replicaWorld{w: w, group: w.sentinel.group, extra: map[*server]time.Duration{}, live: map[*engine.Command]*routedRead{},
			closed: map[*engine.Engine]bool{}}
		return
	}
	if !sc.IsReplicated() {
		return
	}
	spec := sc.Topology.Replication
	rw := &replicaWorld{w: w, extra: map[*server]time.Duration{}, live: map[*engine.Command]*routedRead{}, closed: map[*engine.Engine]bool{}}
	primary := w.nodeByID(sc.Topology.Nodes[0].ID)
	var replicas []*node.Node
	for _, r := range spec.Replicas {
		replicas = append(replicas, w.nodeByID(r.ID).Node)
	}
	rw.group = node.NewGroup(scenario.NodePort, primary.Node, replicas)
	rw.group.SetZone(primary.Node, spec.PrimaryZone)
	rw.extra[primary] = spec.PrimaryLatency
	for _, r := range spec.Replicas {
		s := w.nodeByID(r.ID)
		rw.group.SetZone(s.Node, r.Zone)
		rw.group.SetServeStale(s.Node, !r.NoServeStale)
		rw.extra[s] = r.Latency
	}
	w.rep = rw
}

// nodeLatency is the extra one-way latency of c's node (network.go).
func (w *world) nodeLatency(c *simConn) time.Duration {
	if w.rep == nil || c.node == nil {
		return 0
	}
	return w.rep.extra[c.node]
}

// attachReplicas builds the replicas' engines and the router, once the primary's engine
// exists, and starts the router (its first step validates every candidate).
func (w *world) attachReplicas() {
	rw := w.rep
	if rw == nil {
		return
	}
	sc := w.sc
	if rw.group != nil && sc.SentinelReplicaReads() {
		w.attachSentinelReplicas()
		return
	}
	cfg, err := sc.RouterConfig()
	if err != nil {
		panic("sim: run of an invalid scenario: " + err.Error())
	}
	rw.policy, rw.hedging = cfg.Default, sc.HedgedReadsOn()
	rw.engines = []*engine.Engine{w.eng}
	for k := range sc.Candidates()[1:] {
		rw.engines = append(rw.engines, w.newCandidateEngine(k+1, sc.CandidateConfig(k+1)))
	}
	rw.rrt = &simRuntime{w: w, timers: make(map[fsm.TimerID]*simTimer), scale: 1}
	stream.Init(&rw.rrt.rng, w.seed, stream.Engine, routerStream)
	router, err := engine.NewReplicaRouter(cfg, rw.engines, rw.rrt)
	if err != nil {
		panic("sim: read router of a valid scenario: " + err.Error())
	}
	router.SetOnStep(w.routerOnStep(0))
	rw.router = router
	w.env.Client = rw
	w.env.Reads = rw
	router.Start()
	w.settle()
	for i := range sc.ReplicaEvents {
		w.k.schedule(sc.ReplicaEvents[i].At, replicaEventActor{w}, uint64(i))
	}
}

// replicaEventActor applies the replication event at index arg of the timeline.
type replicaEventActor struct{ w *world }

func (a replicaEventActor) Run(arg uint64) bool {
	w := a.w
	e := &w.sc.ReplicaEvents[arg]
	var ok bool
	b := w.tr.Begin("replica")
	switch {
	case e.LinkDown != "":
		ok = w.rep.group.SetLink(w.nodeByID(e.LinkDown).Node, false)
		b = b.Str("link-down", e.LinkDown)
	case e.LinkUp != "":
		ok = w.rep.group.SetLink(w.nodeByID(e.LinkUp).Node, true)
		b = b.Str("link-up", e.LinkUp)
	case e.Promote != "":
		ok = w.rep.group.Promote(w.nodeByID(e.Promote).Node)
		b = b.Str("promote", e.Promote)
	}
	if !ok {
		b = b.Word("no-change")
	}
	w.tr.End(b)
	return true
}

// newCandidateEngine builds replica k's engine (configuration cfg), in stepper mode on a runtime
// of its own and the world's network.
func (w *world) newCandidateEngine(k int, cfg engine.Config) *engine.Engine {
	rt := &simRuntime{w: w, timers: make(map[fsm.TimerID]*simTimer), scale: w.rt.scale}
	stream.Init(&rt.rng, w.seed, stream.Engine, uint64(candidateGen(k)))
	w.rep.rts = append(w.rep.rts, rt)
	tp := candidateTransport{t: w.tp, gen: candidateGen(k), kind: openReplica}
	onStep := func(ev *fsm.Event, effects []fsm.Effect) { w.onCandidateStep(k, ev, effects) }
	return engine.New(cfg, engine.Deps{Runtime: rt, Transport: tp, OnStep: onStep, Plants: w.shared})
}

// candidateTransport opens a replica engine's connections (or a Sentinel query's) on the
// world's transport, with the engine's generation offset on their identifiers.
type candidateTransport struct {
	t    *transport
	gen  int
	kind openKind
}

// openKind says what a connection of an engine beside the primary's is for.
type openKind uint8

const (
	// openReplica: a replica's data connection; a Sentinel client checks no primary ROLE on it.
	// The zero kind is a connection of the primary's engine (the world's).
	openReplica openKind = iota + 1
	// openSentinelQuery: a connection to a Sentinel asking SENTINEL REPLICAS: the Sentinel
	// handshake.
	openSentinelQuery
)

// Open implements engine.Transport.
func (c candidateTransport) Open(ctx context.Context, req engine.OpenRequest) {
	w := c.t.w
	saved, savedKind := w.gen, w.rep.opening
	w.gen, w.rep.opening = c.gen, c.kind
	if c.kind == openSentinelQuery {
		req.Sentinel = true
	}
	c.t.Open(ctx, req)
	w.gen, w.rep.opening = saved, savedKind
}

// onCandidateStep records a step of replica k's engine, with its identifiers offset, in
// Result.Candidates and the trace (its line starts with "c<k>").
func (w *world) onCandidateStep(k int, ev *fsm.Event, effects []fsm.Effect) {
	w.stepped = true
	st := record.Step{Event: *ev, Effects: w.effects.CopyOf(effects)}
	off := record.GenOffset(candidateGen(k))
	record.ShiftEvent(&st.Event, off)
	record.ShiftEffects(st.Effects, off)
	w.res.Candidates = append(w.res.Candidates, record.CandidateStep{Candidate: k, Step: st})
	b := append(w.tr.Raw(), 'c')
	b = strconv.AppendInt(b, int64(k), 10)
	b = append(b, ' ')
	b = st.Event.AppendTo(b)
	for i := range st.Effects {
		b = append(b, " | "...)
		b = st.Effects[i].AppendTo(b)
	}
	w.tr.End(b)
}

// routerOnStep returns the step observer of the read router of generation gen: it records each
// step in Result.Router and the trace (gen 0's lines start with "router", later generations'
// with "router g<gen>").
func (w *world) routerOnStep(gen int) func(ev *fsm.RouterEvent, effects []fsm.RouterEffect) {
	return func(ev *fsm.RouterEvent, effects []fsm.RouterEffect) { w.onRouterStep(gen, ev, effects) }
}

// onRouterStep records a step of the read router of generation gen.
func (w *world) onRouterStep(gen int, ev *fsm.RouterEvent, effects []fsm.RouterEffect) {
	st := record.RouterStep{Event: *ev, Effects: append([]fsm.RouterEffect(nil), effects...), Gen: gen}
	w.res.Router = append(w.res.Router, st)
	b := append(w.tr.Raw(), "router "...)
	if gen > 0 {
		b = append(strconv.AppendInt(append(b, 'g'), int64(gen), 10), ' ')
	}
	b = ev.AppendTo(b)
	for i := range effects {
		b = append(b, " | "...)
		b = effects[i].AppendTo(b)
	}
	w.tr.End(b)
}

// runPending steps every event pending in the candidates' engines (the primary's first) and
// reports whether any was.
func (rw *replicaWorld) runPending() bool {
	any := false
	if len(rw.engines) == 0 {
		return false
	}
	for _, e := range rw.engines[1:] {
		if e.RunPending() {
			any = true
		}
	}
	if rw.src != nil && rw.src.runPending() {
		any = true
	}
	return any
}

// pending reports whether a replica engine has events waiting.
func (rw *replicaWorld) pending() bool {
	if len(rw.engines) == 0 {
		return false
	}
	for _, e := range rw.engines[1:] {
		if e.Pending() {
			return true
		}
	}
	return rw.src != nil && rw.src.pending()
}

// closeEngines closes the replicas' engines at the end of the run, before the primary's: their
// commands in flight end at their stage (unknown once written), so a hedged read whose
// attempts all ended is settled by the router with the original attempt's outcome before
// the router closes (closeRouter). Closing the router first, as client.Client's Close does,
// would leave such a read without a settlement, and the caller without the attempts' stages.
func (rw *replicaWorld) closeEngines() {
	for _, e := range rw.engines[1:] {
		rw.closeEngine(e)
	}
	if rw.src != nil {
		rw.src.closeQueries()
	}
}

// closeEngine closes a replica's engine once.
func (rw *replicaWorld) closeEngine(e *engine.Engine) {
	if !rw.closed[e] {
		rw.closed[e] = true
		e.Close()
	}
}

// closeRouter settles the reads the closed engines ended, then closes the router: a read
// still selecting is refused, and its caller's command never left.
func (rw *replicaWorld) closeRouter() {
	w := rw.w
	for rw.poll() {
		w.settleNow()
	}
	if rw.src != nil {
		rw.src.closeRouters()
	} else {
		rw.router.Close()
	}
	for rw.poll() {
		w.settleNow()
	}
}

// isRead reports whether a workload command follows the read policy: the workload's
// read-only commands (GET, MGET), as the client's command table classifies them.
func isRead(name string) bool { return name == "GET" || name == "MGET" }

// Submit sends a caller's command: a read through the router, a write to the primary.
func (rw *replicaWorld) Submit(cmd *engine.Command) {
	w := rw.w
	rd := &routedRead{rw: rw, cmd: cmd, done: cmd.Done, read: isRead(cmd.Name), eng: rw.engines[0], policy: rw.policyOf(cmd)}
	rw.live[cmd] = rd
	cmd.Done = rd.completed
	if rd.read && rw.src != nil && rd.policy != fsm.ReadPrimary {
		rw.src.route(rd)
		return
	}
	if !rd.read || rd.policy == fsm.ReadPrimary {
		if !rd.read && w.sc.Planted(scenario.PlantReplicaWrite) && !rw.plantedWrite && len(rw.engines) > 1 {
			rw.plantedWrite = true
			w.tr.Plant(string(scenario.PlantReplicaWrite), cmd.ID)
			rd.eng = rw.engines[1]
		}
		rd.eng.Submit(cmd)
		return
	}
	rd.route = rw.router.Route(rd.policy, rw.hedging)
	rd.routed = true
	rd.selectNext()
}

// policyOf returns the read policy of a caller's command: its caller's (a view's, or the
// client's default; scenario.ReadPolicyOf).
func (rw *replicaWorld) policyOf(cmd *engine.Command) fsm.ReadFrom {
	res := rw.w.res
	if i := int(cmd.ID) - 1 - res.OpBase; rw.w.sc.Workload.View != nil && i >= 0 && i < len(res.Ops) && res.Ops[i].ID == cmd.ID {
		return rw.w.sc.ReadPolicyOf(res.Ops[i].Caller)
	}
	return rw.policy
}

// selectNext asks the router for the read's next candidate.
func (rd *routedRead) selectNext() {
	target, watch, err, done := rd.route.Begin()
	if !done {
		rd.selecting = true
		rd.rw.waiting = append(rd.rw.waiting, rd)
		return
	}
	rd.selected(target, watch, err)
}

// selected sends the read where the router said, or fails it (nothing was sent).
func (rd *routedRead) selected(target int, watch *engine.ReadWatch, err error) {
	rw, w := rd.rw, rd.rw.w
	if err != nil {
		rd.finish()
		rd.cmd.Complete(err)
		return
	}
	if watch != nil {
		rd.h = engine.NewHedgedRead(&rd.route, watch, rd.cmd)
		rd.h.Start(target)
		rw.waiting = append(rw.waiting, rd)
		if w.sc.Planted(scenario.PlantReplicaExtraHedges) {
			rw.extraHedge(rd.cmd, target)
		}
		return
	}
	rd.eng = rd.route.Engine()
	if target != 0 && w.sc.Planted(scenario.PlantReplicaReadOnPrimary) && !rw.plantedRead {
		rw.plantedRead = true
		w.tr.Plant(string(scenario.PlantReplicaReadOnPrimary), rd.cmd.ID)
		rd.eng = rw.engines[0]
	}
	rd.eng.Submit(rd.cmd)
}

// finish hands the command back to its caller's completion.
func (rd *routedRead) finish() {
	rd.cmd.Done = rd.done
	delete(rd.rw.live, rd.cmd)
}

// completed is the Done of a command the replica client submitted: a read whose connection
// could not be acquired (nothing sent) selects again; everything else completes the caller's.
func (rd *routedRead) completed(cmd *engine.Command) {
	if rd.routed && !rd.left && rd.route.Completed(cmd, false) {
		cmd.Reset()
		rd.selectNext()
		return
	}
	rd.finish()
	cmd.Done(cmd)
}

// Abandon implements the caller's side of a timeout (workload.Client): the engine's caller
// protocol on the engine that holds the command, or, for a read still selecting or hedged,
// the router's.
func (rw *replicaWorld) Abandon(cmd *engine.Command) engine.Abandonment {
	rd := rw.live[cmd]
	if rd == nil {
		return rw.engines[0].Abandon(cmd)
	}
	rd.left = true
	switch {
	case rd.held:
		rd.held = false
		rw.src.unhold(rd)
		rd.finish()
		return engine.Abandonment{Verdict: engine.VerdictFailed, Stage: engine.StageQueued, Owned: true}
	case rd.selecting:
		rd.selecting = false
		rw.unwait(rd)
		rd.route.Cancel(nil)
		rd.finish()
		return engine.Abandonment{Verdict: engine.VerdictFailed, Stage: engine.StageQueued, Owned: true}
	case rd.h != nil:
		rw.unwait(rd)
		_, sent, stage := rd.h.Leave()
		rd.finish()
		v := engine.VerdictFailed
		if sent {
			v = engine.VerdictUnknown
		}
		return engine.Abandonment{Verdict: v, Stage: stage, Owned: true}
	}
	a := rd.eng.Abandon(cmd)
	if a.Owned {
		rd.finish()
	}
	return a
}

func (rw *replicaWorld) unwait(rd *routedRead) {
	for i, x := range rw.waiting {
		if x == rd {
			rw.waiting = append(rw.waiting[:i], rw.waiting[i+1:]...)
			return
		}
	}
}

// errRouterClosed completes a hedged read whose router closed before settling it.
var errRouterClosed = errors.New("sim: the read router closed")

// poll moves on the reads that wait for the router: a selection answered, a hedged read with
// something to handle. It reports whether any moved.
func (rw *replicaWorld) poll() bool {
	moved := rw.src != nil && rw.src.poll()
	moved = rw.pollRents() || moved
	for i := 0; i < len(rw.waiting); {
		rd := rw.waiting[i]
		switch {
		case rd.selecting && rd.route.Answered():
			rw.waiting = append(rw.waiting[:i], rw.waiting[i+1:]...)
			rd.selecting = false
			target, watch, err := rd.route.Finish()
			rd.selected(target, watch, err)
			moved = true
			continue
		case rd.h != nil && rd.h.Step():
			rw.waiting = append(rw.waiting[:i], rw.waiting[i+1:]...)
			rd.settle()
			moved = true
			continue
		}
		i++
	}
	return moved
}

// settle completes a hedged read's caller with the settled attempt's outcome.
func (rd *routedRead) settle() {
	h := rd.h
	h.Release()
	x, _ := h.Result()
	cmd := rd.cmd
	rd.finish()
	if x == nil {
		cmd.Complete(errRouterClosed)
		return
	}
	if st := x.FinalStage(); st >= engine.StageWriting {
		cmd.Writing()
		if st >= engine.StageAwaitingReply {
			cmd.Written()
		}
	}
	cmd.Reply, x.Reply = x.Reply, cmd.Reply
	cmd.Complete(x.Err)
}

// pollReplicas moves on the reads waiting for the router, and settles what they sent, until
// none moves.
func (w *world) pollReplicas() {
	for w.rep != nil && w.rep.poll() {
		w.settle()
	}
}

// extraHedge implements the replica-extra-hedges plant: a copy of a watched read goes to the
// next candidate at once, without the router's leave; its outcome is dropped.
func (rw *replicaWorld) extraHedge(orig *engine.Command, target int) {
	w := rw.w
	w.tr.Plant(string(scenario.PlantReplicaExtraHedges), orig.ID)
	c := &engine.Command{Name: orig.Name, ID: orig.ID, Frame: append([]byte(nil), orig.Frame...)}
	c.Done = func(*engine.Command) {}
	c.Reset()
	rw.engines[(target+1)%len(rw.engines)].Submit(c)
}
