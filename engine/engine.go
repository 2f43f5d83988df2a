package engine

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/plant"
)

// DefaultJournalSize is the number of events the engine's journal retains when Config.JournalSize
// is zero.
const DefaultJournalSize = 4096

// Config configures an Engine. Build it with engine/config's Resolve, which fills it from the
// options of client.Options or of a scenario's client section with their defaults and bounds; a
// Config built by hand must pass Validate (New panics otherwise).
type Config struct {
	// Endpoint is the standalone endpoint the slots connect to.
	Endpoint Endpoint
	// Slots is the number of multiplexed command connections (at least 1).
	Slots int
	// Policy is the reconnect policy, or nil. It must be valid.
	Policy *fsm.Policy
	// MaxWaiters bounds callers waiting for a connection (zero: fsm.DefaultMaxWaiters).
	MaxWaiters int
	// JournalSize bounds the in-memory journal (zero: DefaultJournalSize; negative: no journal).
	JournalSize int
	// Pool bounds the dedicated-connection pool (its Policy, IDBase and EpisodeBase are set by
	// the engine).
	Pool fsm.PoolConfig
	// EpisodeBase offsets the episode ids of dedicated rents, so that they are unique in the
	// process across clients (the simulator leaves it zero).
	EpisodeBase uint64
	// Lifetime, when positive, is the maximum lifetime of the command-slot connections: each is
	// replaced (the replacement validated first, the old one drained) once it is older than
	// Lifetime plus a draw of LifetimeJitter. Zero disables recycling. See fsm.MuxConfig.
	Lifetime time.Duration
	// LifetimeJitter is the largest extra lifetime drawn, uniformly and additively, per
	// connection. It requires Lifetime.
	LifetimeJitter time.Duration
	// Cluster, when set, makes the engine a Redis Cluster client's (see ClusterConfig): Slots,
	// Policy, Pool and the lifetime apply to every node, and Endpoint is not used.
	Cluster *ClusterConfig
	// Sentinel, when set, makes the engine a Redis Sentinel client's (see SentinelConfig): the
	// connections go to the primary the Sentinels report and ROLE confirms, and Endpoint is not
	// used. It cannot be combined with Cluster.
	Sentinel *SentinelConfig
	// Capture, when its Size is set, keeps the last events with their effects and snapshots of
	// the machines, for an incident dump that replays (capture.go).
	Capture CaptureConfig `json:"-"`
}

// Deps are the engine's narrow interfaces to the outside world.
type Deps struct {
	// Runtime supplies time, randomness and timers. Required.
	Runtime Runtime
	// Transport opens connections. Required.
	Transport Transport
	// Observer receives lifecycle observations in order; nil discards them.
	Observer Observer
	// Meter records recovery measurements; nil discards them.
	Meter Meter
	// PubSub receives the pub/sub machines' effects (subscriptions to send, gap markers, ends);
	// nil discards them.
	PubSub PubSubSink
	// OnStep, when set, is called after every step with the stamped event and the effects it
	// produced, before they are executed. The simulator builds its trace from it; tests use it to
	// check replay. The effects slice is reused: copy what you keep.
	OnStep func(ev *fsm.Event, effects []fsm.Effect)
	// Plants switches on deliberate bugs of the engine's caller and grant logic, for the
	// simulator's positive controls (see package internal/plant). Only code inside respire can
	// build one; nil, the only value anyone else can give, plants nothing.
	Plants *plant.Set
	// SentinelWarn, when set, receives the warnings of a Sentinel client's machines (a Warn
	// effect: no permission to read the configuration epoch, an exhausted monitor, a disposal
	// that stopped waiting), with the endpoint concerned, from the loop: it must not block.
	SentinelWarn func(w fsm.Warning, about Endpoint)
	// OnCapture, when set, receives the dumps a capture's triggers take (Config.Capture), or
	// the error that prevented one, from the loop: it must not block.
	OnCapture func(reason CaptureReason, dump []byte, err error)
	// MaintWarn, when set, is told from the loop that a MOVING handoff's grace ended while the
	// old connection still had commands unanswered, which now fail (maint.go). It must not block.
	MaintWarn func(conn fsm.ConnID)
}

