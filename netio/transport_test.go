package netio_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// clientInfo returns the connection's CLIENT INFO line.
func clientInfo(t testing.TB, conn *netio.Conn) string {
	t.Helper()
	v := do(t, conn, "CLIENT", "INFO")
	if v.Kind != resp.KindBulkString && v.Kind != resp.KindVerbatimString {
		t.Fatalf("CLIENT INFO replied %v", v)
	}
	return string(v.Str)
}

func TestProtocols(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	ep := tcp(t, srv.Addr())
	cases := []struct {
		proto    netio.Protocol
		want     int
		hashKind resp.Kind
	}{
		{netio.ProtocolAuto, 3, resp.KindMap},
		{netio.ProtocolRESP3, 3, resp.KindMap},
		{netio.ProtocolRESP2, 2, resp.KindArray},
	}
	do(t, mustConnectDefault(t, ep), "HSET", "proto:h", "f", "v")
	for _, c := range cases {
		t.Run(c.proto.String(), func(t *testing.T) {
			tr := netio.NewTransport(netio.TransportConfig{Handshake: netio.HandshakeConfig{
				Protocol: c.proto, ClientName: "proto-" + c.proto.String(), Database: 3,
			}})
			conn, _ := mustConnect(t, tr, ep)
			if conn.Protocol() != c.want {
				t.Fatalf("Protocol() = %d, want %d", conn.Protocol(), c.want)
			}
			info := clientInfo(t, conn)
			for _, want := range []string{"resp=" + string(rune('0'+c.want)), "name=proto-" + c.proto.String(), "db=3"} {
				if !strings.Contains(info, want) {
					t.Fatalf("CLIENT INFO %q lacks %q", info, want)
				}
			}
			do(t, conn, "SELECT", "0")
			if v := do(t, conn, "HGETALL", "proto:h"); v.Kind != c.hashKind {
				t.Fatalf("HGETALL replied %v, want a %v", v, c.hashKind)
			}
		})
	}
}

// mustConnectDefault connects with the default transport.
func mustConnectDefault(t testing.TB, ep engine.Endpoint) *netio.Conn {
	t.Helper()
	conn, _ := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), ep)
	return conn
}

func TestHelloFallbackWhenHelloIsUnknown(t *testing.T) {
	const pw = "fallback-secret-91"
	srv := redistest.Start(t, redistest.Config{Password: pw, Extra: []string{`rename-command HELLO ""`}})
	ep := tcp(t, srv.Addr())
	if got := srv.Do(t, "HELLO", "3"); !strings.Contains(got, "unknown command") {
		t.Fatalf("precondition: HELLO should be unknown, got %q", got)
	}
	tr := netio.NewTransport(netio.TransportConfig{Handshake: netio.HandshakeConfig{
		Password: pw, ClientName: "fallback", LibraryName: "respire",
	}})
	conn, _ := mustConnect(t, tr, ep)
	if conn.Protocol() != 2 {
		t.Fatalf("Protocol() = %d after fallback, want 2", conn.Protocol())
	}
	info := clientInfo(t, conn)
	if !strings.Contains(info, "resp=2") || !strings.Contains(info, "name=fallback") {
		t.Fatalf("CLIENT INFO %q", info)
	}

	// Explicit RESP3 does not fall back, and the server's echo of the HELLO arguments (which
	// include the password) must not reach the error.
	tr3 := netio.NewTransport(netio.TransportConfig{Handshake: netio.HandshakeConfig{
		Protocol: netio.ProtocolRESP3, Password: pw,
	}})
	r := mustFail(t, context.Background(), tr3, ep)
	var he *netio.HandshakeError
	if !errors.As(r.err, &he) || he.Command != "HELLO" {
		t.Fatalf("RESP3 on a server without HELLO: %v", r.err)
	}
	if r.class != fsm.Permanent {
		t.Fatalf("class %v, want permanent", r.class)
	}
	if strings.Contains(r.err.Error(), pw) || strings.Contains(he.Message, pw) {
		t.Fatalf("the error reveals the password: %q", r.err.Error())
	}
	if !strings.Contains(r.err.Error(), "unknown command 'HELLO'") {
		t.Fatalf("the error lost its reason: %q", r.err.Error())
	}
}

