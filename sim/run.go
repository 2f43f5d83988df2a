package sim

import (
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/plant"
	"github.com/respire-go/respire/netio/wire"
	"github.com/respire-go/respire/sim/node"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/sim/stream"
	"github.com/respire-go/respire/sim/trace"
	"github.com/respire-go/respire/sim/workload"
)

// DefaultMaxEvents bounds the scheduler events of a run when RunOptions.MaxEvents is zero: a
// guard against a run that never settles.
const DefaultMaxEvents = 200_000_000

// Scenario and ScenarioError are package scenario's Scenario and Error under the names they had
// in this package, for callers outside sim that use them (client's parity test).
type (
	Scenario      = scenario.Scenario
	ScenarioError = scenario.Error
)

// ParseScenario is scenario.Parse, under the name it had in this package.
func ParseScenario(data []byte) (*Scenario, error) { return scenario.Parse(data) }

// RunOptions tunes a run. The zero value is a normal run.
type RunOptions struct {
	// KeepTrace keeps the trace lines in Result.Trace (reports, tests). Without it the trace is
	// only hashed, which keeps runs fast.
	KeepTrace bool
	// MaxEvents bounds the scheduler events (zero: DefaultMaxEvents); exceeding it fails the run.
	MaxEvents uint64
	// TraceTo, when set, receives the trace as it is produced, one line per line, so that a
	// report gets a long run's whole trace without keeping it in memory. A write error fails the
	// run (ErrTraceWrite).
	TraceTo io.Writer
	// Sink, when set and when it accepts the scenario, receives the workload's records in closed
	// segments as the run goes (segment.go): the returned Result then holds only the records
	// after the last cut. check.Stream is the sink that judges a run this way.
	Sink record.Sink
	// SegmentOps is the number of operations after which a segment closes at the next quiescent
	// cut (zero: DefaultSegmentOps; at most MaxSegmentOps, or Run fails with ErrSegmentOps).
	SegmentOps int
	// JournalSteps is the number of engine steps after which a run whose sink takes the journal
	// (record.JournalSink) hands them over (zero: JournalWindow; at most MaxSegmentOps, or Run
	// fails with ErrSegmentOps).
	JournalSteps int
	// resolver, when set, replaces the simulated DNS (server.go's dns): the negative controls of
	// the tests of moved nodes.
	resolver engine.Resolver
}

// ErrTraceWrite reports that writing the trace to RunOptions.TraceTo failed.
var ErrTraceWrite = errors.New("sim: writing the trace failed")

// ErrTooManyEvents reports a run that exceeded RunOptions.MaxEvents.
var ErrTooManyEvents = errors.New("sim: run exceeded its event budget")

// plants holds the planted bugs of the runner and which one-shot plants already fired (the
// nodes' are world.nodePlants).
type plants struct {
	replay, doubleComplete, deadAfterHeal bool
	doubleCompleteUsed                    bool
}

// replayFrame is a written-but-unanswered command captured by the replay-accepted plant.
type replayFrame struct {
	id    uint64
	frame []byte
	// ids, for a pipeline (engine.Multi), are the commands whose frames frame holds back to
	// back: those that had no reply yet (multi.go).
	ids []uint64
}

// world is one run: the kernel, the simulated network and nodes, the client engine, the
// workload, the fault timeline and the records.
type world struct {
	sc   *scenario.Scenario
	seed uint64
	opts RunOptions

	k   kernel
	rt  *simRuntime
	tr  *trace.Tracer
	res *record.Result

	nodes     []*server
	cluster   *node.Cluster // the simulated Cluster (cluster.go), or nil
	departed  []*server     // the nodes replaced in the Cluster, in order
	tp        *transport
	eng       *engine.Engine
	wl        *workload.Callers
	dw        *workload.Renters
	bw        *workload.Batchers // workload.batches (maint.go's Recheck, batch.go)
	ps        *pubsubWorld
	latency   time.Duration
	jitter    time.Duration
	handshake wire.HandshakeConfig
	// cfg is the client section resolved by the client's resolver (engine/config).
	cfg config.Resolved

	faults []*faultState
	active []*faultState
	// pendingFaults are the triggered faults waiting for a connection, in scenario order.
	pendingFaults []*faultState
	openFaults    int
	endedFaults   int
	healed        bool

	// conns are the connections not yet closed on both sides, in open order.
	conns []*simConn

	plants plants
	// nodePlants are the plants of the simulated nodes, shared by all of them.
	nodePlants node.Plants
	replays    []*replayFrame
	// shared switches on the plants of shared code (netio/wire, the engine); nil without any.
	shared *plant.Set
	// loopArmed: with Runtime.LoopLag, a loop event is in the heap.
	loopArmed bool

	stepped bool
	// flushes are the connections with commands sent during the current action.
	flushes    []*simConn
	events     uint64
	connectErr error

	// effects holds the copies of the steps' effects (Result.Steps).
	effects record.Arena[fsm.Effect]

	// sentinel is the simulated Sentinel deployment (sentinel.go), or nil.
	sentinel *sentinelWorld
	// seg hands the records over in segments (segment.go), or is nil.
	seg *segmenter

	// env is the workload's environment, whose Engine a recreate replaces (actions.go).
	env *workload.Env
	// gen is the current client generation (0: the initial client); clientGone says the
	// application closed its client and created none since.
	gen        int
	clientGone bool
	// maint holds the maintenance relaxations of the connections that opted in (maint.go).
	maint maintWorld
	// rep is the replication group and the client's replica reads (replica.go), or nil.
	rep *replicaWorld
}