// item is one entry of the inbox: an event and the objects that travel with it but stay out of
// the journal (the ready connection, the demanding command or acquisition).
type item struct {
	ev     fsm.Event
	conn   Conn
	waiter *waiter
	// call, when set, runs on the loop instead of an event (not journaled: it is not an input
	// of the machines).
	call func()
}

// waiter is a caller waiting for a connection: a command to send, or an acquisition to notify.
type waiter struct {
	cmd    *Command
	notify func(Grant)
	// group, when set, is the group cmd leads (SubmitGroup): sent as one unit.
	group []*Command
	// cl is what a Cluster engine's command waits for (cluster_submit.go).
	cl clusterWait
}

// Grant is the answer to an acquisition: a granted slot, or the outcome and error that ended it.
type Grant struct {
	// Outcome is the machine's answer.
	Outcome fsm.Outcome
	// Slot is the granted slot when Outcome is fsm.OutcomeGranted.
	Slot int
	// Err is the last connection error for failed outcomes.
	Err error
	// Conn is the granted connection: a dedicated connection for a rent, the subscription
	// connection for a pub/sub demand, the slot's connection for a command demand.
	Conn Conn
	// ConnID identifies Conn.
	ConnID fsm.ConnID
}

// route is the loop's view of one slot, published in snapshots.
type route struct {
	conn  Conn
	state fsm.SlotState
}

// snapshot is an immutable routing table published after each step that changed a route, and
// within the step before a Complete effect if routes changed before it: a caller answered by the
// step (even by a reply, to a command granted on a new connection) sees the routes that answered
// it. Callers read it without locks; only the notice flags are written, once each.
type snapshot struct {
	slots     []slotView
	connected bool
	closed    bool
}

type slotView struct {
	conn      Conn
	offer     Offerer
	relax     *Relax // the connection's maintenance relaxation, or nil (maint.go)
	awaitsUse bool
	noticed   atomic.Bool
}

// Engine drives the four machines of one standalone endpoint: the command slots (fsm.Mux), the
// dedicated pool (fsm.Pool) and the regular and sharded pub/sub episodes (fsm.Episode). Every
// input becomes an event: it is stamped with the runtime's time and a random draw, appended to the
// journal, stepped into its machine, and the effects are executed through the Deps. Commands on
// healthy connections never touch the loop: they read the published snapshot and go straight to
// a connection.
//
// The engine runs either with its own goroutine (Start) or driven synchronously by a stepper
// (RunPending), as the simulator does.
type Engine struct {
	cfg      Config
	deps     Deps
	machines *machines

	snap      atomic.Pointer[snapshot]
	rr        atomic.Uint64
	waiterSeq atomic.Uint64

	mu      sync.Mutex
	inbox   []item
	spare   []item
	wake    chan struct{}
	stopped bool

	// Loop-owned state.
	out     fsm.Outbox
	routes  []route
	conns   map[fsm.ConnID]Conn
	opening map[fsm.ConnID]context.CancelFunc
	waiters map[fsm.WaiterID]*waiter
	// parked are granted waiters whose connection refused their command(s): it stopped taking
	// commands after the machine granted it, and its loss is on the way (park.go).
	parked  map[fsm.ConnID][]*waiter
	journal *Journal
	// capture is the incident ring, or nil (capture.go).
	capture *capture
	dirty   bool
	closed  bool

	// draining are the connections closed with Drain that may still be finishing their commands
	// (offer.go): disposal aborts them. Loop-owned.
	draining map[fsm.ConnID]Conn

	// cl is a Cluster engine's routing state; nil for a standalone engine (cluster.go).
	cl *clusterState
	// sn is a Sentinel engine's state; nil for other engines (sentinel.go).
	sn *sentinelState
	// fc is the loop's bookkeeping for fences (fence.go).
	fc fenceState

	opens sync.WaitGroup
	done  chan struct{}
}