func TestWrongPasswordIsPermanent(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{Password: "right-password"})
	ep := tcp(t, srv.Addr())
	for _, proto := range []netio.Protocol{netio.ProtocolAuto, netio.ProtocolRESP2, netio.ProtocolRESP3} {
		t.Run(proto.String(), func(t *testing.T) {
			tr := netio.NewTransport(netio.TransportConfig{Handshake: netio.HandshakeConfig{
				Protocol: proto, Password: "wrong-password-zz",
			}})
			r := mustFail(t, context.Background(), tr, ep)
			var he *netio.HandshakeError
			var ce *netio.ConnectError
			if !errors.As(r.err, &he) || he.Code != "WRONGPASS" || r.class != fsm.Permanent {
				t.Fatalf("got %v (%v), want WRONGPASS permanent", r.err, r.class)
			}
			if !errors.As(r.err, &ce) || ce.Stage != netio.StageHandshake || ce.TimedOut || ce.Endpoint != ep {
				t.Fatalf("connect error %+v", ce)
			}
			if strings.Contains(r.err.Error(), "wrong-password-zz") {
				t.Fatalf("error reveals the password: %q", r.err.Error())
			}
		})
	}
	// No password at all on a protected server: NOAUTH on the first command after the handshake
	// is the server's business; the handshake itself (HELLO 3 without AUTH) is accepted by Redis
	// 7.0 only with AUTH, so it fails permanent too.
	r := mustFail(t, context.Background(), netio.NewTransport(netio.TransportConfig{}), ep)
	if r.class != fsm.Permanent {
		t.Fatalf("no password: %v (%v), want permanent", r.err, r.class)
	}
}

func TestClientSetInfoRejectedByRedis70(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	if got := srv.Do(t, "CLIENT", "SETINFO", "LIB-NAME", "x"); !strings.HasPrefix(got, "(error)") {
		// Redis 7.2+ accepts the metadata; the handshake must succeed all the same.
		t.Logf("this Redis (%s) accepts CLIENT SETINFO; checking that the handshake succeeds", redistest.RedisVersion())
	}
	for _, proto := range []netio.Protocol{netio.ProtocolAuto, netio.ProtocolRESP2, netio.ProtocolRESP3} {
		tr := netio.NewTransport(netio.TransportConfig{Handshake: netio.HandshakeConfig{
			Protocol: proto, LibraryName: "respire", LibraryVersion: "0.0.1",
		}})
		conn, _ := mustConnect(t, tr, tcp(t, srv.Addr()))
		if v := do(t, conn, "PING"); string(v.Str) != "PONG" {
			t.Fatalf("%v: PING replied %v", proto, v)
		}
	}
}

func TestUnixSocket(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{UnixSocket: true})
	ep := engine.Endpoint{Host: srv.UnixPath()}
	if !ep.IsUnix() {
		t.Fatal("endpoint is not a Unix endpoint")
	}
	conn, _ := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), ep)
	do(t, conn, "SET", "unix:k", "over-a-socket")
	if v := do(t, conn, "GET", "unix:k"); string(v.Str) != "over-a-socket" {
		t.Fatalf("GET replied %v", v)
	}
	if info := clientInfo(t, conn); !strings.Contains(info, "laddr="+srv.UnixPath()) && !strings.Contains(info, "flags=U") {
		t.Fatalf("CLIENT INFO %q does not show a Unix socket client", info)
	}
	// A missing socket fails transient at the dial stage.
	r := mustFail(t, context.Background(), netio.NewTransport(netio.TransportConfig{}),
		engine.Endpoint{Host: srv.UnixPath() + ".missing"})
	var ce *netio.ConnectError
	if !errors.As(r.err, &ce) || ce.Stage != netio.StageDial || r.class != fsm.Transient {
		t.Fatalf("missing socket: %v (%v)", r.err, r.class)
	}
}