// Run runs scenario sc with seed: it resolves the scenario (Resolve), builds the kernel, the
// network, the nodes, the transport and an engine.Engine driven in stepper mode, connects (eager:
// every slot at t=0, failing the run if that fails), runs the workload and the faults until the
// scenario's duration, closes the engine and returns what happened.
//
// The same scenario and seed always give the same Result, byte for byte (TraceHash). On an eager
// connect failure or an exceeded event budget Run returns the partial Result with the error.
func Run(sc *scenario.Scenario, seed uint64, opts RunOptions) (*record.Result, error) {
	if opts.SegmentOps < 0 || opts.SegmentOps > MaxSegmentOps || opts.JournalSteps < 0 || opts.JournalSteps > MaxSegmentOps {
		return nil, ErrSegmentOps
	}
	rs, err := sc.Resolve(seed)
	if err != nil {
		return nil, err
	}
	w := newWorld(rs, seed, opts)
	return w.run()
}

func newWorld(sc *scenario.Scenario, seed uint64, opts RunOptions) *world {
	w := &world{sc: sc, seed: seed, opts: opts}
	w.effects.Size = 1024
	w.tr = trace.New(&w.k, opts.KeepTrace)
	if opts.TraceTo != nil {
		w.tr.Stream(opts.TraceTo)
	}
	w.res = &record.Result{Scenario: sc, Seed: seed}
	w.rt = &simRuntime{w: w, timers: make(map[fsm.TimerID]*simTimer), scale: 1}
	stream.Init(&w.rt.rng, seed, stream.Engine, 0)
	w.latency, w.jitter = sc.Network.Latency, sc.Network.Jitter
	for _, spec := range sc.Topology.Nodes {
		w.nodes = append(w.nodes, newServer(w, spec))
	}
	w.buildCluster()
	w.buildSentinel()
	w.buildReplication()
	w.tp = &transport{w: w, slotConn: make([]*simConn, sc.Client.Connections)}
	w.replays = make([]*replayFrame, sc.Client.Connections)
	cfg, err := sc.ClientConfig()
	if err != nil {
		panic("sim: run of an invalid scenario: " + err.Error())
	}
	w.cfg = cfg
	w.handshake = cfg.Handshake // the resolver's handshake is the protocol layer's, as in netio
	w.sentinelHandshake()
	for _, p := range sc.Plant {
		switch p {
		case scenario.PlantReplayAccepted:
			w.plants.replay = true
		case scenario.PlantLateTimers:
			w.rt.scale = 2
		case scenario.PlantEarlyDial:
			w.rt.scale = 0
		case scenario.PlantLoseReply:
			w.nodePlants.OKWithoutApply = true
		case scenario.PlantStaleRead:
			w.nodePlants.StaleRead = true
		case scenario.PlantDoubleComplete:
			w.plants.doubleComplete = true
		case scenario.PlantEarlyCommand:
			w.nodePlants.EarlyCommand = true
		case scenario.PlantDeadAfterHeal:
			w.plants.deadAfterHeal = true
		}
	}
	var bugs []plant.Bug
	for _, p := range sc.Plant {
		if b, ok := sharedPlants[p]; ok {
			bugs = append(bugs, b)
		}
	}
	if len(bugs) > 0 {
		w.shared = plant.New(w.sharedPlantFired, bugs...)
	}
	w.healed = len(sc.Faults) == 0
	w.seg = newSegmenter(w, opts)
	return w
}

// sharedPlantFired traces a plant of shared code acting on command id.
func (w *world) sharedPlantFired(b plant.Bug, id uint64) { w.tr.Plant(b.String(), id) }