// New builds an engine. It panics on an invalid Config: validate options first.
func New(cfg Config, deps Deps) *Engine {
	if deps.Runtime == nil || deps.Transport == nil {
		panic("engine: Deps.Runtime and Deps.Transport are required")
	}
	size := cfg.JournalSize
	if size == 0 {
		size = DefaultJournalSize
	}
	e := &Engine{
		cfg:      cfg,
		deps:     deps,
		machines: newMachines(cfg),
		wake:     make(chan struct{}, 1),
		routes:   make([]route, cfg.Slots),
		conns:    make(map[fsm.ConnID]Conn),
		opening:  make(map[fsm.ConnID]context.CancelFunc),
		draining: make(map[fsm.ConnID]Conn),
		waiters:  make(map[fsm.WaiterID]*waiter),
		journal:  NewJournal(size),
		capture:  newCapture(cfg.Capture),
		done:     make(chan struct{}),
	}
	if cfg.Cluster != nil {
		e.cl = newClusterState(cfg.Slots)
	}
	if cfg.Sentinel != nil {
		e.sn = newSentinelState(cfg.Sentinel)
	}
	e.publish()
	return e
}

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// Journal returns the engine's journal. Read it only from the loop or after Close.
func (e *Engine) Journal() *Journal { return e.journal }

// Submit sends cmd on a ready connection, or queues it until one is ready. It never blocks on the
// network. cmd completes through cmd.Done, exactly once, unless the caller abandons it (Withdraw)
// while it is still queued.
//
// The hot path reads the published snapshot and rotates among ready slots. One call is one use,
// and one use starts at most one connection attempt:
//   - served by a ready slot, it notices the first slot it passed on the way that awaits use (its
//     last attempt failed and its rest, if any, is over), which lets that slot start its next
//     attempt. A slot is noticed at most once per snapshot.
//   - finding no ready slot, it becomes a demand, and the machine decides which slot, if any, to
//     retry; it notices nothing.
func (e *Engine) Submit(cmd *Command) {
	if e.cl != nil {
		if cmd.Multi != nil {
			cmd.failQueued(&AcquireError{Outcome: fsm.OutcomeFailed, Err: ErrMultiOnCluster})
			return
		}
		e.submitCluster(cmd)
		return
	}
	s := e.snap.Load()
	n := uint64(len(s.slots))
	start := e.rr.Add(1)
	var passed *slotView
	passedAt := uint64(0)
	for k := uint64(0); k < n; k++ {
		i := (start + k) % n
		v := &s.slots[i]
		if v.conn != nil {
			if cmd.Enqueued() {
				cmd.sentOn(v.relax)
				if v.offer == nil {
					v.conn.Send(cmd)
				} else if !v.offer.Offer(cmd) {
					// The connection began draining after this snapshot was published (lifetime
					// recycling): the command never left, so the loop routes it.
					cmd.requeue()
					break
				}
			}
			if passed != nil && passed.noticed.CompareAndSwap(false, true) {
				e.post(item{ev: fsm.Event{Kind: fsm.Noticed, Slot: int(passedAt)}})
			}
			return
		}
		if passed == nil && v.awaitsUse && !v.noticed.Load() {
			passed, passedAt = v, i
		}
	}
	e.demand(fsm.NeedAny, &waiter{cmd: cmd})
}

// Withdraw abandons cmd if it still waits for a connection. It reports true if cmd will never be
// sent (and Done will not be called), false if a connection already owns it.
func (e *Engine) Withdraw(cmd *Command) bool {
	if !cmd.Abandon() {
		return false
	}
	if cmd.waiter != 0 {
		e.post(item{ev: fsm.Event{Kind: fsm.Withdrew, Waiter: cmd.waiter, Machine: e.callerMachine()}})
	}
	return true
}

// callerMachine is the machine a command's demand goes to: the command slots, or a Cluster
// engine's topology machine, which routes to its nodes.
func (e *Engine) callerMachine() fsm.Machine {
	if e.cl != nil {
		return fsm.MachineCluster
	}
	return fsm.MachineMux
}