func TestDialHookReceivesEndpointAndDeadline(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	ep := engine.Endpoint{Host: "cache.internal", Port: 6379} // resolved by the hook only
	var (
		mu       sync.Mutex
		gotEP    engine.Endpoint
		deadline time.Time
		hasDL    bool
	)
	const budget = 3 * time.Second
	start := time.Now()
	tr := netio.NewTransport(netio.TransportConfig{Dialer: netio.Dialer{
		ConnectTimeout: budget,
		Dial: func(ctx context.Context, e engine.Endpoint) (net.Conn, error) {
			mu.Lock()
			gotEP = e
			deadline, hasDL = ctx.Deadline()
			mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, "tcp", srv.Addr())
		},
	}})
	conn, _ := mustConnect(t, tr, ep)
	if v := do(t, conn, "PING"); string(v.Str) != "PONG" {
		t.Fatalf("PING replied %v", v)
	}
	mu.Lock()
	defer mu.Unlock()
	if gotEP != ep {
		t.Fatalf("hook received %v, want %v", gotEP, ep)
	}
	if !hasDL || deadline.Before(start.Add(budget)) || deadline.After(time.Now().Add(budget)) {
		t.Fatalf("hook ctx deadline %v (set %v), want about now+%v", deadline, hasDL, budget)
	}
	if conn.Endpoint() != ep {
		t.Fatalf("Conn.Endpoint() = %v", conn.Endpoint())
	}
}

// trackedConn records whether it was closed.
type trackedConn struct {
	net.Conn
	closed atomic.Bool
}

func (c *trackedConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

func TestDialHookLateConnectionIsClosed(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	// lateHook ignores ctx: it waits for it to end, then returns a live connection anyway.
	lateHook := func(got chan<- *trackedConn) netio.DialFunc {
		return func(ctx context.Context, _ engine.Endpoint) (net.Conn, error) {
			<-ctx.Done()
			nc, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				return nil, err
			}
			tc := &trackedConn{Conn: nc}
			got <- tc
			return tc, nil
		}
	}

	t.Run("timeout", func(t *testing.T) {
		got := make(chan *trackedConn, 1)
		tr := netio.NewTransport(netio.TransportConfig{Dialer: netio.Dialer{
			ConnectTimeout: 50 * time.Millisecond, Dial: lateHook(got),
		}})
		r := mustFail(t, context.Background(), tr, tcp(t, srv.Addr()))
		var ce *netio.ConnectError
		if !errors.As(r.err, &ce) || ce.Stage != netio.StageDial || !ce.TimedOut || ce.Budget != 50*time.Millisecond ||
			!ce.Timeout() || r.class != fsm.Transient {
			t.Fatalf("got %v (%+v, %v), want a transient dial timeout", r.err, ce, r.class)
		}
		if errors.Is(r.err, context.Canceled) {
			t.Fatalf("a timeout must not look like cancellation: %v", r.err)
		}
		if tc := <-got; !tc.closed.Load() {
			t.Fatal("the late connection was not closed")
		}
	})
	t.Run("cancel", func(t *testing.T) {
		got := make(chan *trackedConn, 1)
		tr := netio.NewTransport(netio.TransportConfig{Dialer: netio.Dialer{Dial: lateHook(got)}})
		ctx, cancel := context.WithCancel(context.Background())
		s := open(ctx, tr, tcp(t, srv.Addr()))
		time.Sleep(20 * time.Millisecond)
		cancel()
		r := s.await(t)
		if r.err == nil || !errors.Is(r.err, context.Canceled) || s.dialed.Load() != 0 {
			t.Fatalf("got %v (dialed %d), want a failure wrapping context.Canceled", r.err, s.dialed.Load())
		}
		if tc := <-got; !tc.closed.Load() {
			t.Fatal("the late connection was not closed")
		}
	})
	checkNoLeaks(t)
}

