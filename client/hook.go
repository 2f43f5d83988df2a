package client

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio"
)

// MaxHooks bounds Options.Hooks.
const MaxHooks = 16

// Bounds of the arguments a hook or a span sees with Options.ObserveArguments: at most
// MaxObservedArgs arguments (the command's words included), each cut to MaxObservedArgBytes
// bytes. A cut argument ends with "...".
const (
	MaxObservedArgs     = 32
	MaxObservedArgBytes = 128
)

// ErrHookReplay: a hook called next a second time for one command, batch or dial. respire
// never sends a command twice, whoever asks: the second call sends nothing and returns this
// error. Match it with errors.Is.
var ErrHookReplay = sentinel("respire: a hook called next again: nothing was sent a second time")

// ErrHookDropped: a hook returned nil without calling next, so the command or batch did not
// run and has no reply. A hook that stops an operation (a circuit breaker, a rate limiter)
// should return its own error instead. Match it with errors.Is.
var ErrHookDropped = sentinel("respire: a hook returned without running the operation")

// Hook adds one's own instrumentation around respire's operations: tracing, logging, metrics,
// a circuit breaker. Each field is optional; it receives the next step of the chain and returns
// the step that replaces it, like an HTTP middleware:
//
//	logCommands := client.Hook{Command: func(next client.CommandFunc) client.CommandFunc {
//		return func(ctx context.Context, cmd *client.CommandInfo) error {
//			start := time.Now()
//			err := next(ctx, cmd)
//			slog.InfoContext(ctx, "redis", "command", cmd.Name(), "took", time.Since(start), "err", err)
//			return err
//		}
//	}}
//
// Hooks of Options.Hooks run in order: the first is the outermost. The tracing of
// Options.TracerProvider and the operation metrics of Options.MeterProvider are hooks of this
// kind too, placed outside the application's.
//
// A hook must call next at most once, synchronously, and return what it returns (or an error
// of its own that wraps it). It cannot resend: a second call of next sends nothing and returns
// ErrHookReplay. It cannot turn a failure into a success: when next failed, the caller gets
// next's error if the hook returns nil. A hook that returns an error without calling next stops
// the operation before anything is sent, and the caller gets that error.
//
// Hooks see no keys, values or credentials: CommandInfo names the command and its endpoint,
// and holds the arguments only with Options.ObserveArguments; DeliveryInfo gives a pub/sub
// message's kind and size, and its channel only with ObserveArguments.
type Hook struct {
	// Command wraps every command sent alone: the typed methods, Do, scripts and blocking
	// commands, on a Client or a DedicatedConn. next's error is the command's: a *ServerError
	// for an error reply, an *UnknownOutcomeError, a *TimeoutError, ...
	Command func(next CommandFunc) CommandFunc
	// Batch wraps every batch run: Commands.Pipeline, Commands.Atomic and DedicatedConn.Exec.
	// Its commands do not go through Command.
	Batch func(next BatchFunc) BatchFunc
	// Delivery wraps every Subscription.Next (and so every step of All): next waits for the
	// subscription's next message, marker or end, and the hook sees what came (DeliveryInfo).
	// A message that next took is returned to the application whatever the hook returns: a
	// hook cannot lose one.
	Delivery func(next DeliveryFunc) DeliveryFunc
	// Dial wraps the opening of every physical connection (commands, dedicated, pub/sub,
	// discovery), below TLS and the Redis handshake: next opens the transport connection with
	// Options.Dialer or the built-in dialer. Each call of next opens a connection (no command is
	// sent on it yet): close any the hook does not return. It runs on respire's own goroutines, with a
	// context that carries the connect timeout but none of a caller's values. A hook may wrap
	// the returned connection; the wrapper must keep net.Conn's concurrency rules.
	Dial func(next DialFunc) DialFunc
}

// CommandFunc runs one command: see Hook.Command.
type CommandFunc func(ctx context.Context, cmd *CommandInfo) error

// BatchFunc runs one batch: see Hook.Batch.
type BatchFunc func(ctx context.Context, batch *BatchInfo) error

// DeliveryFunc receives one pub/sub delivery: see Hook.Delivery.
type DeliveryFunc func(ctx context.Context, delivery *DeliveryInfo) error

