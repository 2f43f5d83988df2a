package engine

import (
	"context"
	"sort"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/plant"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// DefaultSentinelQueryTimeout bounds the reply to one discovery query (SENTINEL MASTER, SENTINEL
// SENTINELS, ROLE) when SentinelConfig.QueryTimeout is zero.
const DefaultSentinelQueryTimeout = 5 * time.Second

// MaxSentinelQueryTimeout bounds SentinelConfig.QueryTimeout.
const MaxSentinelQueryTimeout = time.Hour

// SentinelConfig makes an engine a Redis Sentinel client's (Config.Sentinel). The engine then
// hosts the Sentinel resolution (fsm.Resolution) and the event monitor (fsm.Monitor) beside the
// command slots, the dedicated pool and the pub/sub episodes, whose connections go to the
// primary the resolution validated; Config.Endpoint is not used.
type SentinelConfig struct {
	// Sentinels are the configured Sentinels (TCP: host and port), 1 to fsm.MaxSentinels
	// distinct ones, tried in this order.
	Sentinels []Endpoint
	// PrimaryName is the name the Sentinels monitor the primary under: 1 to
	// fsm.MaxPrimaryNameLength bytes, without spaces or control characters.
	PrimaryName string
	// QueryTimeout bounds each discovery query's reply; a query that outlives it fails its
	// candidate (zero: DefaultSentinelQueryTimeout; at most MaxSentinelQueryTimeout).
	QueryTimeout time.Duration
}

// sentinelMachineConfigs returns the configurations of the resolution and the monitor.
func (c Config) sentinelMachineConfigs() (fsm.ResolutionConfig, fsm.MonitorConfig) {
	sc := c.Sentinel
	eps := make([]fsm.Endpoint, len(sc.Sentinels))
	for i, s := range sc.Sentinels {
		eps[i] = fsm.MakeEndpoint(s.Host, s.Port)
	}
	// The resolution's waiters are the data connections waiting for a primary (at most one per
	// command slot, dedicated connection and episode) and explicit connects: the machines'
	// default bound, not the callers' MaxWaiters, which a deferred dial must not overflow.
	res := fsm.ResolutionConfig{Sentinels: eps, Policy: c.Policy, IDBase: fsm.IDBase(fsm.MachineSentinel)}
	mon := fsm.MonitorConfig{Sentinels: eps, PrimaryName: sc.PrimaryName, Policy: c.Policy,
		IDBase: fsm.IDBase(fsm.MachineSentinelMonitor)}
	return res, mon
}

// validateSentinel checks c.Sentinel with the machines' own checks.
func (c Config) validateSentinel() error {
	sc := c.Sentinel
	if c.Cluster != nil {
		return &ConfigError{Field: "Sentinel", Reason: "cannot be combined with Cluster"}
	}
	for _, s := range sc.Sentinels {
		if s.IsUnix() {
			return &ConfigError{Field: "Sentinel.Sentinels", Reason: "must be TCP endpoints: Sentinels are not reached over Unix sockets"}
		}
	}
	if sc.QueryTimeout < 0 || sc.QueryTimeout > MaxSentinelQueryTimeout {
		return &ConfigError{Field: "Sentinel.QueryTimeout", Reason: "must be between 0 (the default) and 1h"}
	}
	res, mon := c.sentinelMachineConfigs()
	if err := res.Validate(); err != nil {
		return machineConfigError("Sentinel.", err)
	}
	if err := mon.Validate(); err != nil {
		return machineConfigError("Sentinel.", err)
	}
	return nil
}

// ErrPrimaryRetired is the error with which the data connections of a retired primary
// generation are replaced (a failover, or a failure of the primary seen by another connection).
// Their accepted commands drain; nothing is resent.
var ErrPrimaryRetired = errors.New("respire: the Sentinel primary of this connection was retired")

// errSentinelQueryTimeout fails a discovery candidate whose query was not answered in time.
var errSentinelQueryTimeout = errors.New("respire: a Sentinel discovery query timed out")

// errNoSentinelConn: the connection a discovery query was to use is gone.
var errNoSentinelConn = errors.New("respire: the connection for the Sentinel discovery query is gone")

// sentinelTimers is the identifier space of the discovery queries' timeouts and of the drain
// polls: no machine's, since they are not machine events.
const sentinelTimers fsm.Machine = 0xfd

// drainPoll is how often the loop checks whether a retired generation finished draining.
const drainPoll = 250 * time.Millisecond

// sentinelState is the engine's side of a Sentinel client.
type sentinelState struct {
	name    string
	timeout time.Duration
	// The validated primary as the loop last saw it published, its generation and whether that
	// generation is live (loop-owned).
	primary fsm.Endpoint
	gen     uint64
	live    bool
	// peers are the Sentinels the last publication listed: the configured ones, then the
	// learned ones (loop-owned; the slice is never modified).
	peers []fsm.Endpoint
	// connGen maps each data connection (command slot, dedicated, pub/sub) opened to a
	// generation's primary to that generation (loop-owned). Opening ones are included.
	connGen map[fsm.ConnID]uint64
	// drains are the connections of each retired generation that still finish their commands
	// (loop-owned); polling says when a generation is done.
	drains  map[uint64][]Conn
	polling bool
	// disposing: Disposed was stepped, and the loop runs on, stepping only the monitor, until
	// the monitor's disposal ends (its connections ended, or fsm.MonitorDisposalGrace).
	disposing bool
	view      atomic.Pointer[sentinelView]
	timers    atomic.Uint64
	// queries are the discovery queries in flight (loop-owned): those of the resolution's one
	// connection, pipelined. Closing their connection settles them (sentinelDropQueries).
	queries []*sentinelQuery
}

// sentinelQuery is a discovery query in flight: its connection, its timeout and whether it was
// settled (answered, timed out, or dropped because its connection closed).
type sentinelQuery struct {
	conn    fsm.ConnID
	timer   fsm.TimerID
	settled atomic.Bool
}

// sentinelView is what callers read of the Sentinel state, without locks.
type sentinelView struct {
	primary Endpoint
	gen     uint64
	live    bool
	// peers are the known Sentinels of the last publication (KnownSentinels).
	peers []fsm.Endpoint
}

func newSentinelState(cfg *SentinelConfig) *sentinelState {
	s := &sentinelState{name: cfg.PrimaryName, timeout: cfg.QueryTimeout, connGen: make(map[fsm.ConnID]uint64),
		drains: make(map[uint64][]Conn)}
	if s.timeout == 0 {
		s.timeout = DefaultSentinelQueryTimeout
	}
	s.view.Store(&sentinelView{})
	return s
}

func (s *sentinelState) storeView() {
	s.view.Store(&sentinelView{primary: endpointOf(s.primary), gen: s.gen, live: s.live, peers: s.peers})
}

// SentinelPrimary returns the primary the Sentinel client last validated, and whether there is
// one: false before the first validation, and for engines that are not a Sentinel client's. It
// never returns a Sentinel's address. The primary stays reported while a rediscovery runs after
// its generation retired.
func (e *Engine) SentinelPrimary() (Endpoint, bool) {
	if e.sn == nil {
		return Endpoint{}, false
	}
	v := e.sn.view.Load()
	return v.primary, v.gen != 0
}

// PrimaryReadOnly reports that a command of a Sentinel client got a READONLY error: the server
// it reached is no longer the primary, so the live generation retires and the next operation
// rediscovers. It only posts an event. On other engines it does nothing.
func (e *Engine) PrimaryReadOnly() {
	if e.sn == nil {
		return
	}
	v := e.sn.view.Load()
	if !v.live {
		return
	}
	e.post(item{ev: fsm.Event{Kind: fsm.PrimaryFailed, Machine: fsm.MachineSentinel,
		Sentinel: &fsm.SentinelData{Generation: v.gen}, Err: errReadOnly}})
}

// errReadOnly is why a READONLY reply retires the primary's generation.
var errReadOnly = errors.New("respire: the primary answered READONLY: it is a replica now")

// sentinelOpen opens the connection of a Dial effect of a Sentinel client: a Sentinel (the
// monitor's, or the resolution's while it asks a Sentinel) with Sentinel credentials; the
// primary the resolution validates; or a data connection, to the live generation's primary,
// or, when none is live, once a resolution validated one.
func (e *Engine) sentinelOpen(ctx context.Context, req OpenRequest) {
	switch req.Machine {
	case fsm.MachineSentinelMonitor:
		req.Sentinel = true
	case fsm.MachineSentinel:
		// The resolution dials one endpoint per step: a Sentinel, or (entering its primary
		// stage) the primary a Sentinel reported.
		req.Sentinel = e.machines.res.Phase() != "resolving/primary"
	default:
		if !e.sn.live {
			e.deferOpen(ctx, req)
			return
		}
		req.Endpoint = endpointOf(e.sn.primary)
		e.sn.connGen[req.Conn] = e.sn.gen
	}
	if req.Sentinel && e.deps.Plants.Has(plant.SentinelRedialAtOnce) {
		req.Sink = &redialSink{e: e, ctx: ctx, req: req} // planted: no backoff between dials
	}
	e.deps.Transport.Open(ctx, req)
}

// deferOpen waits for a resolution before opening a data connection: the resolution's answer
// opens it to the validated primary, or fails the attempt with the resolution's error. The
// demand goes through the journal like any other.
func (e *Engine) deferOpen(ctx context.Context, req OpenRequest) {
	e.demandOn(fsm.MachineSentinel, fsm.Event{Kind: fsm.Demanded}, &waiter{notify: func(g Grant) {
		switch {
		case ctx.Err() != nil:
			req.Sink.Failed(req.Conn, ctx.Err(), fsm.Transient)
		case g.Outcome != fsm.OutcomeGranted || !e.sn.live:
			err := g.Err
			if err == nil {
				err = &AcquireError{Outcome: g.Outcome}
			}
			req.Sink.Failed(req.Conn, err, fsm.Transient)
		default:
			req.Endpoint = endpointOf(e.sn.primary)
			e.sn.connGen[req.Conn] = e.sn.gen
			e.deps.Transport.Open(ctx, req)
		}
	}})
}

// sentinelBeforeStep runs before ev is journaled: the loss of a live generation's data
// connection, or a failed attempt to reach its primary, first retires that generation (a
// PrimaryFailed event of its own), so that the machine replacing the connection already dials
// through a new resolution. A handshake the primary rejected (a permanent failure) is not the
// primary failing.
func (e *Engine) sentinelBeforeStep(ev *fsm.Event) {
	if ev.Kind != fsm.ConnLost && ev.Kind != fsm.DialFailed {
		return
	}
	g, ok := e.sn.connGen[ev.Conn]
	if !ok {
		return
	}
	delete(e.sn.connGen, ev.Conn)
	if !e.sn.live || g != e.sn.gen || (ev.Kind == fsm.DialFailed && ev.Class == fsm.Permanent) {
		return
	}
	e.step(&item{ev: fsm.Event{Kind: fsm.PrimaryFailed, Machine: fsm.MachineSentinel,
		Sentinel: &fsm.SentinelData{Generation: g}, Err: ev.Err}})
}

// sentinelEffect executes the Sentinel machines' own effects.
func (e *Engine) sentinelEffect(f *fsm.Effect) {
	switch f.Kind {
	case fsm.Publish:
		d := f.Sentinel
		fresh := d.Generation != e.sn.gen || !e.sn.live
		e.sn.primary, e.sn.gen, e.sn.live = d.Primary, d.Generation, true
		e.sn.peers = d.Peers
		e.sn.storeView()
		e.post(item{ev: fsm.Event{Kind: fsm.Published, Machine: fsm.MachineSentinelMonitor, Sentinel: d}})
		if fresh {
			// A new generation: the command slots that failed against the old one start over
			// (fsm.Mux renews them), instead of waiting out rests earned by a dead primary.
			e.post(item{ev: fsm.Event{Kind: fsm.Published, Machine: fsm.MachineMux, Sentinel: d}})
		}
	case fsm.Retire:
		e.retireGeneration(f.Sentinel.Generation)
	case fsm.Rediscover:
		e.post(item{ev: fsm.Event{Kind: fsm.RediscoveryRequested, Machine: fsm.MachineSentinel, Sentinel: f.Sentinel}})
	case fsm.Warn:
		if e.deps.SentinelWarn != nil {
			e.deps.SentinelWarn(f.Sentinel.Warning, e.effectEndpoint(f))
		}
	case fsm.Query:
		e.sentinelQuery(f)
	case fsm.Subscribe:
		if sc, ok := e.conns[f.Conn].(SubscriberConn); ok {
			sc.Subscribe(f.Topics, false)
		} else if e.conns[f.Conn] != nil {
			e.Abort(f.Conn, errors.New("respire: the Sentinel monitor connection is not in subscriber mode"))
		}
	}
}

// retireGeneration retires generation gen: it takes no new work. Its command-slot and
// dedicated connections stop taking commands and drain what they accepted on the old socket
// (nothing is resent), while their machines replace them; its pub/sub connections are replaced
// at once and their subscriptions come back after a gap marker. Connections still opening are
// abandoned.
func (e *Engine) retireGeneration(gen uint64) {
	if gen == e.sn.gen && e.sn.live {
		e.sn.live = false
		e.sn.storeView()
	}
	var ids []fsm.ConnID
	for id, g := range e.sn.connGen {
		if g == gen {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var drained []Conn
	for _, id := range ids {
		delete(e.sn.connGen, id)
		c := e.conns[id]
		if c == nil {
			if cancel := e.opening[id]; cancel != nil {
				cancel() // the attempt fails; its machine's next one resolves again
			}
			continue
		}
		// The loss is posted before the drain starts: a caller that finds the connection
		// draining queues its command behind the loss, and the replacement carries it.
		e.Abort(id, ErrPrimaryRetired)
		switch fsm.MachineOf(uint64(id)) {
		case fsm.MachinePubSub, fsm.MachineShardedPubSub:
			// Replaced when the loss is stepped; the episode resubscribes after a gap marker.
		default:
			delete(e.conns, id)
			c.Drain()
			e.keepDraining(id, c)
			drained = append(drained, c)
		}
	}
	if len(drained) == 0 {
		return
	}
	e.sn.drains[gen] = drained
	e.recordRetired(1)
	e.pollDrains()
}

// recordRetired moves respire.sentinel.generations.retired, the generations still draining.
func (e *Engine) recordRetired(delta float64) {
	if e.deps.Meter != nil {
		e.deps.Meter.Record(endpointOf(e.sn.primary), fsm.Metric{Instrument: fsm.InstrumentSentinelGenerationsRetired, Value: delta})
	}
}

// pollDrains arms the check of the retired generations' drains, unless one is armed.
func (e *Engine) pollDrains() {
	if e.sn.polling || len(e.sn.drains) == 0 || e.closed {
		return
	}
	e.sn.polling = true
	id := fsm.TimerID(fsm.IDBase(sentinelTimers) + e.sn.timers.Add(1))
	e.deps.Runtime.ArmTimer(id, drainPoll, func() {
		e.post(item{call: func() {
			e.sn.polling = false
			e.checkDrains()
			e.pollDrains()
		}})
	})
}

// checkDrains forgets the retired generations whose connections have all stopped.
func (e *Engine) checkDrains() {
	for gen, conns := range e.sn.drains {
		done := true
		for _, c := range conns {
			if s, ok := c.(Stopper); ok && !s.Stopped() {
				done = false
				break
			}
		}
		if done || e.closed {
			delete(e.sn.drains, gen)
			e.recordRetired(-1)
		}
	}
}

// sentinelQuery sends a discovery query on the resolution's connection; the parsed answer, or
// the failure, comes back as an Answered event. A query unanswered after the query timeout
// aborts its connection, which fails the candidate.
func (e *Engine) sentinelQuery(f *fsm.Effect) {
	conn, q := f.Conn, f.Sentinel.Query
	answer := func(d *fsm.SentinelData, err error) {
		e.post(item{ev: fsm.Event{Kind: fsm.Answered, Conn: conn, Sentinel: d, Err: err}})
	}
	c := e.conns[conn]
	if c == nil {
		answer(&fsm.SentinelData{Query: q}, errNoSentinelConn)
		return
	}
	args := topo.SentinelCommand(q, e.sn.name)
	cmd := &Command{Name: args[0], Frame: resp.AppendCommand(nil, args...)}
	timer := fsm.TimerID(fsm.IDBase(sentinelTimers) + e.sn.timers.Add(1))
	sq := &sentinelQuery{conn: conn, timer: timer}
	settled := &sq.settled
	e.sn.queries = append(e.sn.queries, sq)
	cmd.Done = func(cmd *Command) {
		if !settled.CompareAndSwap(false, true) {
			return
		}
		e.post(item{call: func() {
			e.deps.Runtime.CancelTimer(timer)
			e.sn.forgetQuery(sq)
		}})
		if cmd.Err != nil {
			answer(&fsm.SentinelData{Query: q}, cmd.Err)
			return
		}
		d, err := topo.AnswerSentinel(q, cmd.Reply)
		cmd.Reply = resp.Value{}
		answer(d, err)
	}
	e.deps.Runtime.ArmTimer(timer, e.sn.timeout, func() {
		if settled.CompareAndSwap(false, true) {
			e.post(item{call: func() { e.sn.forgetQuery(sq) }})
			e.Abort(conn, errSentinelQueryTimeout)
		}
	})
	cmd.Enqueued()
	c.Send(cmd)
}

// forgetQuery removes a settled query from the ones in flight.
func (s *sentinelState) forgetQuery(q *sentinelQuery) {
	for i, x := range s.queries {
		if x == q {
			s.queries = append(s.queries[:i], s.queries[i+1:]...)
			return
		}
	}
}

// sentinelDropQueries settles, without an answer, the discovery queries in flight on conn, a
// connection the loop closed (the resolution abandoned it, or disposal did): their timeouts are
// cancelled, and a reply or failure the connection still reports later is dropped. So a query
// cut short by Close leaves no timer behind and posts nothing after the loop stopped, whether or
// not the connection completes its pending commands when closed.
func (e *Engine) sentinelDropQueries(conn fsm.ConnID) {
	kept := e.sn.queries[:0]
	for _, q := range e.sn.queries {
		if q.conn != conn {
			kept = append(kept, q)
			continue
		}
		if q.settled.CompareAndSwap(false, true) {
			e.deps.Runtime.CancelTimer(q.timer)
		}
	}
	clear(e.sn.queries[len(kept):])
	e.sn.queries = kept
}

// sentinelEndpoint is the endpoint of an effect of a Sentinel client that names none: the
// validated primary (the zero Endpoint before the first).
func (e *Engine) sentinelEndpoint() Endpoint { return endpointOf(e.sn.primary) }

// SentinelReceiver is the PubSubReceiver of a Sentinel client's monitor connections: it turns
// their acknowledgements and refusals into the monitor's events, and each Sentinel event message
// into a Notified event. Messages that are not Sentinel events, or are malformed, are dropped.
// Build it before the engine (the transport needs it) and Attach the engine once built.
type SentinelReceiver struct {
	eng atomic.Pointer[Engine]
}

var _ PubSubReceiver = (*SentinelReceiver)(nil)

// Attach makes r report to e.
func (r *SentinelReceiver) Attach(e *Engine) { r.eng.Store(e) }

// Acked implements PubSubReceiver.
func (r *SentinelReceiver) Acked(conn fsm.ConnID, topic fsm.Topic) {
	if e := r.eng.Load(); e != nil {
		e.Acked(conn, topic)
	}
}

// Rejected implements PubSubReceiver.
func (r *SentinelReceiver) Rejected(conn fsm.ConnID, topic fsm.Topic, err error) {
	if e := r.eng.Load(); e != nil {
		e.Rejected(conn, topic, err)
	}
}

// Message implements PubSubReceiver.
func (r *SentinelReceiver) Message(conn fsm.ConnID, msg PubSubMessage) {
	e := r.eng.Load()
	if e == nil {
		return
	}
	d, err := topo.NotifySentinel(msg.Channel, []byte(msg.Payload))
	if err != nil {
		return
	}
	e.post(item{ev: fsm.Event{Kind: fsm.Notified, Conn: conn, Sentinel: d}})
}

// errMonitorClosed is the end the loop reports for a monitor connection it closed itself during
// disposal.
var errMonitorClosed = errors.New("respire: the Sentinel monitor connection was closed by disposal")

// sentinelDisposed reports whether the monitor finished its disposal: every connection it closed
// ended, or it stopped waiting after fsm.MonitorDisposalGrace. Until then, Close's loop keeps
// running (only for the monitor), so that Wait gives monitor work up to the grace to end.
func (e *Engine) sentinelDisposed() bool {
	return e.machines.mon == nil || e.machines.mon.Phase() == "closed"
}

// sentinelClosed reports the end of a monitor connection the loop closed during disposal: a
// transport reports no loss for a connection the engine closed, and Conn.Close returns once the
// connection stopped. Attempts still dialing end through their own DialFailed.
func (e *Engine) sentinelClosed(id fsm.ConnID) {
	if e.sn == nil {
		return
	}
	e.sentinelDropQueries(id)
	if !e.sn.disposing || fsm.MachineOf(uint64(id)) != fsm.MachineSentinelMonitor {
		return
	}
	e.post(item{ev: fsm.Event{Kind: fsm.ConnLost, Conn: id, Err: errMonitorClosed}})
}
