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
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/simbind"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/resp"
)

// Client is a Redis client for one standalone endpoint, multiplexing commands over
// Options.Connections pipelined connections. Failed connections are replaced by respire's
// recovery state machines under the ReconnectPolicy; accepted commands are never replayed.
//
// Typed commands are the methods of the embedded Commands (c.Get, c.HSet, c.XAdd, ...); raw
// ones go through Do, and several at once through a Batch.
//
// A Client is safe for concurrent use. Close it to release its connections and goroutines.
type Client struct {
	Commands
	opts       Options
	ep         Endpoint
	eng        *engine.Engine
	dispatcher *engine.Dispatcher
	calls      sync.Pool
	// callBlocks pools the calls of batch runs, a run's worth at a time (batch_calls.go).
	callBlocks sync.Pool
	// pipes pools the pipelines that carry a batch as one command (batch_pipe.go).
	pipes     sync.Pool
	closed    atomic.Bool
	closeOnce sync.Once
	pubsub    *pubsubState
	// ns applies Options.KeyPrefix and Options.PubSubPrefix (prefix.go); nil when both are empty.
	ns *namespace
	// renewer renews credentials when Options.Credentials notifies changes (credentials.go).
	renewer *renewer
	// replayUnknown plants a defect for tests only (export_replay_test.go): a command whose
	// outcome is unknown is sent once more. respire must never do that; the kill test shows it
	// notices every time. Nothing outside tests sets it.
	replayUnknown atomic.Bool
	// replicas routes read-only commands to replicas (replica.go); nil without ReplicaEndpoints.
	replicas *replicaSet
	// creads routes a Cluster client's read-only commands among each shard's primary and
	// replicas (cluster_replica.go); nil for other clients.
	creads *engine.ClusterReads
	// shardSlot is the slot of a Cluster client's shard channels, or -1 before the first
	// SSubscribe (cluster_exec.go).
	shardSlot atomic.Int32
	// readDeadline returns the deadline of a caller that reads its own replies, CommandTimeout
	// from now (engine.Engine.SubmitReadOwn calls it only when the caller can read); nil
	// without a command timeout.
	readDeadline func() time.Time
	// hooks is the composed chain of Options.Hooks and the OpenTelemetry hooks (hook.go); nil
	// when none wraps commands or batches, which keeps the hot path as it is.
	hooks *hookChain
	// recovery is the latest lifecycle observation of a command slot, kept for the hooks when
	// a TracerProvider or hooks are set (hook.go); nil before the first.
	recovery atomic.Pointer[ConnectionStateChange]
	// sim binds the client to the simulator (simtest, simseam.go); nil in production.
	sim simbind.Host
	// dumps hands triggered journal captures to JournalCapture.OnDump (capture.go); nil
	// without it.
	dumps *dumper
}

