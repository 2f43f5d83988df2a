package client

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// Credentials are a username and a password. An empty Username means Redis's default user.
// Printing them (fmt's verbs, slog) shows the username and never the password.
type Credentials struct {
	Username string
	Password string
}

// String returns "user=<name> password=[redacted]" ("user=default" for an empty username).
func (c Credentials) String() string {
	user := c.Username
	if user == "" {
		user = "default"
	}
	pw := "none"
	if c.Password != "" {
		pw = "[redacted]"
	}
	return "user=" + user + " password=" + pw
}

// GoString makes %#v print the redacted form too.
func (c Credentials) GoString() string { return "client.Credentials{" + c.String() + "}" }

// Format makes every fmt verb, flag and width print the redacted form (%+v included).
func (c Credentials) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		formatRedacted(f, verb, c.GoString())
		return
	}
	formatRedacted(f, verb, c.String())
}

// LogValue makes slog log the redacted form.
func (c Credentials) LogValue() slog.Value { return slog.StringValue(c.String()) }

// MarshalJSON encodes the username and, when a password is set, "[redacted]" in its place.
func (c Credentials) MarshalJSON() ([]byte, error) {
	password := ""
	if c.Password != "" {
		password = redacted
	}
	return json.Marshal(struct {
		Username string `json:"username,omitempty"`
		Password string `json:"password,omitempty"`
	}{c.Username, password})
}

// CredentialProvider supplies a client's credentials when they change over time: a password that
// a secret manager rotates, a short-lived token. Set it as Options.Credentials instead of
// Username and Password.
//
// respire asks it for the handshake of every new connection (with the attempt's context, bounded
// by CommandTimeout), so new connections always authenticate with the current credentials, and
// again for each renewal, when it re-authenticates the live connections with AUTH (see
// Client.RenewCredentials and CredentialNotifier). An error fails that connection attempt (a
// transient failure, retried under the reconnect policy) or that renewal. The provider belongs to
// the caller: respire never closes it. It must be safe for concurrent use, return promptly, and
// keep secrets out of its errors, which respire reports as they are.
type CredentialProvider interface {
	Credentials(ctx context.Context) (Credentials, error)
}

// CredentialNotifier is implemented by providers that know when their credentials change. Every
// client created with such a provider registers a callback when it is created and unregisters it
// when it is closed; the provider calls the callback after each change, from any goroutine, and
// the client then renews its live connections in the background (as RenewCredentials does, with
// CommandTimeout as the deadline, and logging failures). The callback never blocks: renewals
// signalled while one runs are coalesced into one more.
type CredentialNotifier interface {
	CredentialProvider
	// NotifyRenewal registers renewed and returns the function that unregisters it.
	NotifyRenewal(renewed func()) (stop func())
}

// CredentialSource is a ready-made CredentialProvider and CredentialNotifier holding credentials
// in memory: Set replaces them and notifies every client using the source, which re-authenticates
// its connections. Share one source between clients. Its zero value holds no credentials.
type CredentialSource struct {
	mu        sync.Mutex
	current   Credentials
	listeners map[uint64]func()
	next      uint64
}

// NewCredentialSource returns a source holding creds.
func NewCredentialSource(creds Credentials) *CredentialSource {
	return &CredentialSource{current: creds}
}

// Credentials implements CredentialProvider.
func (s *CredentialSource) Credentials(context.Context) (Credentials, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current, nil
}

// Set replaces the credentials and notifies the registered clients.
func (s *CredentialSource) Set(creds Credentials) {
	s.mu.Lock()
	s.current = creds
	listeners := make([]func(), 0, len(s.listeners))
	for _, fn := range s.listeners {
		listeners = append(listeners, fn)
	}
	s.mu.Unlock()
	for _, fn := range listeners {
		fn()
	}
}

// NotifyRenewal implements CredentialNotifier.
func (s *CredentialSource) NotifyRenewal(renewed func()) (stop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listeners == nil {
		s.listeners = make(map[uint64]func())
	}
	s.next++
	id := s.next
	s.listeners[id] = renewed
	return func() {
		s.mu.Lock()
		delete(s.listeners, id)
		s.mu.Unlock()
	}
}

// String redacts the credentials.
func (s *CredentialSource) String() string {
	if s == nil {
		return "client.CredentialSource(nil)"
	}
	return "client.CredentialSource{" + s.snapshot().String() + "}"
}

// GoString redacts the credentials.
func (s *CredentialSource) GoString() string { return s.String() }

// Format makes every fmt verb, flag and width print the redacted form.
func (s *CredentialSource) Format(f fmt.State, verb rune) { formatRedacted(f, verb, s.String()) }

// LogValue makes slog log the redacted form.
func (s *CredentialSource) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON encodes the current credentials as Credentials does: the password redacted.
func (s *CredentialSource) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	return s.snapshot().MarshalJSON()
}