// Acquire asks for a connection with the given need and calls notify with the machine's answer.
// It returns the waiter id, for Release when the caller gives up. NeedAll waits until every slot
// is ready (eager connect, identity setup).
//
// On a Cluster engine, NeedAll waits for the topology and every primary's slots (eager
// connect), and NeedAny for a ready connection of any primary.
func (e *Engine) Acquire(need fsm.Need, notify func(Grant)) fsm.WaiterID {
	if e.cl != nil {
		ev := fsm.Event{Kind: fsm.Demanded, Need: need, Slot: Keyless}
		m := fsm.MachineNodeMux
		if need == fsm.NeedAll {
			m = fsm.MachineCluster
		}
		return e.demandOn(m, ev, &waiter{notify: notify})
	}
	return e.demand(need, &waiter{notify: notify})
}

// Release withdraws an acquisition; its notify is called with fsm.OutcomeCancelled unless an
// answer was already delivered.
func (e *Engine) Release(id fsm.WaiterID) { e.Cancel(e.callerMachine(), id) }

// Cancel withdraws the waiter id of machine m (an acquisition, a rent or a subscription demand);
// its notify is called with fsm.OutcomeCancelled unless an answer was already delivered.
func (e *Engine) Cancel(m fsm.Machine, id fsm.WaiterID) {
	if m == fsm.MachineFence {
		e.cancelSettle(id)
		return
	}
	if e.cl != nil && (m == fsm.MachineMux || m == fsm.MachinePool) {
		m = fsm.MachineCluster
	}
	e.post(item{ev: fsm.Event{Kind: fsm.Withdrew, Waiter: id, Machine: m}})
}

// Rent asks the dedicated pool for an exclusive connection; notify receives the grant (with
// Grant.Conn) or the failure. Give the connection back with Return.
//
// On a Cluster engine, the connection is to any primary; RentSlot rents one to the node
// serving a slot.
func (e *Engine) Rent(notify func(Grant)) fsm.WaiterID {
	if e.cl != nil {
		return e.RentSlot(Keyless, notify)
	}
	return e.demandOn(fsm.MachinePool, fsm.Event{Kind: fsm.Demanded}, &waiter{notify: notify})
}

// Return gives a rented connection back to the pool; healthy says whether it may be reused.
func (e *Engine) Return(id fsm.ConnID, healthy bool) {
	e.post(item{ev: fsm.Event{Kind: fsm.Returned, Conn: id, Healthy: healthy}})
}

// Subscribe asks pub/sub machine m (fsm.MachinePubSub or fsm.MachineShardedPubSub) to subscribe
// topics; notify receives the answer once the server acknowledged every topic.
func (e *Engine) Subscribe(m fsm.Machine, topics []fsm.Topic, notify func(Grant)) fsm.WaiterID {
	return e.demandOn(m, fsm.Event{Kind: fsm.Demanded, Topics: topics}, &waiter{notify: notify})
}

// Unsubscribe removes topic from machine m's desired subscriptions.
func (e *Engine) Unsubscribe(m fsm.Machine, topic fsm.Topic) {
	e.post(item{ev: fsm.Event{Kind: fsm.Unsubscribed, Machine: m, Topic: topic}})
}

// Acked reports that the server acknowledged topic's subscription on pub/sub connection conn.
func (e *Engine) Acked(conn fsm.ConnID, topic fsm.Topic) {
	e.post(item{ev: fsm.Event{Kind: fsm.Acked, Conn: conn, Topic: topic}})
}

// Rejected reports that the server rejected topic's subscription on pub/sub connection conn.
func (e *Engine) Rejected(conn fsm.ConnID, topic fsm.Topic, err error) {
	e.post(item{ev: fsm.Event{Kind: fsm.Rejected, Conn: conn, Topic: topic, Err: err}})
}