// Connect creates a client and connects every connection before returning, so an unreachable
// server fails here: with a *TimeoutError (stage StageConnecting) when ConnectTimeout expires,
// a *ConnectionError wrapping the underlying error otherwise (errors.As reaches a *net.OpError
// for a refused connection, or a *ServerError for a handshake rejection such as WRONGPASS), or
// the context's error when ctx ends first. The initial connection is a single attempt; the
// reconnect policy governs replacements only.
func Connect(ctx context.Context, opts Options) (*Client, error) {
	c, err := Create(opts)
	if err != nil {
		return nil, err
	}
	if err := c.connect(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// Create validates opts and returns a client without any network I/O. The first command
// connects; a later command retries a failed attempt, once the slot's rest after the failure
// (250 ms doubling up to 5 s) is over. Commands during the rest fail at once with the last
// connection error. See ReconnectPolicy.
func Create(opts Options) (*Client, error) { return create(opts, nil) }

// create builds the client; host, when not nil, binds it to the simulator (simseam.go).
func create(opts Options, host simbind.Host) (*Client, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	o, resolved, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if host != nil {
		if err := o.simSupported(); err != nil {
			return nil, err
		}
	}
	o.logIgnored(o.Logger)
	o.logPlaintextCredentials(o.Logger)
	telemetry, err := otelHooks(&o)
	if err != nil {
		return nil, errors.Wrap(err, "respire: creating telemetry")
	}
	o.allHooks = append(telemetry, o.Hooks...)
	c := &Client{opts: o, ep: o.Endpoints[0], ns: newNamespace(o.KeyPrefix, o.PubSubPrefix), pubsub: newPubSubState(&o)}
	if d := o.CommandTimeout; d > 0 {
		c.readDeadline = func() time.Time { return time.Now().Add(d) }
	}
	c.Commands = Commands{x: c}
	c.hooks = buildHooks(o.allHooks, o.ObserveArguments)
	c.shardSlot.Store(-1)
	meter, err := engine.NewOTelMeter(o.MeterProvider)
	if err != nil {
		return nil, errors.Wrap(err, "respire: creating metrics")
	}
	var transport engine.Transport
	deps := engine.Deps{Meter: meter, PubSub: c.pubsub.router, MaintWarn: o.maintWarn()}
	tcfg := o.transportConfig(&resolved)
	tcfg.PubSub = c.pubsub.router
	if host != nil {
		if deps.Runtime, transport, deps.OnStep, err = host.Bind(&resolved); err != nil {
			return nil, err
		}
		host.BindPubSub(c.pubsub.router)
		c.sim = host
	} else if o.UseCluster && o.Database != 0 {
		// Each connection checks the server and SELECTs itself (cluster_db.go).
		tcfg.Handshake.Database = 0
		transport = dbTransport{inner: netio.NewTransport(tcfg), db: o.Database}
	} else {
		transport = netio.NewTransport(tcfg)
	}
	var sentinel *engine.SentinelReceiver
	if o.SentinelPrimaryName != "" {
		// Sentinel connections have a transport of their own (sentinel_client.go); the
		// client's endpoint is the validated primary, unknown until discovery.
		sentinel = &engine.SentinelReceiver{}
		if host != nil {
			// The simulated world opens the Sentinel connections, checks ROLE and reports the
			// monitor's messages to the receiver (simseam.go).
			host.BindSentinel(sentinel)
		} else {
			transport = sentinelTransport{data: transport, sentinel: netio.NewTransport(o.sentinelTransportConfig(tcfg, sentinel)),
				roleBudget: max(o.CommandTimeout, 0)}
		}
		c.ep = Endpoint{}
	}
	if deps.Runtime == nil {
		deps.Runtime = engine.NewClockRuntime(clock.New(), rand.Uint64())
	}
	deps.Transport = transport
	if sentinel != nil {
		deps.SentinelWarn = c.sentinelWarn
	}
	if o.OnConnectionStateChange != nil || o.Logger != nil || c.hooks != nil || o.JournalCapture != nil && o.JournalCapture.Trigger != nil {
		if host != nil {
			// One goroutine at a time in the simulator: observations are delivered in the step.
			deps.Observer = engine.ObserverFunc(c.observe)
		} else {
			c.dispatcher = engine.NewDispatcher(c.observe)
			deps.Observer = c.dispatcher
		}
	}
	ecfg := resolved.ClusterEngine(o.clusterSeeds())
	ecfg.Endpoint, ecfg.EpisodeBase = c.ep.engine(), nextEpisodeBase()
	if host != nil {
		// A simulated run numbers its episodes from zero, whatever other clients exist, so
		// that a seed replays the same trace; the host records every step, so the engine
		// keeps no journal of its own (as in the simulator's runs).
		ecfg.EpisodeBase, ecfg.JournalSize = 0, -1
	}
	if ecfg.Cluster != nil {
		ecfg.Cluster.RetiredGrace = testRetiredGrace
	}
	if sentinel != nil {
		ecfg.Endpoint, ecfg.Sentinel = o.Endpoints[0].engine(), o.sentinelEngineConfig()
	}
	replicaCfg, replicaDeps := ecfg, deps
	c.setupCapture(&ecfg, &deps)
	c.eng = engine.New(ecfg, deps)
	if sentinel != nil {
		sentinel.Attach(c.eng)
	}
	c.pubsub.router.Attach(c.eng)
	if host != nil {
		host.Attach(c.eng)
	} else {
		c.eng.Start()
	}
	if err := c.startReplicas(replicaCfg, replicaDeps); err != nil {
		_ = c.Close()
		return nil, err
	}
	if err := c.startClusterReads(); err != nil {
		_ = c.Close()
		return nil, err
	}
	c.renewer = startRenewer(c)
	return c, nil
}

// observe runs on the dispatcher goroutine: log, then call the application's handler.
func (c *Client) observe(change engine.StateChange) {
	ch := stateChangeOf(change)
	if c.hooks != nil && ch.Source == SourceCommand {
		note := ch
		c.recovery.Store(&note)
	}
	if l := c.opts.Logger; l != nil {
		attrs := []any{"endpoint", ch.Endpoint.String(), "source", ch.Source.String(), "state", ch.SourceState.String(),
			"endpoint_state", ch.State.String()}
		if ch.Slot >= 0 {
			attrs = append(attrs, "slot", ch.Slot)
		}
		if ch.Attempt > 0 {
			attrs = append(attrs, "attempt", ch.Attempt)
		}
		if ch.Scheduled {
			attrs = append(attrs, "next_delay", ch.NextDelay)
		}
		switch {
		case ch.Recycle != RecycleNone:
			logRecycle(l, ch, attrs)
		case ch.Exhausted:
			l.Warn("respire: reconnect limit reached", append(attrs, "error", errString(ch.Err))...)
		case ch.Err != nil:
			l.Warn("respire: connection failed", append(attrs, "error", errString(ch.Err))...)
		default:
			l.Debug("respire: connection state changed", attrs...)
		}
	}
	if h := c.opts.OnConnectionStateChange; h != nil {
		h(ch)
	}
	c.observeCapture(ch)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// connect waits until every connection is ready, or fails with the first failure.
func (c *Client) connect(ctx context.Context) error {
	answer := make(chan engine.Grant, 1)
	id := c.eng.Acquire(fsm.NeedAll, func(g engine.Grant) { answer <- g })
	if c.sim != nil {
		return c.connectSim(ctx, id, answer)
	}
	select {
	case g := <-answer:
		return c.grantErr(g)
	case <-ctx.Done():
		c.eng.Release(id)
		return ctx.Err()
	}
}

func (c *Client) grantErr(g engine.Grant) error {
	if g.Outcome == fsm.OutcomeGranted {
		return nil
	}
	if g.Outcome == fsm.OutcomeFailed && g.Err != nil {
		return connectFailure(c.ep, c.opts.ConnectTimeout, g.Err)
	}
	return acquireFailure(c.ep, c.opts.ConnectTimeout, &engine.AcquireError{Outcome: g.Outcome, Err: g.Err})
}

// Close closes every connection, cancels scheduled reconnects and waits for the client's
// goroutines to end. Commands still waiting for a connection fail with ErrClosed; commands already
// sent fail with an *UnknownOutcomeError that matches both ErrUnknownOutcome and ErrClosed (they
// may have been executed). It is safe to call Close more than once, and from an
// OnConnectionStateChange handler.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.renewer.close()
		c.closeReplicas()
		c.closeClusterReads()
		c.eng.Close()
		if c.sim != nil {
			c.sim.Closed()
		} else {
			c.eng.Wait()
		}
		c.pubsub.router.Close()
		if c.dispatcher != nil {
			// Waits for an observer callback in flight, unless this Close is that callback's.
			c.dispatcher.Stop()
		}
		if c.dumps != nil {
			c.dumps.close()
		}
	})
	return nil
}