func (w *world) run() (*record.Result, error) {
	sc := w.sc
	w.ps = newPubSubWorld(w)
	w.eng = w.newEngine()
	w.attachSentinel()

	w.tr.End(w.tr.Begin("run start").Str("scenario", strconv.Quote(sc.Name)).Uint("seed", w.seed))

	if sc.Client.Connect == scenario.ConnectEager {
		w.eng.Acquire(fsm.NeedAll, w.connected)
	}
	w.settle()
	w.buildFaults()
	w.buildMaint()
	env := &workload.Env{Scenario: sc, Seed: w.seed, Sched: scheduler{&w.k}, Trace: w.tr, Result: w.res, Engine: w.eng}
	if w.seg != nil {
		env.SegmentOps = w.seg.ops
	}
	w.env = env
	w.attachReplicas()
	w.wl = workload.NewCallers(env)
	w.dw = workload.NewRenters(env)
	w.bw = workload.NewBatchers(env)
	w.ps.start(env)
	w.scheduleActions()

	maxEvents := w.opts.MaxEvents
	if maxEvents == 0 {
		maxEvents = DefaultMaxEvents
	}
	var runErr error
	end := sc.Duration
	for w.connectErr == nil {
		at, ok := w.k.next()
		if !ok || at > end {
			break
		}
		ev := w.k.pop()
		if !ev.act.Run(ev.arg) {
			continue
		}
		w.events++
		w.settle()
		w.pollReplicas()
		w.ps.drain()
		if w.seg != nil {
			w.seg.maybeCut()
		}
		if w.events >= maxEvents {
			runErr = ErrTooManyEvents
			break
		}
	}
	if w.connectErr != nil {
		if c := sc.Expect.Connect; c != nil && c.Fails && w.gen == 0 {
			w.res.ConnectError = w.connectErr.Error() // expected: the run ends here, judged by expect-connect
		} else {
			runErr = w.connectErr
		}
	}
	if w.k.now < end && runErr == nil && w.res.ConnectError == "" {
		w.k.now = end
	}
	w.finish()
	if err := w.tr.Flush(); err != nil && runErr == nil {
		runErr = errors.Join(ErrTraceWrite, err)
	}
	return w.res, runErr
}

// connected receives the answer to the eager connect.
func (w *world) connected(g engine.Grant) {
	b := w.tr.Begin("connect-all")
	b = b.Str("outcome", g.Outcome.String())
	if g.Err != nil {
		b = b.Quoted("err", g.Err.Error())
	}
	w.tr.End(b)
	if g.Outcome != fsm.OutcomeGranted {
		err := errors.New("sim: eager connect failed: " + g.Outcome.String())
		if g.Err != nil {
			err = errors.Join(err, g.Err)
		}
		w.connectErr = err
	}
}

// settle ends an action: it writes what the action sent and lets the engine step the events the
// action posted, at once, or runtime.loop_lag later in a loop event of their own.
func (w *world) settle() {
	lag := w.sc.Runtime.LoopLag
	if lag <= 0 {
		w.settleNow()
		return
	}
	w.flushAll()
	if !w.loopArmed && (w.eng.Pending() || (w.rep != nil && w.rep.pending())) {
		w.loopArmed = true
		w.k.after(lag, loopActor{w}, 0)
	}
}

// loopActor is the lagging event loop (Runtime.LoopLag).
type loopActor struct{ w *world }

func (l loopActor) Run(uint64) bool {
	w := l.w
	w.loopArmed = false
	w.stepped = false
	w.settleNow()
	return true
}

// settleNow lets the engine step every event pending, and fails the connection attempts it
// cancelled meanwhile.
func (w *world) settleNow() {
	for {
		w.eng.RunPending()
		if w.rep != nil {
			w.rep.runPending()
		}
		if w.stepped {
			w.stepped = false
			if len(w.tp.attempts) > 0 {
				w.tp.sweep()
				continue
			}
		}
		if !w.flushAll() {
			return
		}
	}
}

// flushAll writes what the current action sent, and reports whether there was anything.
func (w *world) flushAll() bool {
	if len(w.flushes) == 0 {
		return false
	}
	for i := 0; i < len(w.flushes); i++ {
		w.flushes[i].flush()
		w.flushes[i] = nil
	}
	w.flushes = w.flushes[:0]
	return true
}