func TestDialHookErrorsAndNil(t *testing.T) {
	boom := errors.New("tunnel refused")
	tr := netio.NewTransport(netio.TransportConfig{Dialer: netio.Dialer{
		Dial: func(context.Context, engine.Endpoint) (net.Conn, error) { return nil, boom },
	}})
	r := mustFail(t, context.Background(), tr, engine.Endpoint{Host: "x", Port: 1})
	if !errors.Is(r.err, boom) || r.class != fsm.Transient {
		t.Fatalf("got %v (%v)", r.err, r.class)
	}
	tr = netio.NewTransport(netio.TransportConfig{Dialer: netio.Dialer{
		Dial: func(context.Context, engine.Endpoint) (net.Conn, error) { return nil, nil },
	}})
	if r := mustFail(t, context.Background(), tr, engine.Endpoint{Host: "x", Port: 1}); r.err == nil {
		t.Fatal("a hook returning nothing must fail")
	}
}

func TestHandshakeTimeout(t *testing.T) {
	fake, ep := startFake(t, stall)
	tr := netio.NewTransport(netio.TransportConfig{HandshakeTimeout: 100 * time.Millisecond})
	start := time.Now()
	s := open(context.Background(), tr, ep)
	r := s.await(t)
	var ce *netio.ConnectError
	if !errors.As(r.err, &ce) || ce.Stage != netio.StageHandshake || !ce.TimedOut || ce.Budget != 100*time.Millisecond ||
		r.class != fsm.Transient {
		t.Fatalf("got %v (%+v, %v), want a transient handshake timeout", r.err, ce, r.class)
	}
	if s.dialed.Load() != 1 || fake.accepted() != 1 {
		t.Fatalf("dialed %d accepted %d", s.dialed.Load(), fake.accepted())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the handshake timeout took %v", took)
	}
	checkNoLeaks(t)
}

func TestConnectTimeoutBudgetIsSeparateFromHandshake(t *testing.T) {
	// A connect budget far shorter than the handshake's: the handshake (on a server that answers
	// after 600 ms) must use its own budget, not what is left of the connect budget.
	_, ep := startFake(t, func(c net.Conn) {
		buf := make([]byte, 512)
		if _, err := c.Read(buf); err != nil {
			return
		}
		time.Sleep(600 * time.Millisecond)
		_, _ = c.Write([]byte("%1\r\n$5\r\nproto\r\n:3\r\n"))
		stall(c)
	})
	tr := netio.NewTransport(netio.TransportConfig{
		Dialer:           netio.Dialer{ConnectTimeout: 300 * time.Millisecond},
		HandshakeTimeout: 5 * time.Second,
	})
	conn, _ := mustConnect(t, tr, ep)
	if conn.Protocol() != 3 {
		t.Fatalf("Protocol() = %d", conn.Protocol())
	}
}

func TestMalformedHandshakeReplyIsPermanent(t *testing.T) {
	_, ep := startFake(t, func(c net.Conn) {
		buf := make([]byte, 512)
		if _, err := c.Read(buf); err != nil {
			return
		}
		_, _ = c.Write([]byte("?what\r\n"))
		stall(c)
	})
	r := mustFail(t, context.Background(), netio.NewTransport(netio.TransportConfig{}), ep)
	var pe *resp.ProtocolError
	if !errors.As(r.err, &pe) || r.class != fsm.Permanent {
		t.Fatalf("got %v (%v), want a permanent protocol error", r.err, r.class)
	}
}