// IsConnected reports whether at least one connection is ready to carry commands.
func (c *Client) IsConnected() bool { return !c.closed.Load() && c.eng.Connected() }

// Endpoint returns the client's endpoint. For a Sentinel client, it is the primary the client
// last validated, never a Sentinel's address, and the zero Endpoint before the first
// validation.
func (c *Client) Endpoint() Endpoint {
	if p, ok := c.eng.SentinelPrimary(); ok {
		return endpointOf(p)
	}
	return c.ep
}

// call is a pooled command with its completion signal. Pooling keeps the hot path free of
// allocations: the frame, the reply storage, the timer and the channel are reused.
type call struct {
	cmd    engine.Command
	done   chan struct{}
	timer  *time.Timer
	client *Client
	// spans and argv locate a raw command's arguments in its frame (raw.go).
	spans []argSpan
	argv  [][]byte
	// alt is the second frame buffer of a call rewritten in a namespace (prefix.go).
	alt []byte
	// grp, for a call of a batch's run, is the group its completion counts down instead of
	// signalling done (batch.go).
	grp *callGroup
	// borrowed: cmd.Frame is not the call's own storage but a view of a Batch's buffer or a
	// shared constant frame (batch_calls.go), never to be appended to; putCall drops it.
	borrowed bool
	// relaxStart is the start of a command whose timeout a maintenance window extended
	// (maint.go); zero otherwise.
	relaxStart time.Time
	// blocking: the command may wait on the server; it runs on a dedicated connection with
	// no reply budget.
	blocking bool
	// node, when set, sends the call to that Cluster node (cluster_exec.go).
	node uint32
	// readable: a read-only command of the catalogue that follows the read policy; policy is
	// its view's read policy plus one, or 0 for the client's (replica.go).
	readable bool
	policy   uint8
	// hedgeable: a read that may be hedged (replica.go).
	hedgeable bool
	// own is the call's command as a group of one, for engine.Engine.SubmitReadOwn.
	own [1]*engine.Command
}