// onStep records an engine step: the Step, and its trace line.
func (w *world) onStep(ev *fsm.Event, effects []fsm.Effect) {
	w.stepped = true
	st := record.Step{Event: *ev, Effects: w.effects.CopyOf(effects)}
	if w.gen > 0 {
		// A recreated client's identifiers start over: the run's are kept unique (actions.go).
		off := record.GenOffset(w.gen)
		record.ShiftEvent(&st.Event, off)
		record.ShiftEffects(st.Effects, off)
	}
	w.res.Steps = append(w.res.Steps, st)
	if w.ps != nil {
		w.ps.onStep(effects)
	}

	b := st.Event.AppendTo(w.tr.Raw())
	for i := range st.Effects {
		b = append(b, " | "...)
		b = st.Effects[i].AppendTo(b)
	}
	w.tr.End(b)
	if w.seg != nil {
		w.seg.stepped()
	}
}

// finish closes the client at the end of the run and fills in the Result.
func (w *world) finish() {
	end := w.k.now
	w.tr.End(w.tr.Begin("run end"))
	w.wl.Stop()
	w.dw.Stop()
	w.bw.Stop()
	w.ps.finish()
	if w.rep != nil {
		w.rep.closeEngines()
		w.settleNow()
	}
	if !w.clientGone {
		w.eng.Close()
		w.settleNow()
	}
	if w.rep != nil {
		w.rep.closeRouter()
	}
	w.ps.drain()
	res := w.res
	res.End = end
	for i := range res.Ops {
		if res.Ops[i].Outcome == record.OpPending {
			res.Ops[i].Return = end
		}
	}
	res.Faults, res.HealedAt = w.faultWindows(end)
	res.Events = w.events
	res.Trace = w.tr.Lines()
	res.TraceHash = w.tr.Sum()
}

// digest is the FNV-1a hash of b.
func digest(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// recordReply appends a reply of command id to recs.
func (w *world) recordReply(recs *[]record.ReplyRecord, id uint64, conn fsm.ConnID, reply []byte) {
	*recs = append(*recs, record.ReplyRecord{CmdID: id, Conn: conn, At: w.k.now, Digest: digest(reply), Code: errorCode(reply)})
}

// errorCode returns the code of a simple error reply (its first word), or "".
func errorCode(reply []byte) string {
	if len(reply) < 2 || reply[0] != '-' {
		return ""
	}
	for i := 1; i < len(reply); i++ {
		if reply[i] == ' ' || reply[i] == '\r' {
			return string(reply[1:i])
		}
	}
	return ""
}

// captureReplay implements the first half of the replay-accepted plant: when a connection with
// written-but-unanswered commands fails, the oldest of them is kept for the slot's next connection.
func (w *world) captureReplay(c *simConn) {
	if !w.plants.replay || c.slot < 0 || c.slot >= len(w.replays) || w.replays[c.slot] != nil {
		return
	}
	for i := 0; i < c.p.InFlight(); i++ {
		if cmd := c.p.At(i); cmd.ID != 0 {
			if r := unanswered(cmd); r != nil {
				w.replays[c.slot] = r
				return
			}
		}
	}
}

// replayOnReady implements the second half: the captured frame is written again, first thing on
// the slot's next ready connection; its reply is swallowed so that reply pairing stays intact.
func (w *world) replayOnReady(c *simConn) {
	if !w.plants.replay || c.slot < 0 || c.slot >= len(w.replays) {
		return
	}
	r := w.replays[c.slot]
	if r == nil || c.clientClosed {
		return
	}
	w.replays[c.slot] = nil
	w.tr.Plant("replay-accepted", r.id)
	c.writeAgain(r)
	c.up.commit(ctlData)
}

// maybeDoubleComplete implements the double-complete plant: the first command completed with a
// reply has its Done called a second time.
func (w *world) maybeDoubleComplete(cmd *engine.Command) {
	if !w.plants.doubleComplete || w.plants.doubleCompleteUsed || cmd.ID == 0 || cmd.Done == nil {
		return
	}
	w.plants.doubleCompleteUsed = true
	w.tr.Plant("double-complete", cmd.ID)
	cmd.Done(cmd)
}

// sharedPlants pairs the plants of shared code with their bugs.
var sharedPlants = map[scenario.Plant]plant.Bug{
	scenario.PlantLateReplyToNextCaller: plant.LateReplyToNextCaller,
	scenario.PlantTimeoutKeepsPairing:   plant.TimeoutKeepsPairing,
	scenario.PlantPushCompletesCommand:  plant.PushCompletesCommand,
	scenario.PlantAckToWrongBatch:       plant.AckToWrongBatch,
	scenario.PlantSendWithdrawn:         plant.SendWithdrawn,
	scenario.PlantIgnoreCancel:          plant.IgnoreCancel,
	scenario.PlantRecycleBeforeReply:    plant.RecycleBeforeReply,
	scenario.PlantSentinelRedialAtOnce:  plant.SentinelRedialAtOnce,
	scenario.PlantFenceSkipKill:         plant.FenceSkipKill,
}