func TestTransientServerCodeDuringHandshake(t *testing.T) {
	_, ep := startFake(t, func(c net.Conn) {
		buf := make([]byte, 512)
		if _, err := c.Read(buf); err != nil {
			return
		}
		_, _ = c.Write([]byte("-LOADING Redis is loading the dataset in memory\r\n"))
		stall(c)
	})
	r := mustFail(t, context.Background(), netio.NewTransport(netio.TransportConfig{}), ep)
	var he *netio.HandshakeError
	if !errors.As(r.err, &he) || he.Code != "LOADING" || r.class != fsm.Transient {
		t.Fatalf("got %v (%v), want a transient LOADING", r.err, r.class)
	}
}

func TestServerClosingDuringHandshakeIsTransient(t *testing.T) {
	_, ep := startFake(t, func(c net.Conn) { _ = c.Close() })
	r := mustFail(t, context.Background(), netio.NewTransport(netio.TransportConfig{}), ep)
	var ce *netio.ConnectError
	if !errors.As(r.err, &ce) || ce.Stage != netio.StageHandshake || r.class != fsm.Transient {
		t.Fatalf("got %v (%v)", r.err, r.class)
	}
}

func TestTLS(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{TLS: true})
	ep := engine.Endpoint{Host: redistest.TLSServerName, Port: srv.Port()}

	t.Run("trusted", func(t *testing.T) {
		cfg := srv.ClientTLSConfig()
		cfg.ServerName = "" // the endpoint's host names the server
		tr := netio.NewTransport(netio.TransportConfig{Dialer: netio.Dialer{TLS: cfg}})
		conn, _ := mustConnect(t, tr, ep)
		if v := do(t, conn, "PING"); string(v.Str) != "PONG" {
			t.Fatalf("PING over TLS replied %v", v)
		}
		if cfg.ServerName != "" {
			t.Fatal("the caller's TLS configuration was modified")
		}
	})
	t.Run("untrusted", func(t *testing.T) {
		cfg := srv.ClientTLSConfig()
		cfg.RootCAs = srv.TLS.UntrustedCAPool
		tr := netio.NewTransport(netio.TransportConfig{Dialer: netio.Dialer{TLS: cfg}})
		r := mustFail(t, context.Background(), tr, ep)
		var ce *netio.ConnectError
		if !errors.As(r.err, &ce) || ce.Stage != netio.StageTLS || r.class != fsm.Permanent {
			t.Fatalf("got %v (%v), want a permanent TLS failure", r.err, r.class)
		}
	})
	t.Run("plaintext-to-tls", func(t *testing.T) {
		// No TLS configured against a TLS port: the server drops us during the handshake.
		r := mustFail(t, context.Background(), netio.NewTransport(netio.TransportConfig{HandshakeTimeout: 2 * time.Second}), ep)
		t.Logf("plaintext against TLS: %v (%v)", r.err, r.class)
	})
	checkNoLeaks(t)
}

func TestClientKillReportsLostWithUnknownOutcomes(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	conn, s := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), tcp(t, srv.Addr()))
	blocked := newCmd("BLPOP", "kill:never", "0")
	conn.Send(&blocked.Command)
	// Commands pipelined behind the blocked one are written but wait behind it.
	var behind []*cmd
	for i := 0; i < 10; i++ {
		c := newCmd("INCR", "kill:ctr")
		behind = append(behind, c)
		conn.Send(&c.Command)
	}
	if !waitFor(func() bool { return behind[len(behind)-1].Stage() == engine.StageAwaitingReply }) {
		t.Fatalf("commands not written: stage %v", behind[len(behind)-1].Stage())
	}
	if got := srv.Do(t, "CLIENT", "KILL", "TYPE", "normal"); got != "1" {
		t.Fatalf("CLIENT KILL killed %q clients, want 1", got)
	}
	err := s.awaitLost(t)
	var ioe *netio.IOError
	if !errors.As(err, &ioe) || ioe.Conn == 0 || ioe.Op != "read" {
		t.Fatalf("Lost error %v, want a read *netio.IOError", err)
	}
	for i, c := range append([]*cmd{blocked}, behind...) {
		if !c.completed() {
			t.Fatalf("command %d pending after Lost", i)
		}
		if c.Err == nil || !c.MaybeSent() || c.FinalStage() != engine.StageAwaitingReply {
			t.Fatalf("command %d: err %v stage %v, want an unknown outcome", i, c.Err, c.FinalStage())
		}
		if !errors.Is(c.Err, ioe.Err) {
			t.Fatalf("command %d failed with %v, not the connection's failure", i, c.Err)
		}
	}
	if !errors.Is(conn.Err(), ioe.Err) {
		t.Fatalf("Conn.Err() = %v", conn.Err())
	}
	conn.Close()
	time.Sleep(20 * time.Millisecond)
	if n := s.losts.Load(); n != 1 {
		t.Fatalf("Lost reported %d times", n)
	}
	checkNoLeaks(t)
}