func (c *Client) getCall() *call {
	if v := c.calls.Get(); v != nil {
		return v.(*call)
	}
	cl := &call{done: make(chan struct{}, 1), client: c}
	cl.cmd.Done = cl.onDone
	cl.own[0] = &cl.cmd
	return cl
}

// Pooled calls keep their frame and reply storage for reuse up to these sizes; larger ones (a
// big value sent or received) are dropped so that one large command or reply does not stay
// pinned in the pool for the life of the client.
const (
	maxRetainedFrame = 64 << 10
	maxRetainedReply = 64 << 10
)

// ownReply returns the reply v for a caller to keep. The storage of a large reply is handed
// over rather than copied, leaving v empty; a small reply is cloned, so that the pooled call
// keeps its storage for the next command.
func ownReply(v *resp.Value) resp.Value {
	if v.StorageSize() > maxRetainedReply {
		out := *v
		*v = resp.Value{}
		return out
	}
	return v.Clone()
}

func (c *Client) putCall(cl *call) {
	cl.grp = nil
	if cl.borrowed || cap(cl.cmd.Frame) > maxRetainedFrame {
		cl.cmd.Frame, cl.borrowed = nil, false
	}
	if cap(cl.alt) > maxRetainedFrame {
		cl.alt = nil
	}
	cl.cmd.Reply.Reset(maxRetainedReply)
	cl.node, cl.readable, cl.policy, cl.hedgeable = 0, false, 0, false
	if len(cl.argv) > 0 {
		clear(cl.argv) // views into the frame: keep nothing alive
		cl.argv = cl.argv[:0]
	}
	if cap(cl.spans) > 1024 {
		cl.spans, cl.argv = nil, nil
	}
	c.calls.Put(cl)
}

// onDone runs when the connection completes the command: it wakes the caller (or counts down
// the group of a batch's run, whose last completion wakes the caller), or recycles the call if
// the caller already gave up (engine.Command.Answered).
func (cl *call) onDone(*engine.Command) {
	if cl.cmd.Answered() {
		if g := cl.grp; g != nil {
			g.complete()
			return
		}
		cl.done <- struct{}{}
		return
	}
	cl.client.putCall(cl)
}