// DialFunc opens one transport connection to endpoint: see Hook.Dial.
type DialFunc func(ctx context.Context, endpoint Endpoint) (net.Conn, error)

// CommandInfo describes a command to the hooks. It is valid only during the hook's call: do not
// keep it. Printing it shows the command's name and endpoint, never its arguments.
type CommandInfo struct {
	name     string
	endpoint Endpoint
	db       int
	nargs    int
	args     []string
	blocking bool
	// shared: the command goes to a shared connection; waited: none was ready when it was sent.
	shared, waited bool
	// note is the latest lifecycle observation of the command slots when the command waited.
	note *ConnectionStateChange

	c  *Client
	cl *call // nil once the exchange failed: the call belongs to the pool again
	// via, x and d say which exchange sends the call (exchange).
	via exchVia
	x   executor
	d   *DedicatedConn
	ran atomic.Bool
	// exchErr is the exchange's error; replyErr the *ServerError of an error reply.
	exchErr, replyErr error
}

// Name returns the command's name in upper case, with its subcommand ("GET", "CLIENT
// SETNAME"), as the command table knows it; a command unknown to the table keeps the spelling
// it was sent with.
func (ci *CommandInfo) Name() string { return ci.name }

// Endpoint returns the server of the command: the client's endpoint before next returns, and
// the server that replied afterwards (on a Cluster client, the node the command went to).
func (ci *CommandInfo) Endpoint() Endpoint { return ci.endpoint }

// Database returns the database index of the client (Options.Database).
func (ci *CommandInfo) Database() int { return ci.db }

// ArgCount returns the number of arguments sent, the command's words included.
func (ci *CommandInfo) ArgCount() int { return ci.nargs }

// Blocking reports a command that may wait on the server (BLPOP, XREAD BLOCK, WAIT, ...).
func (ci *CommandInfo) Blocking() bool { return ci.blocking }

// WaitedForConnection reports, once next has returned, that no shared connection was ready
// when the command was sent: it waited for the connection attempt in progress (recovery, or the
// first connection of a client made by Create), or failed with the last connection error.
// Recovery then describes that attempt.
func (ci *CommandInfo) WaitedForConnection() bool { return ci.waited }

// Recovery returns, for a command that WaitedForConnection, the latest lifecycle observation of
// the client's command connections when the command was sent (the attempt, its delay,
// exhaustion, the error): why the command waited. ok is false for a command that did not wait,
// or before any observation. Observations are delivered asynchronously and can lag the attempt
// they describe.
func (ci *CommandInfo) Recovery() (change ConnectionStateChange, ok bool) {
	if ci.note == nil {
		return change, false
	}
	return *ci.note, true
}

// Args returns the command's arguments as sent (with Options.KeyPrefix applied), the words
// first, bounded by MaxObservedArgs and MaxObservedArgBytes, when Options.ObserveArguments is
// set; nil otherwise. The arguments of commands that carry credentials (AUTH, HELLO, MIGRATE,
// ACL SETUSER, CONFIG SET, ...) always read "?". The slice is the hook's to keep.
func (ci *CommandInfo) Args() []string { return ci.args }

// String describes the command without its arguments.
func (ci *CommandInfo) String() string {
	return "client.CommandInfo{" + ci.name + " on " + ci.endpoint.String() + "}"
}

// GoString makes %#v print the description too.
func (ci *CommandInfo) GoString() string { return ci.String() }

// next is the innermost step of the chain: the exchange itself, once.
func (ci *CommandInfo) next(ctx context.Context) error {
	if !ci.ran.CompareAndSwap(false, true) {
		return ErrHookReplay
	}
	cl := ci.cl
	if ci.waited = ci.shared && !ci.c.eng.Connected(); ci.waited {
		ci.note = ci.c.recovery.Load()
	}
	if err := ci.exchange(ctx, cl); err != nil {
		ci.cl, ci.exchErr = nil, err
		return err
	}
	ci.endpoint = ci.c.endpointFor(&cl.cmd)
	if v := &cl.cmd.Reply; v.IsError() {
		ci.replyErr = serverError(v, cl.cmd.Name, ci.endpoint, "")
		return ci.replyErr
	}
	return nil
}

