package client

import (
	"context"
	"crypto/tls"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// Bounds of the Sentinel options.
const (
	// MaxSentinels bounds Options.Endpoints with SentinelPrimaryName: the configured Sentinels.
	// Up to fsm.MaxLearnedSentinels more are learned from SENTINEL SENTINELS.
	MaxSentinels = fsm.MaxSentinels
	// MaxSentinelPrimaryNameLen bounds Options.SentinelPrimaryName, in bytes.
	MaxSentinelPrimaryNameLen = fsm.MaxPrimaryNameLength
)

// Errors of Sentinel discovery, matched with errors.Is. A failed discovery wraps the last
// candidate's error, which may be one of these.
var (
	// ErrNotPrimary: the server a Sentinel named as primary, or a new data connection of a
	// Sentinel client, answered ROLE with another role (a replica after a failover). The
	// connection is not used, and the primary's generation retires.
	ErrNotPrimary = fsm.ErrNotPrimary
	// ErrStaleSentinel: a Sentinel named a primary under an older configuration epoch than the
	// one the client validated, or named another primary in the middle of a failover it leads;
	// following it would roll the client back.
	ErrStaleSentinel = fsm.ErrStaleSentinel
)

// IsSentinel reports whether the client discovers its primary through Redis Sentinel
// (Options.SentinelPrimaryName).
func (c *Client) IsSentinel() bool { return c.opts.SentinelPrimaryName != "" }

// validateSentinel checks the options of a Sentinel client: Endpoints are 1 to MaxSentinels
// distinct TCP Sentinels, and the primary's name is one Sentinel can announce.
func (o *Options) validateSentinel() error {
	name := o.SentinelPrimaryName
	switch {
	case len(name) > MaxSentinelPrimaryNameLen:
		return configErr("SentinelPrimaryName", "longer than MaxSentinelPrimaryNameLen ("+strconv.Itoa(MaxSentinelPrimaryNameLen)+" bytes)")
	case strings.IndexFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return configErr("SentinelPrimaryName", "must not contain spaces or control characters")
	case len(o.Endpoints) > MaxSentinels:
		return configErr("Endpoints", "a Sentinel client takes at most "+strconv.Itoa(MaxSentinels)+" Sentinels, got "+strconv.Itoa(len(o.Endpoints)))
	}
	for i, ep := range o.Endpoints {
		switch {
		case ep.Port == 0:
			return configErr("Endpoints", "Sentinel "+strconv.Itoa(i)+" is a Unix socket: Sentinels are TCP endpoints")
		case !validSeedHost(ep.Host):
			return configErr("Endpoints", "Sentinel "+strconv.Itoa(i)+" has a host that is neither an IP address nor a host name")
		}
		for _, prev := range o.Endpoints[:i] {
			if fsm.MakeEndpoint(prev.Host, prev.Port) == fsm.MakeEndpoint(ep.Host, ep.Port) {
				return configErr("Endpoints", "Sentinel "+strconv.Itoa(i)+" repeats an earlier one")
			}
		}
	}
	return nil
}

// sentinelEngineConfig is the engine's Sentinel configuration for resolved options, by the
// rule the simulator shares (config.SentinelConfig): discovery queries are bounded by the
// command timeout (DefaultSentinelQueryTimeout when disabled).
func (o *Options) sentinelEngineConfig() *engine.SentinelConfig {
	eps := make([]engine.Endpoint, len(o.Endpoints))
	for i, ep := range o.Endpoints {
		eps[i] = ep.engine()
	}
	return config.SentinelConfig(o.CommandTimeout, eps, o.SentinelPrimaryName)
}

// sentinelTransportConfig derives the configuration of the Sentinel connections from data, the
// data connections' one: RESP2, no database or library information; the Sentinel credentials
// (inherited from the data connections when none are set, none with SentinelDisableAuth); TLS
// per SentinelTLS; monitor messages to recv.
func (o *Options) sentinelTransportConfig(data netio.TransportConfig, recv engine.PubSubReceiver) netio.TransportConfig {
	t := data
	t.Handshake = netio.HandshakeConfig{Protocol: netio.ProtocolRESP2, ClientName: data.Handshake.ClientName}
	t.Credentials = nil
	switch {
	case o.SentinelDisableAuth:
	case o.SentinelUsername != "" || o.SentinelPassword != "":
		t.Handshake.Username, t.Handshake.Password = o.SentinelUsername, o.SentinelPassword
	default:
		t.Handshake.Username, t.Handshake.Password = data.Handshake.Username, data.Handshake.Password
		t.Credentials = data.Credentials
	}
	t.Dialer = netio.Dialer{
		ConnectTimeout:    o.ConnectTimeout,
		KeepAlive:         o.TCPKeepAlive,
		MultipathTCP:      o.EnableMultipathTCP,
		MultipathFallback: o.multipathFallbackLog(),
		Dial:              dialFunc(o.Dialer),
		TLS:               o.sentinelTLSConfig(),
		Resolver:          o.Resolver,
	}
	if t.Dialer.TLS != nil && o.CheckCertificateRevocation {
		t.Dialer = revocationDialer(t.Dialer)
	}
	t.PubSub = recv
	t.Push = nil
	return t
}

// sentinelTLSConfig is the TLS configuration of the Sentinel connections, or nil for plaintext:
// the data connections' (versions included) unless SentinelTLS says otherwise, verifying
// SentinelTLSServerName, else the Sentinel's host.
func (o *Options) sentinelTLSConfig() *tls.Config {
	var c *tls.Config
	switch o.SentinelTLS {
	case SentinelTLSDisabled:
		return nil
	case SentinelTLSEnabled:
		if c = o.buildTLSConfig(); c == nil {
			c = &tls.Config{MinVersion: tls.VersionTLS12}
			if o.TLSMinVersion != 0 {
				c.MinVersion = o.TLSMinVersion
			}
			c.MaxVersion = o.TLSMaxVersion
		}
	default:
		if c = o.buildTLSConfig(); c == nil {
			return nil
		}
	}
	// The data connections' server name names the data nodes, not the Sentinels.
	c.ServerName = o.SentinelTLSServerName
	return c
}

// sentinelTransport opens the Sentinel connections with their own transport and every other
// connection with the data one.
type sentinelTransport struct {
	data, sentinel engine.Transport
	// roleBudget bounds the ROLE check of a new data connection (zero: none beyond the
	// attempt's context).
	roleBudget time.Duration
}

// Open implements engine.Transport. A data connection is checked with ROLE before the engine
// gets it (roleCheck); the resolution's connection to a reported primary runs its own ROLE
// query.
func (t sentinelTransport) Open(ctx context.Context, req engine.OpenRequest) {
	switch {
	case req.Sentinel:
		t.sentinel.Open(ctx, req)
	case req.Machine == fsm.MachineSentinel:
		t.data.Open(ctx, req)
	default:
		req.Sink = &roleCheck{ctx: ctx, inner: req.Sink, budget: t.roleBudget}
		t.data.Open(ctx, req)
	}
}

// roleCheck is the Sink of a Sentinel client's data connection: a connection that became ready
// is reported Ready only once it answered ROLE as a primary. Any other answer (a replica, a
// refusal, a malformed reply), no answer within the budget, or the attempt's cancellation
// closes it and reports Failed: a replica is transient (the generation retires and the
// primary is found again), a refused ROLE permanent.
type roleCheck struct {
	ctx    context.Context
	inner  engine.Sink
	budget time.Duration
	mu     sync.Mutex
	// state: 0 checking, 1 reported ready, 2 reported failed.
	state int
}

// Dialed implements engine.Sink.
func (s *roleCheck) Dialed(id fsm.ConnID) { s.inner.Dialed(id) }

// Failed implements engine.Sink.
func (s *roleCheck) Failed(id fsm.ConnID, err error, class fsm.FailureClass) {
	if s.settle(2) {
		s.inner.Failed(id, err, class)
	}
}

// Lost implements engine.Sink: a loss during the check completes the ROLE query with an error,
// which reports the failure; only a connection reported ready reports a loss.
func (s *roleCheck) Lost(id fsm.ConnID, err error) {
	s.mu.Lock()
	ready := s.state == 1
	s.mu.Unlock()
	if ready {
		s.inner.Lost(id, err)
	}
}

// settle moves the check from checking to to, and reports whether it did.
func (s *roleCheck) settle(to int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != 0 {
		return false
	}
	s.state = to
	return true
}

// Ready implements engine.Sink: it sends ROLE on conn.
func (s *roleCheck) Ready(id fsm.ConnID, conn engine.Conn) {
	fail := func(err error, class fsm.FailureClass) {
		if s.settle(2) {
			// Close must not run inside a command's completion.
			go conn.Close()
			s.inner.Failed(id, err, class)
		}
	}
	var stop func() bool
	cmd := &engine.Command{Name: "ROLE", Frame: roleFrame}
	cmd.Done = func(cmd *engine.Command) {
		if stop != nil {
			stop()
		}
		if cmd.Err != nil {
			fail(cmd.Err, fsm.Transient)
			return
		}
		r, err := topo.ParseRole(cmd.Reply)
		switch {
		case err != nil:
			fail(err, fsm.Permanent)
		case r.Role != fsm.RolePrimary:
			fail(ErrNotPrimary, fsm.Transient)
		default:
			if s.settle(1) {
				s.inner.Ready(id, conn)
			}
		}
	}
	if s.budget > 0 {
		t := time.AfterFunc(s.budget, func() { fail(errRoleTimeout, fsm.Transient) })
		stop = t.Stop
	}
	context.AfterFunc(s.ctx, func() { fail(s.ctx.Err(), fsm.Transient) })
	cmd.Enqueued()
	conn.Send(cmd)
}

// roleFrame is the encoded ROLE command.
var roleFrame = resp.AppendCommand(nil, "ROLE")

// errRoleTimeout: a new data connection did not answer ROLE within the command timeout.
var errRoleTimeout = errors.New("respire: the new connection did not answer ROLE in time")

// sentinelWarn logs a warning of the Sentinel machines, with the endpoint it is about.
func (c *Client) sentinelWarn(w fsm.Warning, about engine.Endpoint) {
	l := c.opts.Logger
	if l == nil {
		return
	}
	var msg string
	switch w {
	case fsm.WarningNoConfigEpoch:
		msg = "respire: SENTINEL MASTER is not permitted: discovery cannot read configuration epochs and relies on ROLE alone; grant SENTINEL MASTER to the Sentinel user"
	case fsm.WarningMonitorExhausted:
		msg = "respire: a Sentinel event monitor reached its reconnect limit and stopped until the next validated primary"
	case fsm.WarningMonitorDisposal:
		msg = "respire: disposal stopped waiting for the Sentinel event monitors"
	default:
		msg = "respire: Sentinel warning"
	}
	attrs := []any{"warning", w.String()}
	if about != (engine.Endpoint{}) {
		attrs = append(attrs, "endpoint", about.String())
	}
	l.Warn(msg, attrs...)
}

// noteReadOnly retires a Sentinel client's primary generation when a reply says the server is
// a replica now (READONLY): the next operation rediscovers the primary.
func (c *Client) noteReadOnly(v *resp.Value) {
	if c.opts.SentinelPrimaryName == "" || !v.IsError() {
		return
	}
	if strings.HasPrefix(v.ErrorMessage(), "READONLY") {
		c.eng.PrimaryReadOnly()
	}
}