// snapshot returns the current credentials.
func (s *CredentialSource) snapshot() Credentials {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

// ErrNoCredentialProvider is returned by RenewCredentials for a client without
// Options.Credentials.
var ErrNoCredentialProvider = sentinel("respire: no credential provider: set Options.Credentials")

// CredentialRenewalError reports a failed credential renewal: one connection whose AUTH failed,
// or (Conn zero) a renewal that left no connection authenticated with the new credentials: the
// provider failed, or no connection was ready and a new one could not authenticate. When the
// server rejected the new credentials (WRONGPASS, NOPERM) the connection was closed and is
// replaced; a new connection authenticates with the provider's credentials during its handshake.
// It never contains the credentials.
type CredentialRenewalError struct {
	// Endpoint is the connection's destination.
	Endpoint Endpoint
	// Conn is the connection's process-local id, or 0 when the failure concerns no single live
	// connection.
	Conn uint64
	// Err is the server's rejection (a *ServerError), the connection's failure (for a new
	// connection, the error Connect would return, which errors.As also reaches a *ServerError
	// through), or the provider's error.
	Err error
}

// Error implements error.
func (e *CredentialRenewalError) Error() string { return "respire: " + e.text(true) }

// text describes the failure, naming the endpoint when withEndpoint.
func (e *CredentialRenewalError) text(withEndpoint bool) string {
	msg := "renewing the credentials"
	if e.Conn != 0 {
		msg += " of connection " + fsm.ConnID(e.Conn).String()
	}
	if withEndpoint {
		if e.Conn != 0 {
			msg += " to " + e.Endpoint.String()
		} else {
			msg += " for " + e.Endpoint.String()
		}
	}
	return msg + ": " + causeText(e.Err)
}

// Unwrap returns the cause.
func (e *CredentialRenewalError) Unwrap() error { return e.Err }

// renewalRejects are the AUTH error codes that condemn a connection: its session can no longer
// be trusted to carry the intended identity.
var renewalRejects = map[string]bool{"WRONGPASS": true, "NOPERM": true}

// RenewCredentials re-authenticates every ready command connection with the provider's current
// credentials: it asks Options.Credentials once, queues AUTH on each connection (after the
// commands already sent on it) and waits for every reply or ctx. When no connection was ready, it
// waits instead for a new connection, which authenticates with the provider's credentials in its
// handshake (under the reconnect policy, within ctx). So nil means that the client holds a
// connection authenticated with the current credentials.
//
// Otherwise it returns the failures joined, each a *CredentialRenewalError (errors.As reaches
// the *ServerError of a rejection such as WRONGPASS); ErrClosed after Close; or ctx's error. A
// connection whose AUTH is rejected with WRONGPASS or NOPERM is closed and replaced, and its
// replacement authenticates with the provider's credentials in its handshake. Connections being
// established ask the provider themselves when their attempt starts; one whose attempt started
// before the change keeps the credentials it got until the next renewal.
//
// Dedicated and pub/sub connections keep the session they authenticated when created (Redis
// keeps an authenticated connection's identity when its password changes) and authenticate with
// the current credentials when they are replaced.
func (c *Client) RenewCredentials(ctx context.Context) error {
	if c.opts.Credentials == nil {
		return ErrNoCredentialProvider
	}
	if c.closed.Load() {
		return ErrClosed
	}
	creds, err := c.opts.Credentials.Credentials(ctx)
	if err != nil {
		return &CredentialRenewalError{Endpoint: c.ep, Err: errors.Wrap(err, "credential provider failed")}
	}
	sent, err := c.renewReady(ctx, creds)
	if err != nil || sent > 0 {
		return err
	}
	// No connection was ready. A new one authenticates in its handshake with the credentials the
	// provider gives when its attempt starts, which may predate creds: once it is ready, it is
	// renewed like the others.
	if err := c.authenticateNew(ctx); err != nil {
		return err
	}
	sent, err = c.renewReady(ctx, creds)
	if err == nil && sent == 0 {
		err = &CredentialRenewalError{Endpoint: c.ep, Err: errNoReadyConnection}
	}
	return err
}

// errNoReadyConnection: the connection a renewal waited for was lost before it could be renewed.
var errNoReadyConnection = errors.New("the new connection was lost before its renewal")

// renewReady sends AUTH with creds on every ready command connection and waits for the replies.
// It returns how many connections it renewed and their failures joined.
func (c *Client) renewReady(ctx context.Context, creds Credentials) (int, error) {
	r := &renewal{client: c, password: creds.Password, all: make(chan struct{})}
	r.pending.Store(1) // the listing's reference, released once every connection was listed
	args := []string{"AUTH", creds.Password}
	if creds.Username != "" {
		args = []string{"AUTH", creds.Username, creds.Password}
	}
	r.frame = resp.AppendCommand(nil, args...)
	listed := make(chan struct{})
	sent := 0 // written on the loop before listed closes
	c.eng.ForEachConn(func(m fsm.Machine, id fsm.ConnID, conn engine.Conn) {
		if m != fsm.MachineMux {
			return
		}
		sent++
		r.send(id, conn)
	}, func() {
		r.release()
		close(listed)
	})
	select {
	case <-listed:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case <-r.all:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return sent, errors.Join(r.errs...)
}

// authenticateNew waits for a ready command connection when a renewal found none: a new one
// authenticates with the provider's current credentials, so its failure is the renewal's.
func (c *Client) authenticateNew(ctx context.Context) error {
	answer := make(chan engine.Grant, 1)
	id := c.eng.Acquire(fsm.NeedAny, func(g engine.Grant) { answer <- g })
	select {
	case g := <-answer:
		if g.Outcome == fsm.OutcomeClosed {
			return ErrClosed
		}
		if err := c.grantErr(g); err != nil {
			return &CredentialRenewalError{Endpoint: c.ep, Err: err}
		}
		return nil
	case <-ctx.Done():
		c.eng.Release(id)
		return ctx.Err()
	}
}

// renewal is one RenewCredentials run: an AUTH on each listed connection.
type renewal struct {
	client   *Client
	frame    []byte
	password string
	// pending counts the AUTHs not yet completed, plus one for the listing; the last one closes
	// all and wipes the frame, which holds the password.
	pending atomic.Int64
	once    sync.Once
	all     chan struct{}
	mu      sync.Mutex
	errs    []error
}

// send queues AUTH on conn. It runs on the engine's loop.
func (r *renewal) send(id fsm.ConnID, conn engine.Conn) {
	r.pending.Add(1)
	cmd := &engine.Command{Name: "AUTH", Frame: r.frame}
	cmd.Done = func(cmd *engine.Command) { r.completed(id, cmd) }
	cmd.Reset()
	if cmd.Enqueued() {
		conn.Send(cmd)
	}
}

// completed judges one AUTH reply. It runs on the connection's reader goroutine: it must not
// block, and it condemns a rejected connection by posting to the engine.
func (r *renewal) completed(id fsm.ConnID, cmd *engine.Command) {
	c := r.client
	var failure error
	switch {
	case cmd.Err != nil:
		failure = cmd.Err
	case cmd.Reply.IsError():
		se := serverError(&cmd.Reply, "AUTH", c.ep, r.password)
		failure = se
		if renewalRejects[se.Code] {
			c.eng.Abort(id, &CredentialRenewalError{Endpoint: c.ep, Conn: uint64(id), Err: se})
		}
	}
	if failure != nil {
		err := &CredentialRenewalError{Endpoint: c.ep, Conn: uint64(id), Err: failure}
		r.mu.Lock()
		r.errs = append(r.errs, err)
		r.mu.Unlock()
	}
	r.release()
}

// release drops one reference; the last wipes the password from the frame and signals all.
func (r *renewal) release() {
	if r.pending.Add(-1) == 0 {
		r.once.Do(func() {
			clear(r.frame)
			close(r.all)
		})
	}
}

// renewer runs a client's background renewals for a CredentialNotifier provider.
type renewer struct {
	client *Client
	signal chan struct{}
	stop   func()
	done   chan struct{}
	quit   chan struct{}
}

// startRenewer registers with the provider when it notifies renewals; it returns nil otherwise.
func startRenewer(c *Client) *renewer {
	n, ok := c.opts.Credentials.(CredentialNotifier)
	if !ok {
		return nil
	}
	r := &renewer{client: c, signal: make(chan struct{}, 1), done: make(chan struct{}), quit: make(chan struct{})}
	go r.loop()
	r.stop = n.NotifyRenewal(func() {
		select {
		case r.signal <- struct{}{}:
		default: // a renewal is already due: it will read the newest credentials
		}
	})
	return r
}

func (r *renewer) loop() {
	defer close(r.done)
	for {
		select {
		case <-r.quit:
			return
		case <-r.signal:
		}
		c := r.client
		budget := c.opts.CommandTimeout
		if budget <= 0 {
			budget = DefaultCommandTimeout
		}
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		go func() {
			select {
			case <-r.quit:
				cancel()
			case <-ctx.Done():
			}
		}()
		start := time.Now()
		err := c.RenewCredentials(ctx)
		cancel()
		if l := c.opts.Logger; l != nil {
			if err != nil {
				l.Warn("respire: credential renewal failed", "event", "CredentialRenewalFailed",
					"endpoint", c.ep.String(), "error", err.Error())
			} else {
				l.Info("respire: credentials renewed", "event", "CredentialsRenewed",
					"endpoint", c.ep.String(), "duration", time.Since(start))
			}
		}
	}
}

// close unregisters from the provider and waits for a renewal in progress to end.
func (r *renewer) close() {
	if r == nil {
		return
	}
	r.stop()
	close(r.quit)
	<-r.done
}