// exchVia names the exchange a hooked call takes: the one it would have taken without hooks.
// Naming it, rather than passing a function value, keeps the hooked path from allocating a
// closure per command.
type exchVia uint8

const (
	viaExecutor  exchVia = iota // x.exchange: typed commands on any executor
	viaExecute                  // c.execute: Client.Do on a shared connection
	viaDedicated                // d.roundTrip: DedicatedConn.Do and the WATCH family
	viaBlocking                 // d.exchangeBlocking: blocking raw commands
)

// exchange sends the call by its route.
func (ci *CommandInfo) exchange(ctx context.Context, cl *call) error {
	return exchangeVia(ctx, cl, ci.c, ci.via, ci.x, ci.d)
}

// exchangeVia sends cl by the route via (on c, x or d).
func exchangeVia(ctx context.Context, cl *call, c *Client, via exchVia, x executor, d *DedicatedConn) error {
	switch via {
	case viaExecute:
		return c.execute(ctx, cl)
	case viaDedicated:
		cls := [1]*call{cl}
		return d.roundTrip(ctx, d.budget(), cls[:])
	case viaBlocking:
		return d.exchangeBlocking(ctx, cl)
	}
	return x.exchange(ctx, cl)
}

// BatchInfo describes a batch to the hooks. It is valid only during the hook's call: do not
// keep it. It names the batch's commands, never their arguments.
type BatchInfo struct {
	mode     batchMode
	endpoint Endpoint
	db       int
	names    []string
	outs     []settler
	run      func(context.Context) error
	ran      atomic.Bool
	runErr   error
}

// Len returns the number of commands in the batch (MULTI and EXEC not counted).
func (bi *BatchInfo) Len() int { return len(bi.names) }

// Transaction reports a batch that runs as MULTI ... EXEC (Commands.Atomic,
// DedicatedConn.Exec).
func (bi *BatchInfo) Transaction() bool { return bi.mode != modePipeline }

// Name returns the name of command i (0-based, in queue order).
func (bi *BatchInfo) Name(i int) string { return bi.names[i] }

// Err returns the outcome of command i once next has returned: nil for a command that
// succeeded, its error otherwise (a *ServerError for an error reply). Before next returns it
// is ErrNotRun.
func (bi *BatchInfo) Err(i int) error {
	if e, ok := bi.outs[i].(interface{ Err() error }); ok {
		return e.Err()
	}
	return nil
}

// Endpoint returns the client's endpoint.
func (bi *BatchInfo) Endpoint() Endpoint { return bi.endpoint }

// Database returns the database index of the client (Options.Database).
func (bi *BatchInfo) Database() int { return bi.db }

// String describes the batch without its arguments.
func (bi *BatchInfo) String() string {
	kind := "pipeline"
	if bi.Transaction() {
		kind = "transaction"
	}
	return "client.BatchInfo{" + kind + " of " + strconv.Itoa(len(bi.names)) + " on " + bi.endpoint.String() + "}"
}

// GoString makes %#v print the description too.
func (bi *BatchInfo) GoString() string { return bi.String() }

func (bi *BatchInfo) next(ctx context.Context) error {
	if !bi.ran.CompareAndSwap(false, true) {
		return ErrHookReplay
	}
	bi.runErr = bi.run(ctx)
	return bi.runErr
}

// DeliveryInfo describes a pub/sub delivery to the hooks, once next has returned. It is valid
// only during the hook's call: do not keep it. Printing it shows the kind only.
type DeliveryInfo struct {
	s       *Subscription
	observe bool
	ran     atomic.Bool
	taken   bool
	msg     Message
	err     error
}

// Taken reports that next received a message or marker (false when the subscription ended, ctx
// ended, or next was not called).
func (di *DeliveryInfo) Taken() bool { return di.taken }

// Kind returns the kind of what next received: a published message, a gap or an overflow
// marker; zero (printed "none") when nothing was taken.
func (di *DeliveryInfo) Kind() MessageKind { return di.msg.Kind }

// PayloadLen returns the length of a published message's payload, in bytes.
func (di *DeliveryInfo) PayloadLen() int { return len(di.msg.Payload) }

// Dropped returns the number of entries an overflow marker stands for.
func (di *DeliveryInfo) Dropped() int { return di.msg.Dropped }