// execute submits the call's frame and waits for its reply, the command timeout or ctx. A nil
// error means cl.cmd.Reply holds the reply (which may be a server error reply: see replyErr).
// On success the caller must putCall(cl) after reading the reply; on error execute has already
// arranged for the call to be recycled.
func (c *Client) execute(ctx context.Context, cl *call) error {
	if c.closed.Load() {
		c.putCall(cl)
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		// Already cancelled: nothing is sent.
		c.putCall(cl)
		return err
	}
	if c.sim != nil {
		return c.executeSim(ctx, cl)
	}
	if c.opts.UseCluster && cl.node == 0 {
		if done, err := c.executeCluster(ctx, cl); done {
			return err
		}
	}
	if c.replicas != nil && c.routesRead(cl) {
		if done, err := c.executeRead(ctx, cl); done {
			return err
		}
	}
	cl.cmd.Reset()
	var timeout <-chan time.Time
	switch {
	case cl.node != 0:
		c.eng.SubmitNode(&cl.cmd, cl.node)
		timeout = c.armTimeout(cl)
	default:
		var done bool
		if done, timeout = c.submitOwn(ctx, cl); done {
			<-cl.done
			return c.completion(cl)
		}
	}
	cl.relaxStart = time.Time{}
	var shrunk <-chan struct{} // the maintenance window keeping the command alive shrank (maint.go)
	for {
		select {
		case <-cl.done:
			if cl.timer != nil {
				cl.timer.Stop()
			}
			return c.completion(cl)
		case <-ctx.Done():
			return c.abandon(cl, ctx.Err())
		case fired := <-timeout:
			// A maintenance window may extend the deadline (maint.go).
			if relaxed, ch, ok := c.relaxedWait(cl, fired); ok {
				timeout, shrunk = relaxed, ch
				continue
			}
			return c.abandon(cl, nil)
		case <-shrunk:
			if relaxed, ch, ok := c.relaxedWait(cl, time.Now()); ok {
				timeout, shrunk = relaxed, ch
				continue
			}
			cl.timer.Stop()
			return c.abandon(cl, nil)
		}
	}
}

// submitOwn submits the call's command and reads its reply on the caller's goroutine when the
// connection that takes it lets it (a lone caller on an idle connection:
// engine.Engine.SubmitReadOwn, as a pipeline's run does; on a Cluster client, the connection of
// the node serving the command's slot), which spares the hand-off from the connection's reader
// goroutine; the read stops at the command timeout or when ctx ends. It reports whether the
// command completed (its done then holds the signal). Otherwise the caller waits as usual (and
// sees ctx's end there), and submitOwn returns the channel of the call's timer armed for what is
// left of the command timeout (nil without one): all of it when the caller did not read, in
// which case the clock is not read here at all (submitting took microseconds, and a caller
// among many rarely reads).
func (c *Client) submitOwn(ctx context.Context, cl *call) (bool, <-chan time.Time) {
	d := c.opts.CommandTimeout
	done, deadline := c.eng.SubmitReadOwn(ctx, cl.own[:], c.readDeadline)
	if done {
		return true, nil
	}
	if d <= 0 {
		return false, nil
	}
	left := d
	if !deadline.IsZero() {
		left = max(time.Until(deadline), time.Nanosecond) // it read, and stopped early
	}
	if cl.timer == nil {
		cl.timer = time.NewTimer(left)
	} else {
		cl.timer.Reset(left)
	}
	return false, cl.timer.C
}

// completion turns a completed command into nil (reply available) or an error, recycling the
// call on error.
func (c *Client) completion(cl *call) error {
	cmd := &cl.cmd
	if cmd.Err != nil && cmd.MaybeSent() && c.replayUnknown.Load() {
		// The planted defect (tests only): send the command again and report that attempt.
		cmd.Reset()
		c.eng.Submit(cmd)
		<-cl.done
	}
	if cmd.Err == nil {
		return nil
	}
	err := c.commandFailure(cmd)
	c.putCall(cl)
	return err
}

func (c *Client) commandFailure(cmd *engine.Command) error {
	return c.commandFailureOn(cmd, c.endpointFor(cmd))
}