func (e *Engine) demand(need fsm.Need, w *waiter) fsm.WaiterID {
	return e.demandOn(fsm.MachineMux, fsm.Event{Kind: fsm.Demanded, Need: need}, w)
}

func (e *Engine) demandOn(m fsm.Machine, ev fsm.Event, w *waiter) fsm.WaiterID {
	id := fsm.WaiterID(e.waiterSeq.Add(1))
	if w.cmd != nil {
		w.cmd.waiter = id
	}
	ev.Waiter = id
	ev.Machine = m
	e.post(item{ev: ev, waiter: w})
	return id
}

// ForEachConn calls fn on the event loop for every ready connection of every machine (command
// slots, dedicated connections, pub/sub), in identifier order, then calls done. fn must not
// block: use it to queue a command such as a credential-renewing AUTH on each connection.
func (e *Engine) ForEachConn(fn func(m fsm.Machine, id fsm.ConnID, c Conn), done func()) {
	e.post(item{call: func() {
		ids := make([]fsm.ConnID, 0, len(e.conns))
		for id := range e.conns {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			fn(fsm.MachineOf(uint64(id)), id, e.conns[id])
		}
		if done != nil {
			done()
		}
	}})
}

// Abort fails the ready connection id with err as if its transport had reported it lost: the
// loop closes it and its machine replaces it. It is for checks above the transport that condemn a
// connection (a credential renewal the server rejected). It only posts an event, so it may be
// called from a command's Done callback; an unknown or already closed id is ignored.
func (e *Engine) Abort(id fsm.ConnID, err error) {
	e.post(item{ev: fsm.Event{Kind: fsm.ConnLost, Conn: id, Err: err}})
}

// Connected reports whether at least one slot has a ready connection.
func (e *Engine) Connected() bool {
	if e.cl != nil {
		return e.cl.snap.Load().connected
	}
	return e.snap.Load().connected
}

// post appends an item to the inbox. The inbox is unbounded by type but bounded by construction:
// transports post at most four events per connection attempt, timers one per arming, callers one
// demand and one withdrawal per waiting command (and waiting commands are bounded by MaxWaiters
// plus the callers' own concurrency), and notices at most one per slot per snapshot and one per
// command.
func (e *Engine) post(it item) {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		e.rejectLate(it)
		return
	}
	e.inbox = append(e.inbox, it)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// rejectLate answers items that arrive after the loop stopped: demands complete as closed,
// ready connections are closed.
func (e *Engine) rejectLate(it item) {
	if it.call != nil {
		it.call()
		return
	}
	if it.conn != nil {
		it.conn.Close()
	}
	if w := it.waiter; w != nil {
		if w.group != nil {
			failGroup(w.group, &AcquireError{Outcome: fsm.OutcomeClosed})
		} else if w.cmd != nil {
			w.cmd.failQueued(&AcquireError{Outcome: fsm.OutcomeClosed})
		} else if w.notify != nil {
			w.notify(Grant{Outcome: fsm.OutcomeClosed})
		}
	}
}

// Start runs the event loop on its own goroutine until Close.
func (e *Engine) Start() {
	go e.loop()
}

func (e *Engine) loop() {
	defer close(e.done)
	for {
		<-e.wake
		if e.RunPending() {
			return
		}
	}
}

// RunPending steps every queued event, in order, and reports whether the engine has stopped.
// The simulator calls it after each of its own actions instead of running the loop goroutine.
func (e *Engine) RunPending() bool {
	for {
		e.mu.Lock()
		if len(e.inbox) == 0 {
			stopped := e.stopped
			e.mu.Unlock()
			return stopped
		}
		// Double buffering: producers append to one slice while the loop steps the other.
		batch := e.inbox
		e.inbox = e.spare[:0]
		e.mu.Unlock()
		for i := range batch {
			if batch[i].call != nil {
				batch[i].call()
			} else {
				e.step(&batch[i])
			}
			batch[i] = item{}
		}
		e.spare = batch[:0]
	}
}