// Channel returns the channel and the pattern of the delivery (see Message) with
// Options.ObserveArguments, and empty strings otherwise: channel names can hold user data.
func (di *DeliveryInfo) Channel() (channel, pattern string) {
	if !di.observe {
		return "", ""
	}
	return di.msg.Channel, di.msg.Pattern
}

// String describes the delivery without its channel or payload.
func (di *DeliveryInfo) String() string {
	if !di.taken {
		return "client.DeliveryInfo{none}"
	}
	return "client.DeliveryInfo{" + di.msg.Kind.String() + "}"
}

// GoString makes %#v print the description too.
func (di *DeliveryInfo) GoString() string { return di.String() }

func (di *DeliveryInfo) next(ctx context.Context) error {
	if !di.ran.CompareAndSwap(false, true) {
		return ErrHookReplay
	}
	di.msg, di.err = di.s.next(ctx)
	di.taken = di.err == nil
	return di.err
}

// hookDelivery runs Subscription.Next through the hooks. A message next took is returned
// whatever the hooks return.
func (c *Client) hookDelivery(ctx context.Context, s *Subscription) (Message, error) {
	di := &DeliveryInfo{s: s, observe: c.hooks.observeArgs}
	err := c.hooks.delivery(ctx, di)
	switch {
	case di.taken:
		return di.msg, nil
	case !di.ran.Load():
		if err == nil {
			err = ErrHookDropped
		}
		return Message{}, err
	case err == nil:
		return Message{}, di.err
	}
	return Message{}, err
}

// hookChain holds the composed hooks of a client; a nil step has no hook, and its operations
// take their path without hooks.
type hookChain struct {
	command  CommandFunc
	batch    BatchFunc
	delivery DeliveryFunc
	// observeArgs copies bounded arguments into CommandInfo (Options.ObserveArguments).
	observeArgs bool
}

// buildHooks composes hooks, the first outermost; nil when none wraps commands, batches or
// deliveries (dials are composed by Options.dialHooked).
func buildHooks(hooks []Hook, observeArgs bool) *hookChain {
	var command CommandFunc
	var batch BatchFunc
	var delivery DeliveryFunc
	wrapped := false
	for i := len(hooks) - 1; i >= 0; i-- {
		if h := hooks[i].Command; h != nil {
			if command == nil {
				command = func(ctx context.Context, ci *CommandInfo) error { return ci.next(ctx) }
			}
			command, wrapped = h(command), true
		}
		if h := hooks[i].Batch; h != nil {
			if batch == nil {
				batch = func(ctx context.Context, bi *BatchInfo) error { return bi.next(ctx) }
			}
			batch, wrapped = h(batch), true
		}
		if h := hooks[i].Delivery; h != nil {
			if delivery == nil {
				delivery = func(ctx context.Context, di *DeliveryInfo) error { return di.next(ctx) }
			}
			delivery, wrapped = h(delivery), true
		}
	}
	if !wrapped {
		return nil
	}
	return &hookChain{command: command, batch: batch, delivery: delivery, observeArgs: observeArgs}
}

// hookCommand runs a sealed call through the hooks; via (with x for viaExecutor, d for the
// dedicated routes) is the exchange the call would have had without them. It keeps exchange's
// contract: nil means cl.cmd.Reply holds the reply and the caller recycles cl; on error cl has
// been recycled.
func (c *Client) hookCommand(ctx context.Context, cl *call, via exchVia, x executor, d *DedicatedConn) error {
	if c.hooks.command == nil {
		return exchangeVia(ctx, cl, c, via, x, d)
	}
	_, onClient := x.(*Client)
	shared := !cl.blocking && (via == viaExecute || (via == viaExecutor && onClient))
	ci := &CommandInfo{name: cl.cmd.Name, endpoint: c.ep, db: c.opts.Database, blocking: cl.blocking,
		shared: shared, c: c, cl: cl, via: via, x: x, d: d}
	ci.nargs, ci.args = observedArgs(cl.cmd.Frame, cl.cmd.Name, c.hooks.observeArgs)
	err := c.hooks.command(ctx, ci)
	switch {
	case !ci.ran.Load():
		// Never sent: the hook stopped it.
		c.putCall(cl)
		if err == nil {
			err = ErrHookDropped
		}
		return err
	case ci.exchErr != nil:
		// The exchange failed and recycled the call; a hook may wrap the error, not hide it.
		if err == nil {
			err = ci.exchErr
		}
		return err
	case err == nil || err == ci.replyErr:
		// The reply stands: the caller reads it (an error reply included).
		return nil
	default:
		c.putCall(cl)
		return err
	}
}