func TestPushesNeverCompleteCommands(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	pushes := make(chan string, 16)
	tr := netio.NewTransport(netio.TransportConfig{
		Handshake: netio.HandshakeConfig{Protocol: netio.ProtocolRESP3},
		Push: func(v resp.Value) {
			if v.Len() > 0 {
				select { // a push handler must never block
				case pushes <- string(v.Elem(0).Str):
				default:
				}
			}
		},
	})
	conn, _ := mustConnect(t, tr, tcp(t, srv.Addr()))
	if v := do(t, conn, "CLIENT", "TRACKING", "ON"); string(v.Str) != "OK" {
		t.Fatalf("CLIENT TRACKING ON replied %v", v)
	}
	do(t, conn, "SET", "push:k", "1")
	do(t, conn, "GET", "push:k") // now tracked
	for i := 0; i < 20; i++ {
		// Another client invalidates the key while this connection keeps sending: each push
		// lands between replies and must not complete (or shift) a command.
		srv.Do(t, "SET", "push:k", "x")
		do(t, conn, "GET", "push:k")
		if v := do(t, conn, "ECHO", "after-push"); string(v.Str) != "after-push" {
			t.Fatalf("round %d: ECHO replied %v: a push completed a command", i, v)
		}
	}
	if !waitFor(func() bool { return len(pushes) > 0 }) {
		t.Fatal("no push arrived: the case did not exercise pushes")
	}
	if got := <-pushes; got != "invalidate" {
		t.Fatalf("push %q, want invalidate", got)
	}
}

func TestUnsolicitedReplyFailsTheConnection(t *testing.T) {
	_, ep := startFake(t, func(c net.Conn) {
		time.Sleep(20 * time.Millisecond)
		_, _ = c.Write([]byte("+SURPRISE\r\n"))
		stall(c)
	})
	tr := netio.NewTransport(netio.TransportConfig{Handshake: netio.HandshakeConfig{Protocol: netio.ProtocolRESP2}})
	conn, s := mustConnect(t, tr, ep)
	err := s.awaitLost(t)
	var pe *resp.ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("Lost with %v, want a protocol error", err)
	}
	c := newCmd("PING")
	conn.Send(&c.Command)
	if !c.completed() || c.FinalStage() != engine.StageBuffered || c.MaybeSent() || !errors.As(c.Err, &pe) {
		t.Fatalf("Send after failure: err %v stage %v", c.Err, c.FinalStage())
	}
}

func TestServerErrorRepliesAreReplies(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	conn := mustConnectDefault(t, tcp(t, srv.Addr()))
	do(t, conn, "SET", "err:str", "x")
	c := newCmd("LPUSH", "err:str", "y")
	conn.Send(&c.Command)
	c.wait(t)
	if c.Err != nil || !c.Reply.HasErrorCode("WRONGTYPE") {
		t.Fatalf("err %v reply %v, want a WRONGTYPE reply", c.Err, c.Reply)
	}
}