// Pending reports whether events wait in the inbox for the loop. The simulator uses it to step
// the loop later than the actions that posted them.
func (e *Engine) Pending() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.inbox) > 0
}

// Close disposes the engine: it steps a Disposed event (cancelling delays, aborting attempts and
// closing connections), stops the loop and waits for owned recovery work (attempts in progress) to
// end. Commands waiting for a connection complete with an AcquireError of outcome closed.
// On a Sentinel client, the loop stops only once the event monitor's disposal ended: its closed
// connections ended, or fsm.MonitorDisposalGrace (10 s) passed; meanwhile it steps nothing else.
// Close is idempotent. With a stepper, call RunPending after Close.
func (e *Engine) Close() {
	e.post(item{ev: fsm.Event{Kind: fsm.Disposed}})
}

// Wait blocks until the loop started by Start has stopped after Close, and every connection
// attempt it started has returned.
func (e *Engine) Wait() {
	<-e.done
	e.opens.Wait()
}

// step executes one event: stamp, journal, machine, effects, snapshot.
func (e *Engine) step(it *item) {
	ev := &it.ev
	if e.sn != nil {
		if e.sn.disposing && targetOf(ev) != fsm.MachineSentinelMonitor {
			// Disposed already ran: only the monitor's disposal still steps.
			e.rejectLate(*it)
			return
		}
		if e.sn.disposing && ev.Kind == fsm.HandshakeDone {
			// A monitor attempt that succeeded after disposal cancelled it: its connection is
			// closed, and the monitor sees the attempt end.
			if it.conn != nil {
				it.conn.Close()
				it.conn = nil
			}
			ev.Kind, ev.Err, ev.Class = fsm.DialFailed, errMonitorClosed, fsm.Transient
		}
		e.sentinelBeforeStep(ev)
		if ev.Kind == fsm.Disposed {
			e.sn.disposing = true
		}
	}
	ev.At = e.deps.Runtime.Now()
	ev.Draw = e.deps.Runtime.Draw()
	e.journal.Append(ev)
	switch ev.Kind {
	case fsm.Demanded:
		e.waiters[ev.Waiter] = it.waiter
	case fsm.HandshakeDone:
		e.finishOpen(ev.Conn)
		if it.conn != nil {
			e.conns[ev.Conn] = it.conn
			e.fenceReady(ev.Conn, it.conn)
		}
	case fsm.DialFailed:
		e.finishOpen(ev.Conn)
	case fsm.ConnLost:
		if c := e.conns[ev.Conn]; c != nil {
			delete(e.conns, ev.Conn)
			c.Close()
		}
		defer e.fenceEnded(ev.Conn)
		defer e.unpark(ev.Conn)
	}
	e.out.Reset()
	e.machines.step(ev, &e.out)
	if e.deps.OnStep != nil {
		e.deps.OnStep(ev, e.out.Effects)
	}
	if e.capture != nil {
		if r := e.capture.record(ev, e.out.Effects, e.machines); r != 0 && e.deps.OnCapture != nil {
			data, err := e.capture.dump(e.cfg, r)
			e.deps.OnCapture(r, data, err)
		}
	}
	for i := range e.out.Effects {
		f := &e.out.Effects[i]
		if f.Kind == fsm.Complete && e.dirty {
			// Whoever a Complete answers may act on it before this step ends (a granted
			// command can even be answered by its server first): publish the routes so far.
			e.publish()
		}
		e.execute(f)
	}
	if ev.Kind == fsm.Disposed {
		e.fenceDisposed()
		e.unparkAll()
		e.abortDraining()
		e.closed = true
		e.dirty = true
	}
	if e.closed && !e.stopped && (e.sn == nil || e.sentinelDisposed()) {
		e.stop()
	}
	if e.dirty {
		e.publish()
	}
}

// stop ends the loop after disposal: items that arrive later are answered by rejectLate.
func (e *Engine) stop() {
	e.mu.Lock()
	e.stopped = true
	rest := e.inbox
	e.inbox = nil
	e.mu.Unlock()
	for i := range rest {
		e.rejectLate(rest[i])
	}
}