// hookBatch runs a batch through the hooks; run is what the batch would have run without them.
func (c *Client) hookBatch(ctx context.Context, b *Batch, mode batchMode, run func(context.Context) error) error {
	if c.hooks.batch == nil {
		return run(ctx)
	}
	bi := &BatchInfo{mode: mode, endpoint: c.ep, db: c.opts.Database, run: run,
		names: make([]string, len(b.ents)), outs: make([]settler, len(b.ents))}
	for i := range b.ents {
		bi.names[i], bi.outs[i] = b.ents[i].name, b.ents[i].out
	}
	err := c.hooks.batch(ctx, bi)
	if !bi.ran.Load() {
		if err == nil {
			err = ErrHookDropped
		}
		b.failAll(err)
		b.done()
		return err
	}
	if err == nil {
		err = bi.runErr
	}
	return err
}

// runBatchHooked runs a batch of executor x, through the hooks when there are some.
func runBatchHooked(ctx context.Context, x executor, b *Batch, mode batchMode) error {
	c := x.owner()
	if c.hooks == nil {
		return x.runBatch(ctx, b, mode)
	}
	return c.hookBatch(ctx, b, mode, func(ctx context.Context) error { return x.runBatch(ctx, b, mode) })
}

// secretArgs lists the commands whose arguments may carry credentials: a hook never sees them.
var secretArgs = map[string]bool{
	"AUTH": true, "HELLO": true, "MIGRATE": true, "ACL SETUSER": true, "ACL DRYRUN": true,
	"CONFIG SET": true, "SENTINEL SET": true, "SENTINEL CONFIG": true,
}

// observedArgs counts the arguments of a command frame this package encoded and, when observe
// is set, copies them bounded (every argument of a command in secretArgs but its words reads
// "?").
func observedArgs(frame []byte, name string, observe bool) (n int, args []string) {
	if !observe {
		if nl := bytes.IndexByte(frame, '\r'); nl > 1 {
			n, _ = strconv.Atoi(string(frame[1:nl]))
		}
		return n, nil
	}
	views := frameArgs(frame)
	words := 1 + strings.Count(name, " ")
	secret := secretArgs[name]
	args = make([]string, 0, min(len(views), MaxObservedArgs))
	for i, a := range views {
		if i == MaxObservedArgs {
			break
		}
		switch {
		case secret && i >= words:
			args = append(args, "?")
		case len(a) > MaxObservedArgBytes:
			args = append(args, string(a[:MaxObservedArgBytes])+"...")
		default:
			args = append(args, string(a))
		}
	}
	return len(views), args
}

// dialHooked returns the dial step of the transport for hooks' Dial fields: nil (netio dials
// itself) when none wraps dialing and Options.Dialer is unset.
func (o *Options) dialHooked() netio.DialFunc {
	base := dialFunc(o.Dialer)
	var wraps []func(DialFunc) DialFunc
	for _, h := range o.allHooks {
		if h.Dial != nil {
			wraps = append(wraps, h.Dial)
		}
	}
	if len(wraps) == 0 {
		return base
	}
	var next DialFunc
	if o.Dialer != nil {
		next = o.Dialer
	} else {
		// The built-in TCP or Unix dial with the keepalive and multipath settings, without TLS
		// (netio adds it above) and without a bound of its own (netio's context carries it).
		raw := netio.Dialer{ConnectTimeout: -1, KeepAlive: o.TCPKeepAlive, MultipathTCP: o.EnableMultipathTCP,
			MultipathFallback: o.multipathFallbackLog(), Resolver: o.Resolver}
		next = func(ctx context.Context, ep Endpoint) (net.Conn, error) { return raw.DialContext(ctx, ep.engine()) }
	}
	for i := len(wraps) - 1; i >= 0; i-- {
		next = wraps[i](next)
	}
	return func(ctx context.Context, ep engine.Endpoint) (net.Conn, error) {
		return next(ctx, endpointOf(ep))
	}
}
