package netio

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
)

// DefaultConnectTimeout bounds each connection attempt's dial and TLS handshake when
// Dialer.ConnectTimeout is zero.
const DefaultConnectTimeout = 10 * time.Second

// DialFunc opens a transport connection to ep: the Go form of a custom connection factory. It is
// called for every new physical connection (initial connections, reconnects, discovered nodes),
// possibly concurrently, and must return a fresh, write-through connection that supports a
// concurrent Read and Write and whose Close unblocks both. Unix endpoints have their socket path
// in ep.Host and Port 0.
//
// ctx combines the attempt's cancellation with the connect timeout: observe it throughout DNS,
// connect and tunnel negotiation. A connection returned after ctx is done is closed and the
// attempt fails. On error the function must release whatever it created. The Dialer's keepalive,
// no-delay and multipath settings do not apply to connections it returns; Dialer.TLS does.
type DialFunc func(ctx context.Context, ep engine.Endpoint) (net.Conn, error)

// Dialer opens transport connections: TCP (optionally Multipath TCP), Unix sockets or a custom
// DialFunc, followed by TLS when configured. Its zero value dials with the defaults. A Dialer
// never retries: one call is one attempt.
type Dialer struct {
	// ConnectTimeout bounds the dial and the TLS handshake of one attempt (the Redis handshake
	// has its own budget). Zero means DefaultConnectTimeout; negative means no bound beyond the
	// caller's context.
	ConnectTimeout time.Duration
	// KeepAlive is the TCP keepalive period. Zero means Go's default (15 s); negative disables
	// keepalive probes.
	KeepAlive time.Duration
	// DisableNoDelay turns TCP_NODELAY off. It is on by default: respire coalesces writes itself.
	DisableNoDelay bool
	// MultipathTCP requests Multipath TCP (IPPROTO_MPTCP, through net.Dialer.SetMultipathTCP) for
	// built-in TCP dials. Where the kernel or the platform lacks MPTCP the dial uses ordinary TCP
	// and MultipathFallback is called. A peer that does not negotiate MPTCP is not a fallback:
	// the kernel carries on over one TCP path, silently. Unix sockets and Dial ignore it.
	MultipathTCP bool
	// MultipathFallback, when set, is called before each built-in TCP dial with MultipathTCP that
	// uses ordinary TCP because MPTCP is unavailable here (see MultipathTCPAvailable). It must
	// not block. Never called for Unix sockets, for Dial, or without MultipathTCP.
	MultipathFallback func()
	// Dial, when set, replaces the built-in TCP and Unix dialing for every connection.
	Dial DialFunc
	// TLS, when set, wraps every connection (including those from Dial) in a TLS client whose
	// handshake runs within ConnectTimeout. When it names no ServerName and does not skip
	// verification, the endpoint's host is used (the configured name, never a resolved address).
	TLS *tls.Config
	// Resolver, when set, looks up the host names of built-in TCP dials instead of
	// net.DefaultResolver. Every dial resolves anew (engine.DialAddresses), so a name that moves
	// to another address is followed on the next connection; the addresses are tried in the
	// order answered, each within a share of the remaining budget. IP literals, Unix sockets and
	// Dial are never looked up.
	Resolver engine.Resolver
}

// connectTimeout resolves ConnectTimeout: zero is the default, negative none (0).
func (d *Dialer) connectTimeout() time.Duration {
	switch {
	case d.ConnectTimeout == 0:
		return DefaultConnectTimeout
	case d.ConnectTimeout < 0:
		return 0
	}
	return d.ConnectTimeout
}

// DialContext opens a connection to ep, including TLS when configured, within ConnectTimeout. It
// fails with a *ConnectError (stage dial or tls) whose cause wraps ctx's error when ctx ended
// first.
func (d *Dialer) DialContext(ctx context.Context, ep engine.Endpoint) (net.Conn, error) {
	return d.dial(ctx, ep, 0)
}