// commandFailureOn is commandFailure for a command sent to ep (a dedicated connection's server).
func (c *Client) commandFailureOn(cmd *engine.Command, ep Endpoint) error {
	var ae *engine.AcquireError
	if errors.As(cmd.Err, &ae) {
		return acquireFailure(ep, c.opts.ConnectTimeout, ae)
	}
	var cse *engine.CrossSlotError
	if errors.As(cmd.Err, &cse) {
		return c.crossSlotError(cmd, cse)
	}
	if cmd.MaybeSent() {
		// Close ends connections with netio.ErrClosed; any other cause (a reset that raced with
		// Close) is reported as it is.
		return &UnknownOutcomeError{CommandName: cmd.Name, Endpoint: ep, Stage: stageOf(cmd.FinalStage()), Err: cmd.Err,
			closed: c.closed.Load() && errors.Is(cmd.Err, netio.ErrClosed)}
	}
	if c.closed.Load() {
		return ErrClosed
	}
	return &ConnectionError{Endpoint: ep, Err: cmd.Err}
}

// abandon handles a caller that stops waiting (ctxErr set) or a command timeout (ctxErr nil), by
// the caller protocol of the engine (Engine.Abandon), which the simulator's callers follow too.
func (c *Client) abandon(cl *call, ctxErr error) error {
	cmd := &cl.cmd
	a := c.eng.Abandon(cmd)
	if cl.timer != nil {
		cl.timer.Stop()
	}
	if a.Wait {
		// The reply won the race: use it.
		<-cl.done
		return c.completion(cl)
	}
	return c.abandonedErr(cl, a, c.Endpoint(), ctxErr)
}

// abandonedErr is the error of a command its caller abandoned (ctxErr set) or whose timeout
// passed (ctxErr nil), when the reply did not win the race (a.Wait false), the command being
// sent to the server at ep. It recycles cl when the caller owns it.
func (c *Client) abandonedErr(cl *call, a engine.Abandonment, ep Endpoint, ctxErr error) error {
	name := cl.cmd.Name
	if a.Owned {
		c.putCall(cl)
	}
	// Otherwise a connection owns the command: it may still be written (Buffered) or executed.
	// The call is recycled by onDone when the connection completes it.
	if a.Verdict == engine.VerdictFailed {
		// Never handed to a connection: definitely not sent.
		if ctxErr != nil {
			return ctxErr
		}
		return c.timeoutErr(name, StageWaitingForCapacity)
	}
	stage := stageOf(a.Stage)
	if ctxErr != nil {
		return &UnknownOutcomeError{CommandName: name, Endpoint: ep, Stage: stage, Err: ctxErr}
	}
	return c.timeoutErr(name, stage)
}

func (c *Client) timeoutErr(name string, stage Stage) error {
	hint := "the command waited for a connection; check the server's reachability and the reconnect policy"
	switch stage {
	case StageBuffered, StageWriting:
		hint = "the connection's writes are slow; check the network and payload sizes"
	case StageAwaitingReply:
		hint = "the server did not reply in time; check SLOWLOG, blocking commands and the network"
	}
	return &TimeoutError{CommandName: name, Budget: c.opts.CommandTimeout,
		Diagnostics: Diagnostics{Stage: stage, Endpoint: c.Endpoint(), SinceLastRead: -1, SinceLastWrite: -1, Hint: hint}}
}

// replyErr returns a *ServerError for an error reply, or nil.
func (c *Client) replyErr(name string, v *resp.Value) error {
	return c.replyErrAt(name, v, c.Endpoint())
}

// replyErrAt returns a *ServerError from the server at ep for an error reply, or nil.
func (c *Client) replyErrAt(name string, v *resp.Value, ep Endpoint) error {
	if !v.IsError() {
		return nil
	}
	c.noteReadOnly(v)
	return serverError(v, name, ep, "")
}

// armTimeout starts the call's CommandTimeout (reusing its timer) and returns the channel that
// fires when it expires, or nil without a timeout.
func (c *Client) armTimeout(cl *call) <-chan time.Time {
	d := c.opts.CommandTimeout
	if d <= 0 {
		return nil
	}
	if cl.timer == nil {
		cl.timer = time.NewTimer(d)
	} else {
		cl.timer.Reset(d)
	}
	return cl.timer.C
}
