package netio

import (
	"context"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// DefaultHandshakeTimeout bounds the Redis handshake of a connection when
// TransportConfig.HandshakeTimeout is zero (the spec's CommandTimeout default).
const DefaultHandshakeTimeout = 10 * time.Second

// TransportConfig configures a Transport. Its zero value connects over TCP or Unix sockets with the
// default timeouts, negotiates the protocol automatically and sends no credentials.
type TransportConfig struct {
	// Dialer opens the transport connections (TCP, Unix, custom hook, TLS).
	Dialer Dialer
	// Handshake is the setup every new connection performs before it is ready.
	Handshake HandshakeConfig
	// HandshakeTimeout bounds the Redis handshake after the dial (the command timeout). Zero means
	// DefaultHandshakeTimeout; negative means no bound beyond the attempt's context.
	HandshakeTimeout time.Duration
	// Push receives the RESP3 pushes of every connection, on the connection's reader goroutine;
	// nil drops them. The value lives in the connection's storage only until Push returns: Clone
	// what you keep. Push must not block.
	Push func(resp.Value)
	// Limits bounds what the connections accept from servers; nil means resp's defaults.
	Limits *resp.Limits
	// PubSub receives what pub/sub connections (OpenRequest.Machine MachinePubSub or
	// MachineShardedPubSub, served by a SubConn) read: acknowledgements, refusals and messages,
	// on the connection's reader goroutine. Nil drops them.
	PubSub engine.PubSubReceiver
	// Credentials, when set, supplies the username and password of each connection attempt's
	// handshake, replacing Handshake.Username and Handshake.Password: it is called once per
	// attempt, with the attempt's context bounded by the handshake budget. An error fails the
	// attempt (a transient *CredentialError). It must be safe for concurrent use.
	Credentials func(ctx context.Context) (username, password string, err error)
	// IdleReadTimeout, when positive, aborts a ready connection that has replies pending and
	// receives no byte for this long (the spec's ConnectionIdleReadTimeout). Zero disables it.
	IdleReadTimeout time.Duration
	// WriteStallTimeout, when positive, aborts a ready connection whose write makes no progress
	// for this long (the spec's GatheredWriteStallTimeout, already resolved). Zero disables it.
	WriteStallTimeout time.Duration
	// Maintenance bounds the relaxation of a connection whose handshake enabled maintenance
	// notifications (Handshake.Maintenance); zero fields take fsm's defaults (30 s and 60 s).
	Maintenance fsm.MaintConfig
}

// String describes the configuration without credentials.
func (c TransportConfig) String() string {
	return "netio.TransportConfig{handshake: " + c.Handshake.String() + "}"
}

// GoString makes %#v print the redacted form too.
func (c TransportConfig) GoString() string { return c.String() }

// handshakeTimeout resolves HandshakeTimeout: zero is the default, negative none (0).
func (c *TransportConfig) handshakeTimeout() time.Duration {
	switch {
	case c.HandshakeTimeout == 0:
		return DefaultHandshakeTimeout
	case c.HandshakeTimeout < 0:
		return 0
	}
	return c.HandshakeTimeout
}

// Transport opens real connections for the engine: dial (TCP, Unix, custom hook, then TLS), the
// Redis handshake, then a pipelined Conn. It is mechanism only: one Open is one attempt, with no
// retry, no backoff and no timer beyond I/O deadlines. A Transport is safe for concurrent use.
type Transport struct {
	cfg TransportConfig
}

var _ engine.Transport = (*Transport)(nil)

// NewTransport returns a transport with the given configuration.
func NewTransport(cfg TransportConfig) *Transport {
	return &Transport{cfg: cfg}
}

// String describes the transport without credentials.
func (t *Transport) String() string {
	return "netio.Transport{handshake: " + t.cfg.Handshake.String() + "}"
}

// Open starts one connection attempt on its own goroutine and returns at once. The attempt
// reports to req.Sink: Dialed once the transport connection (and TLS) is up, then exactly one of
// Ready, with a *Conn, or Failed, with a *ConnectError and its Classify class. Sink methods may
// call the connection's methods, Close included; Lost never precedes the return of Ready.
//
// Cancelling ctx aborts the attempt promptly (the socket is closed) and fails it with an error
// wrapping ctx's error. Once Ready was reported, ctx no longer matters.
func (t *Transport) Open(ctx context.Context, req engine.OpenRequest) {
	if req.Sink == nil {
		panic("netio: OpenRequest.Sink is nil")
	}
	go t.attempt(ctx, &req)
}

// attempt runs one connection attempt and, when it succeeds, starts the connection.
func (t *Transport) attempt(ctx context.Context, req *engine.OpenRequest) {
	nc, err := t.cfg.Dialer.dial(ctx, req.Endpoint, req.Conn)
	if err != nil {
		req.Sink.Failed(req.Conn, err, Classify(err))
		return
	}
	req.Sink.Dialed(req.Conn)
	c := newConn(nc, req, &t.cfg)
	if err := t.handshake(ctx, c); err != nil {
		_ = nc.Close()
		req.Sink.Failed(req.Conn, err, Classify(err))
		return
	}
	if isSubscriber(req.Machine) {
		t.startSubscriber(c, req)
		return
	}
	c.start()
	req.Sink.Ready(req.Conn, c)
	c.announce()
}

// pastDeadline unblocks pending I/O at once.
var pastDeadline = time.Unix(1, 0)

// handshake runs the Redis handshake on c within the handshake budget, aborting when ctx ends.
func (t *Transport) handshake(ctx context.Context, c *Conn) error {
	budget := t.cfg.handshakeTimeout()
	if budget > 0 {
		if err := c.nc.SetDeadline(time.Now().Add(budget)); err != nil {
			return t.handshakeError(ctx, c, err, budget)
		}
	}
	cfg, err := t.withCredentials(ctx, budget)
	if err != nil {
		return t.handshakeError(ctx, c, err, budget)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(pastDeadline) })
	err = c.handshake(cfg)
	if !stop() && err == nil {
		// Cancelled just as the handshake finished: the attempt is over all the same.
		err = ctx.Err()
	}
	if err == nil && budget > 0 {
		err = c.nc.SetDeadline(time.Time{})
	}
	if err != nil {
		return t.handshakeError(ctx, c, err, budget)
	}
	return nil
}