// dial is DialContext for the connection id.
func (d *Dialer) dial(ctx context.Context, ep engine.Endpoint, id fsm.ConnID) (net.Conn, error) {
	budget := d.connectTimeout()
	dctx := ctx
	if budget > 0 {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}
	fail := func(stage ConnectStage, err error) error {
		e := &ConnectError{Endpoint: ep, Conn: id, Stage: stage, Err: err}
		switch {
		case ctx.Err() != nil:
			// Caller cancellation wins over the timeout and over the I/O error it caused.
			e.Err = ctx.Err()
		case dctx.Err() != nil || isTimeout(err):
			e.TimedOut = true
			e.Budget = budget
		}
		return e
	}
	nc, err := d.open(dctx, ep)
	if err != nil {
		return nil, fail(StageDial, err)
	}
	if dctx.Err() != nil {
		// The hook returned after the attempt ended: the late connection is ours to close.
		_ = nc.Close()
		return nil, fail(StageDial, dctx.Err())
	}
	if d.TLS == nil {
		return nc, nil
	}
	tc := tls.Client(nc, d.tlsConfig(ep))
	if err := tc.HandshakeContext(dctx); err != nil {
		_ = nc.Close()
		return nil, fail(StageTLS, err)
	}
	return tc, nil
}

// open runs the dial hook or the built-in dialer.
func (d *Dialer) open(ctx context.Context, ep engine.Endpoint) (net.Conn, error) {
	if d.Dial != nil {
		nc, err := d.Dial(ctx, ep)
		if err != nil {
			if nc != nil {
				_ = nc.Close()
			}
			return nil, err
		}
		if nc == nil {
			return nil, errNoConn
		}
		return nc, nil
	}
	nd := net.Dialer{KeepAlive: d.KeepAlive}
	if ep.IsUnix() {
		return nd.DialContext(ctx, "unix", ep.Host)
	}
	switch planMultipath(d.MultipathTCP, MultipathTCPAvailable) {
	case multipathOn:
		nd.SetMultipathTCP(true)
	case multipathFallback:
		if d.MultipathFallback != nil {
			d.MultipathFallback()
		}
	}
	var r engine.Resolver = net.DefaultResolver
	if d.Resolver != nil {
		r = d.Resolver
	}
	addrs, err := engine.DialAddresses(ctx, r, ep)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
	}
	nc, err := dialSerial(ctx, &nd, addrs)
	if err != nil {
		return nil, err
	}
	if d.DisableNoDelay {
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(false)
		}
	}
	return nc, nil
}

// minAddrBudget is the least share of the remaining budget one address of several gets, as Go's
// own dialer gives: a black-holed first address must not starve the others, nor a long list
// leave each too little to connect.
const minAddrBudget = 2 * time.Second

// dialSerial connects to the first of addrs that accepts, trying them in order. With a deadline
// each address but the last gets an equal share of what remains (at least minAddrBudget, never
// past the deadline). It returns the first address's error when all fail.
func dialSerial(ctx context.Context, nd *net.Dialer, addrs []string) (net.Conn, error) {
	var first error
	for i, a := range addrs {
		actx := ctx
		if dl, ok := ctx.Deadline(); ok && i < len(addrs)-1 {
			share := time.Until(dl) / time.Duration(len(addrs)-i)
			if share < minAddrBudget {
				share = minAddrBudget
			}
			if at := time.Now().Add(share); at.Before(dl) {
				var cancel context.CancelFunc
				actx, cancel = context.WithDeadline(ctx, at)
				defer cancel()
			}
		}
		nc, err := nd.DialContext(actx, "tcp", a)
		if err == nil {
			return nc, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

// errNoConn reports a dial hook that returned neither a connection nor an error.
var errNoConn = errors.New("respire: dial hook returned no connection")

// tlsConfig returns the TLS configuration for ep, naming the endpoint's host when the
// configuration names no server and verifies certificates.
func (d *Dialer) tlsConfig(ep engine.Endpoint) *tls.Config {
	if d.TLS.ServerName != "" || d.TLS.InsecureSkipVerify || ep.IsUnix() {
		return d.TLS
	}
	c := d.TLS.Clone()
	c.ServerName = ep.Host
	return c
}

// isTimeout reports whether err is an I/O timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