func (e *Engine) execute(f *fsm.Effect) {
	switch f.Kind {
	case fsm.Dial:
		if f.Machine == fsm.MachineFence {
			e.fenceOpen(f)
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		e.opening[f.Conn] = cancel
		e.opens.Add(1)
		req := OpenRequest{
			Conn: f.Conn, Slot: f.Slot, Attempt: f.Attempt, Endpoint: e.dialEndpoint(f),
			Machine: fsm.MachineOf(uint64(f.Conn)), Sink: sink{e}, ReadOnly: e.replicaDial(f),
		}
		if e.sn != nil {
			e.sentinelOpen(ctx, req)
			return
		}
		e.deps.Transport.Open(ctx, req)
	case fsm.ArmTimer:
		id := f.Timer
		e.deps.Runtime.ArmTimer(id, f.After, func() {
			e.post(item{ev: fsm.Event{Kind: fsm.TimerFired, Timer: id}})
		})
	case fsm.CancelTimer:
		e.deps.Runtime.CancelTimer(f.Timer)
	case fsm.Close:
		if cancel := e.opening[f.Conn]; cancel != nil {
			cancel()
			delete(e.opening, f.Conn)
		}
		if c := e.conns[f.Conn]; c != nil {
			delete(e.conns, f.Conn)
			if f.Drain {
				e.drain(f, c) // maint.go
				e.keepDraining(f.Conn, c)
			} else {
				c.Close()
				e.sentinelClosed(f.Conn)
				e.fenceEnded(f.Conn)
			}
		} else if c := e.draining[f.Conn]; c != nil && !f.Drain {
			// A drain with a deadline (a MOVING handoff's grace, maint.go) ends now.
			delete(e.draining, f.Conn)
			e.graceEnded(f.Conn, c)
			c.Close()
		}
	case fsm.Route:
		if f.Node != 0 {
			e.cl.route(e, f)
			e.dirty = true
			return
		}
		r := &e.routes[f.Slot]
		r.state = f.State
		r.conn = nil
		if f.Conn != 0 {
			r.conn = e.conns[f.Conn]
		}
		e.dirty = true
	case fsm.Emit:
		if e.deps.Observer != nil {
			l := f.Lifecycle
			if l.Source != fsm.SourceCommand {
				// Dedicated, pub/sub and discovery recovery never change the endpoint's
				// aggregate health: report the command slots' aggregate.
				l.State = e.aggregateOf(f.Node)
			}
			e.deps.Observer.Observe(StateChange{Endpoint: e.effectEndpoint(f), Lifecycle: l})
		}
	case fsm.Record:
		if e.deps.Meter != nil {
			e.deps.Meter.Record(e.effectEndpoint(f), f.Metric)
		}
	case fsm.Query:
		if f.Sentinel != nil {
			e.sentinelEffect(f)
			return
		}
		e.sendQuery(f)
	case fsm.Retire, fsm.Rediscover, fsm.Warn:
		e.sentinelEffect(f)
	case fsm.Publish:
		if f.Sentinel != nil {
			e.sentinelEffect(f)
			return
		}
		e.cl.published(f.Map)
		e.followShards()
		e.dirty = true
	case fsm.Complete:
		e.complete(f)
	case fsm.Kill:
		e.fenceKill(f)
	case fsm.Subscribe, fsm.Unsubscribe:
		if f.Machine == fsm.MachineSentinelMonitor {
			e.sentinelEffect(f)
			return
		}
		if ps := e.deps.PubSub; ps != nil {
			if c := e.conns[f.Conn]; c != nil {
				ps.Subscriptions(f.Machine, c, f.Conn, f.Topics, f.Kind == fsm.Unsubscribe)
			}
		}
	case fsm.Gap:
		if ps := e.deps.PubSub; ps != nil {
			ps.Gap(f.Machine, f.Topic)
		}
	case fsm.End:
		if ps := e.deps.PubSub; ps != nil {
			ps.End(f.Machine, f.Topic, f.Reason, f.Err)
		}
	}
}

func (e *Engine) complete(f *fsm.Effect) {
	w := e.waiters[f.Waiter]
	delete(e.waiters, f.Waiter)
	if w == nil {
		return
	}
	if w.notify != nil {
		g := Grant{Outcome: f.Outcome, Slot: f.Slot, Err: f.Err, ConnID: f.Conn}
		if f.Outcome == fsm.OutcomeGranted {
			g.Conn = e.conns[f.Conn]
		}
		w.notify(g)
		return
	}
	if w.group != nil {
		e.completeGroup(f, w.group)
		return
	}
	if w.cl.on {
		e.completeCluster(f, w)
		return
	}
	cmd := w.cmd
	switch f.Outcome {
	case fsm.OutcomeGranted:
		c := e.conns[f.Conn]
		if c == nil {
			cmd.failQueued(&AcquireError{Outcome: fsm.OutcomeFailed})
		} else if cmd.Enqueued() {
			cmd.sentOn(relaxOf(c))
			if o := offerOf(c); o == nil {
				c.Send(cmd)
			} else if !o.Offer(cmd) {
				cmd.requeue()
				e.park(f.Conn, w)
			}
		} else if cmd.Stage() == StageAbandoned && e.deps.Plants.Fire(plant.SendWithdrawn, cmd.ID) {
			// Planted: the grant sends a command its caller withdrew.
			cmd.stage.Store(uint32(StageBuffered))
			c.Send(cmd)
		}
	case fsm.OutcomeCancelled:
		// The caller abandoned the command; it owns it again.
	default:
		// Nothing was sent; a concurrent Abandon and this failure claim the command only once.
		cmd.failQueued(&AcquireError{Outcome: f.Outcome, Err: f.Err})
	}
}

// aggregate is the command slots' endpoint health: connected when every slot is ready.
func (e *Engine) aggregate() fsm.EndpointState {
	for _, r := range e.routes {
		if r.state != fsm.SlotReady {
			return fsm.EndpointDisconnected
		}
	}
	return fsm.EndpointConnected
}

// finishOpen releases the context of an attempt that reported its outcome.
func (e *Engine) finishOpen(id fsm.ConnID) {
	if cancel := e.opening[id]; cancel != nil {
		cancel()
		delete(e.opening, id)
	}
}

// publish builds and stores a new immutable snapshot from the loop's routes.
func (e *Engine) publish() {
	if e.cl != nil {
		e.cl.publish(e.closed)
		e.dirty = false
		return
	}
	s := &snapshot{slots: make([]slotView, len(e.routes)), closed: e.closed}
	for i, r := range e.routes {
		if e.closed {
			continue
		}
		s.slots[i].conn = r.conn
		s.slots[i].offer = offerOf(r.conn)
		s.slots[i].relax = relaxOf(r.conn)
		s.slots[i].awaitsUse = r.state.AwaitsUse() && r.state != fsm.SlotFresh
		if r.conn != nil {
			s.connected = true
		}
	}
	e.snap.Store(s)
	e.dirty = false
}

// sink turns transport callbacks into events.
type sink struct{ e *Engine }

func (s sink) Dialed(id fsm.ConnID) {
	s.e.post(item{ev: fsm.Event{Kind: fsm.DialSucceeded, Conn: id}})
}

func (s sink) Ready(id fsm.ConnID, conn Conn) {
	s.e.opens.Done()
	s.e.post(item{ev: fsm.Event{Kind: fsm.HandshakeDone, Conn: id}, conn: conn})
}

func (s sink) Failed(id fsm.ConnID, err error, class fsm.FailureClass) {
	s.e.opens.Done()
	s.e.post(item{ev: fsm.Event{Kind: fsm.DialFailed, Conn: id, Err: err, Class: class}})
}

func (s sink) Lost(id fsm.ConnID, err error) {
	s.e.post(item{ev: fsm.Event{Kind: fsm.ConnLost, Conn: id, Err: err}})
}