// handshakeError wraps a handshake failure, with cancellation winning over the I/O error it caused.
func (t *Transport) handshakeError(ctx context.Context, c *Conn, err error, budget time.Duration) error {
	e := &ConnectError{Endpoint: c.ep, Conn: c.id, Stage: StageHandshake, Err: err}
	switch {
	case ctx.Err() != nil:
		e.Err = ctx.Err()
	case isTimeout(err):
		e.TimedOut = true
		e.Budget = budget
	}
	return e
}

// handshake drives the pure handshake machine over the socket: each batch is written at once and
// its announced replies are judged in order, stopping at the first error.
func (c *Conn) handshake(cfg *TransportConfig) error {
	hs := cfg.Handshake
	hs.ReadOnly = hs.ReadOnly || c.readOnly
	h := NewHandshake(hs)
	defer func() {
		// The frames held the password: do not leave it in the reused write buffer.
		clear(c.buf[:cap(c.buf)])
		c.buf = c.buf[:0]
	}()
	for {
		var n int
		if c.buf, n = h.Next(c.buf[:0]); n == 0 {
			break
		}
		if _, err := c.nc.Write(c.buf); err != nil {
			return err
		}
		for !h.Answered() {
			if err := c.rd.Read(&c.scratch); err != nil {
				return err
			}
			if c.scratch.Kind == resp.KindPush {
				if c.push != nil {
					c.push(c.scratch)
				}
				continue
			}
			if err := h.Reply(&c.scratch); err != nil {
				return err
			}
		}
	}
	c.proto = h.Protocol()
	c.recordIdentity(h)
	if h.MaintEnabled() {
		c.relax = engine.NewRelax(cfg.Maintenance)
	}
	return nil
}