func TestCloseCompletesBufferedCommandsAtBuffered(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	var totals [3]int
	for round := 0; round < 20; round++ {
		conn, s := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), tcp(t, srv.Addr()))
		var cmds []*cmd
		for i := 0; i < 200; i++ {
			c := newCmd("INCR", "close:ctr")
			cmds = append(cmds, c)
			conn.Send(&c.Command)
		}
		conn.Close()
		replied, unknown, unsent := 0, 0, 0
		for i, c := range cmds {
			if !c.completed() {
				t.Fatalf("command %d pending after Close", i)
			}
			switch {
			case c.Err == nil:
				replied++
				if unknown+unsent > 0 {
					t.Fatalf("command %d replied after an earlier one failed", i)
				}
			case c.MaybeSent():
				unknown++
				if unsent > 0 {
					t.Fatalf("command %d written after an unsent one", i)
				}
			default:
				unsent++
				if c.FinalStage() != engine.StageBuffered || !errors.Is(c.Err, netio.ErrClosed) {
					t.Fatalf("command %d: stage %v err %v", i, c.FinalStage(), c.Err)
				}
			}
		}
		if s.losts.Load() != 0 {
			t.Fatal("Close reported Lost")
		}
		totals[0] += replied
		totals[1] += unknown
		totals[2] += unsent
	}
	t.Logf("over 20 rounds: %d replied, %d unknown outcome, %d never sent", totals[0], totals[1], totals[2])
	if totals[2] == 0 {
		t.Fatal("no command was still buffered at Close: the case did not exercise StageBuffered")
	}
	checkNoLeaks(t)
}

func TestNoGoroutineLeaks(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	tr := netio.NewTransport(netio.TransportConfig{})
	var conns []*netio.Conn
	for i := 0; i < 20; i++ {
		s := open(context.Background(), tr, tcp(t, srv.Addr()))
		r := s.await(t)
		if r.err != nil {
			t.Fatal(r.err)
		}
		conns = append(conns, r.conn)
	}
	var n int
	if !waitFor(func() bool { n = len(netioGoroutines()); return n == 2*len(conns) }) {
		t.Fatalf("%d netio goroutines for %d connections, want 2 each", n, len(conns))
	}
	var wg sync.WaitGroup
	for _, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				c := newCmd("PING")
				conn.Send(&c.Command)
				c.wait(t)
			}
		}()
	}
	wg.Wait()
	for i, conn := range conns {
		switch i % 3 {
		case 0:
			conn.Close()
		case 1:
			conn.Drain()
		case 2:
			conn.Drain()
			conn.Close()
		}
	}
	// Failed attempts leave nothing behind either.
	mustFail(t, context.Background(), tr, refusedEndpoint(t))
	checkNoLeaks(t)
}

func TestConcurrentSendAndClose(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	for round := 0; round < 10; round++ {
		conn, s := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), tcp(t, srv.Addr()))
		var wg sync.WaitGroup
		var completed, sent atomic.Int64
		stop := make(chan struct{})
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					c := &engine.Command{Name: "PING", Frame: resp.AppendCommand(nil, "PING")}
					c.Done = func(cmd *engine.Command) {
						if cmd.Err != nil && cmd.FinalStage() == engine.StageDone {
							t.Errorf("impossible final stage")
						}
						completed.Add(1)
					}
					c.Enqueued()
					sent.Add(1)
					conn.Send(c)
				}
			}()
		}
		time.Sleep(5 * time.Millisecond)
		conn.Close()
		close(stop)
		wg.Wait()
		if completed.Load() != sent.Load() {
			t.Fatalf("round %d: %d sent, %d completed", round, sent.Load(), completed.Load())
		}
		if s.losts.Load() != 0 {
			t.Fatal("Close reported Lost")
		}
	}
	checkNoLeaks(t)
}

// closingSink closes the connection from inside Ready or Lost, as a synchronous Sink might.
type closingSink struct {
	*sink
	inReady bool
}

func (s *closingSink) Ready(id fsm.ConnID, c engine.Conn) {
	if s.inReady {
		c.Close()
	}
	s.sink.Ready(id, c)
}

func (s *closingSink) Lost(id fsm.ConnID, err error) {
	s.sink.Lost(id, err)
	s.sink.outcomeConn().Close()
}

func (s *sink) outcomeConn() *netio.Conn { return s.readyConn.Load() }

func TestSinkMayCloseFromCallbacks(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	tr := netio.NewTransport(netio.TransportConfig{})
	ep := tcp(t, srv.Addr())

	s := &closingSink{sink: newSink(), inReady: true}
	tr.Open(context.Background(), engine.OpenRequest{Conn: 1, Endpoint: ep, Sink: s})
	r := s.await(t)
	if r.err != nil {
		t.Fatal(r.err)
	}
	c := newCmd("PING")
	r.conn.Send(&c.Command)
	if !c.completed() || c.FinalStage() != engine.StageBuffered {
		t.Fatalf("Send after a Close in Ready: err %v stage %v", c.Err, c.FinalStage())
	}

	s = &closingSink{sink: newSink()}
	tr.Open(context.Background(), engine.OpenRequest{Conn: 2, Endpoint: ep, Sink: s})
	if r := s.await(t); r.err != nil {
		t.Fatal(r.err)
	}
	srv.Do(t, "CLIENT", "KILL", "TYPE", "normal")
	s.awaitLost(t)
	checkNoLeaks(t)
}

func TestDialerOptions(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	ep := tcp(t, srv.Addr())
	for _, d := range []netio.Dialer{
		{KeepAlive: -1, DisableNoDelay: true},
		{KeepAlive: 5 * time.Second, MultipathTCP: true},
		{ConnectTimeout: -1},
	} {
		conn, _ := mustConnect(t, netio.NewTransport(netio.TransportConfig{Dialer: d}), ep)
		if v := do(t, conn, "PING"); string(v.Str) != "PONG" {
			t.Fatalf("%+v: PING replied %v", d, v)
		}
	}
	// DialContext on its own: a refused dial is a transient dial-stage error without a conn id.
	var d netio.Dialer
	refused := refusedEndpoint(t)
	_, err := d.DialContext(context.Background(), refused)
	var ce *netio.ConnectError
	if !errors.As(err, &ce) || ce.Stage != netio.StageDial || ce.Conn != 0 || ce.Endpoint != refused ||
		ce.TimedOut || netio.Classify(err) != fsm.Transient {
		t.Fatalf("refused dial: %v (%+v)", err, ce)
	}
	nc, err := d.DialContext(context.Background(), ep)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.Close()
}

func TestTLSStageTimeoutAndHook(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{TLS: true})
	// TLS applies to connections from the dial hook too.
	hooked := netio.NewTransport(netio.TransportConfig{Dialer: netio.Dialer{
		TLS: srv.ClientTLSConfig(),
		Dial: func(ctx context.Context, _ engine.Endpoint) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", srv.Addr())
		},
	}})
	conn, _ := mustConnect(t, hooked, engine.Endpoint{Host: "tunnel.example", Port: 1})
	if v := do(t, conn, "PING"); string(v.Str) != "PONG" {
		t.Fatalf("PING over TLS through the hook replied %v", v)
	}
	// A server that never answers the ClientHello: the connect budget covers the TLS handshake.
	_, ep := startFake(t, stall)
	tr := netio.NewTransport(netio.TransportConfig{Dialer: netio.Dialer{
		ConnectTimeout: 300 * time.Millisecond, TLS: srv.ClientTLSConfig(),
	}})
	r := mustFail(t, context.Background(), tr, ep)
	var ce *netio.ConnectError
	if !errors.As(r.err, &ce) || ce.Stage != netio.StageTLS || !ce.TimedOut || r.class != fsm.Transient {
		t.Fatalf("got %v (%+v, %v), want a transient TLS-stage timeout", r.err, ce, r.class)
	}
}
