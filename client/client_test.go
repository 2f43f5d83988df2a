package client_test

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

func endpointOf(s *redistest.Server) client.Endpoint {
	return client.Endpoint{Host: "127.0.0.1", Port: s.Port()}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// checkNoLeaks fails the test if goroutines outlive the client.
func checkNoLeaks(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > base {
			buf := make([]byte, 1<<16)
			t.Errorf("%d goroutines outlived the client:\n%s", n-base, buf[:runtime.Stack(buf, true)])
		}
	})
}

func TestCommandsOverBothProtocols(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	for _, proto := range []client.Protocol{client.ProtocolRESP2, client.ProtocolRESP3, client.ProtocolAuto} {
		t.Run(proto.String(), func(t *testing.T) {
			checkNoLeaks(t)
			ctx := ctxT(t)
			c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Protocol: proto, Connections: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			p := proto.String() + ":"
			must(t, c.Ping(ctx))
			must(t, c.Set(ctx, p+"k", "v"))
			if v, ok, err := c.Get(ctx, p+"k"); err != nil || !ok || v != "v" {
				t.Fatalf("GET: %q %v %v", v, ok, err)
			}
			if _, ok, err := c.Get(ctx, p+"missing"); err != nil || ok {
				t.Fatalf("GET missing: %v %v", ok, err)
			}
			set, prev, had, err := c.SetWithOptions(ctx, p+"k", "w", client.SetOptions{NX: true, Get: true})
			if err != nil || set || !had || prev != "v" {
				t.Fatalf("SET NX GET: %v %q %v %v", set, prev, had, err)
			}
			set, _, _, err = c.SetWithOptions(ctx, p+"t", "x", client.SetOptions{TTL: 1500 * time.Millisecond, XX: false})
			if err != nil || !set {
				t.Fatalf("SET PX: %v %v", set, err)
			}
			if ttl, err := c.TTL(ctx, p+"t"); err != nil || ttl <= 0 || ttl > 2*time.Second {
				t.Fatalf("TTL: %v %v", ttl, err)
			}
			if ttl, err := c.TTL(ctx, p+"k"); err != nil || ttl != client.NoExpiry {
				t.Fatalf("TTL no expiry: %v %v", ttl, err)
			}
			if ok, err := c.Expire(ctx, p+"k", time.Minute); err != nil || !ok {
				t.Fatalf("EXPIRE: %v %v", ok, err)
			}
			if n, err := c.Exists(ctx, p+"k", p+"t", p+"missing"); err != nil || n != 2 {
				t.Fatalf("EXISTS: %d %v", n, err)
			}
			if n, err := c.Incr(ctx, p+"n"); err != nil || n != 1 {
				t.Fatalf("INCR: %d %v", n, err)
			}
			if n, err := c.IncrBy(ctx, p+"n", 41); err != nil || n != 42 {
				t.Fatalf("INCRBY: %d %v", n, err)
			}
			must(t, c.MSet(ctx, p+"a", "1", p+"b", "2"))
			vals, err := c.MGet(ctx, p+"a", p+"nope", p+"b")
			if err != nil || len(vals) != 3 || vals[0] != (client.OptionalString{Value: "1", Valid: true}) || vals[1].Valid || vals[2].Value != "2" {
				t.Fatalf("MGET: %v %v", vals, err)
			}
			if n, err := c.HSet(ctx, p+"h", "f1", "v1", "f2", "v2"); err != nil || n != 2 {
				t.Fatalf("HSET: %d %v", n, err)
			}
			if v, ok, err := c.HGet(ctx, p+"h", "f2"); err != nil || !ok || v != "v2" {
				t.Fatalf("HGET: %q %v", v, err)
			}
			all, err := c.HGetAll(ctx, p+"h")
			if err != nil || len(all) != 2 || all["f1"] != "v1" {
				t.Fatalf("HGETALL: %v %v", all, err)
			}
			if n, err := c.HDel(ctx, p+"h", "f1", "zz"); err != nil || n != 1 {
				t.Fatalf("HDEL: %d %v", n, err)
			}
			if n, err := c.RPush(ctx, p+"l", "b", "c"); err != nil || n != 2 {
				t.Fatalf("RPUSH: %d %v", n, err)
			}
			if n, err := c.LPush(ctx, p+"l", "a"); err != nil || n != 3 {
				t.Fatalf("LPUSH: %d %v", n, err)
			}
			if l, err := c.LRange(ctx, p+"l", 0, -1); err != nil || strings.Join(l, ",") != "a,b,c" {
				t.Fatalf("LRANGE: %v %v", l, err)
			}
			if v, ok, err := c.LPop(ctx, p+"l"); err != nil || !ok || v != "a" {
				t.Fatalf("LPOP: %q %v", v, err)
			}
			if v, ok, err := c.RPop(ctx, p+"l"); err != nil || !ok || v != "c" {
				t.Fatalf("RPOP: %q %v", v, err)
			}
			if n, err := c.Del(ctx, p+"a", p+"b", p+"nope"); err != nil || n != 2 {
				t.Fatalf("DEL: %d %v", n, err)
			}
			// Server errors carry their code and command; WRONGTYPE is not transient.
			_, err = c.Incr(ctx, p+"h")
			var se *client.ServerError
			if !errors.As(err, &se) || se.Code != "WRONGTYPE" || se.CommandName != "INCR" || se.IsTransient() || se.Endpoint != endpointOf(srv) {
				t.Fatalf("WRONGTYPE: %#v", err)
			}
			// Raw Do returns the reply's shape of the negotiated protocol.
			v, err := c.Do(ctx, "HGETALL", p+"h")
			if err != nil || v.Len() != 2 {
				t.Fatalf("Do HGETALL: %v %v", v, err)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestHelloFallbackWhenHelloIsRenamedAway(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{Extra: []string{`rename-command HELLO ""`}})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, ClientName: "fallback-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, err := c.Do(ctx, "CLIENT", "INFO")
	if err != nil || !strings.Contains(string(v.Str), "resp=2") || !strings.Contains(string(v.Str), "name=fallback-test") {
		t.Fatalf("want a RESP2 connection named fallback-test: %v %v", v, err)
	}
	// Explicit RESP3 has no fallback.
	_, err = client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Protocol: client.ProtocolRESP3})
	var se *client.ServerError
	if !errors.As(err, &se) || se.CommandName != "HELLO" {
		t.Fatalf("RESP3 against a server without HELLO must fail: %v", err)
	}
}

func TestWrongPasswordFailsAtConnectWithoutLeakingIt(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{Password: "right-password"})
	ctx := ctxT(t)
	_, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Password: "wrong-pass-123"})
	var se *client.ServerError
	var ce *client.ConnectionError
	if !errors.As(err, &se) || se.Code != "WRONGPASS" || se.IsTransient() || !errors.As(err, &ce) {
		t.Fatalf("want WRONGPASS server error inside a connection error, got %v", err)
	}
	if strings.Contains(err.Error(), "wrong-pass-123") || strings.Contains(se.Error(), "wrong-pass-123") {
		t.Fatalf("credentials leaked: %v", err)
	}
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Password: "right-password"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	must(t, c.Ping(ctx))
}

func TestHandshakeSucceedsAlthoughRedis70RejectsSetInfo(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	// Redis 7.0 has no CLIENT SETINFO: check that premise, then that the handshake still passes.
	if r := srv.Do(t, "CLIENT", "SETINFO", "LIB-NAME", "x"); !strings.Contains(r, "error") {
		t.Fatalf("premise: this Redis accepts CLIENT SETINFO (%q)", r)
	}
	for _, proto := range []client.Protocol{client.ProtocolAuto, client.ProtocolRESP2, client.ProtocolRESP3} {
		ctx := ctxT(t)
		c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Protocol: proto, Database: 3})
		if err != nil {
			t.Fatalf("%v: %v", proto, err)
		}
		v, err := c.Do(ctx, "CLIENT", "INFO")
		if err != nil || !strings.Contains(string(v.Str), "db=3") {
			t.Fatalf("%v: database not selected: %v %v", proto, v, err)
		}
		c.Close()
	}
}

func TestUnixSocket(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{UnixSocket: true})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{{Host: srv.UnixPath()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	must(t, c.Ping(ctx))
}

// stateLog collects lifecycle observations.
type stateLog struct {
	mu  sync.Mutex
	all []client.ConnectionStateChange
}

func (l *stateLog) add(c client.ConnectionStateChange) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, c)
}

func (l *stateLog) scheduled() []client.ConnectionStateChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []client.ConnectionStateChange
	for _, c := range l.all {
		if c.Scheduled {
			out = append(out, c)
		}
	}
	return out
}

func (l *stateLog) has(pred func(client.ConnectionStateChange) bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.all {
		if pred(c) {
			return true
		}
	}
	return false
}

func eventually(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestKillAndRestartUnderPolicy(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	log := &stateLog{}
	policy := &client.ReconnectPolicy{InitialDelay: 50 * time.Millisecond, BackoffMultiplier: 2, MaxDelay: 200 * time.Millisecond}
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, ReconnectPolicy: policy,
		OnConnectionStateChange: log.add, ConnectTimeout: time.Second, CommandTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	must(t, c.Set(ctx, "k", "before"))
	srv.Kill()
	// The loss schedules attempt 1 after InitialDelay; each use while down schedules the next.
	eventually(t, "attempt 1", 2*time.Second, func() bool { return len(log.scheduled()) >= 1 })
	for i := 0; i < 40 && len(log.scheduled()) < 3; i++ {
		_ = c.Ping(ctx) // fails while down; each use retries the failed slot
		time.Sleep(20 * time.Millisecond)
	}
	sched := log.scheduled()
	if len(sched) < 3 {
		t.Fatalf("want at least 3 scheduled attempts while down, got %d", len(sched))
	}
	wantDelays := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}
	for i, ev := range sched[:3] {
		if ev.Attempt != i+1 || ev.NextDelay != wantDelays[i] || ev.Slot != 0 || ev.Source != client.SourceCommand {
			t.Fatalf("attempt %d: got attempt=%d delay=%v slot=%d source=%v", i+1, ev.Attempt, ev.NextDelay, ev.Slot, ev.Source)
		}
	}
	srv.Restart(t)
	eventually(t, "recovery after restart", 5*time.Second, func() bool {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		return c.Ping(pctx) == nil
	})
	// Observations are delivered by the dispatcher's goroutine, after the connection already
	// serves commands: wait for the event rather than race its delivery.
	eventually(t, "a connected event for the successful attempt", 5*time.Second, func() bool {
		return log.has(func(e client.ConnectionStateChange) bool {
			return e.SourceState == client.SourceConnected && e.Attempt > 0
		})
	})
	if !c.IsConnected() {
		t.Fatal("IsConnected false after recovery")
	}
}

func TestExhaustionIsStickyAfterTheServerReturns(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	log := &stateLog{}
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)},
		ReconnectPolicy:         &client.ReconnectPolicy{InitialDelay: 10 * time.Millisecond, MaxAttempts: 2},
		OnConnectionStateChange: log.add, ConnectTimeout: time.Second, CommandTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv.Kill()
	var limit error
	eventually(t, "reconnect limit", 5*time.Second, func() bool {
		err := c.Ping(ctx)
		if errors.Is(err, client.ErrReconnectLimit) {
			limit = err
			return true
		}
		time.Sleep(20 * time.Millisecond)
		return false
	})
	var rl *client.ReconnectLimitError
	var ce *client.ConnectionError
	if !errors.As(limit, &rl) || !errors.As(limit, &ce) || !strings.Contains(limit.Error(), "refused") {
		t.Fatalf("want a reconnect-limit connection error keeping the refusal, got %v", limit)
	}
	// Observations are delivered asynchronously; they can lag the failure they describe.
	eventually(t, "exhausted event at attempt 2", 2*time.Second, func() bool {
		return log.has(func(e client.ConnectionStateChange) bool { return e.Exhausted && e.Attempt == 2 })
	})
	srv.Restart(t)
	for i := 0; i < 20; i++ {
		if err := c.Ping(ctx); !errors.Is(err, client.ErrReconnectLimit) {
			t.Fatalf("exhaustion must be sticky after the server returns, got %v", err)
		}
	}
	if c.IsConnected() {
		t.Fatal("exhausted client reports connected")
	}
}

func TestTimeoutsAndCancellation(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, CommandTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv.Pause()
	err = c.Set(ctx, "k", "v")
	srv.Resume()
	var te *client.TimeoutError
	if !errors.As(err, &te) || te.Diagnostics.Stage != client.StageAwaitingReply || !errors.Is(err, client.ErrUnknownOutcome) ||
		te.Budget != 200*time.Millisecond || te.CommandName != "SET" || te.Diagnostics.Endpoint != endpointOf(srv) {
		t.Fatalf("want an AwaitingReply timeout with unknown outcome, got %#v", err)
	}
	if strings.Contains(err.Error(), "\"v\"") || strings.Contains(err.Error(), " k ") {
		t.Fatalf("timeout error mentions keys or values: %v", err)
	}
	// Cancellation before the command can be sent returns the context's error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Ping(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	// The connection survived the pause.
	eventually(t, "ping after resume", 3*time.Second, func() bool { return c.Ping(ctx) == nil })
}

func TestConnectTimeoutIsATimeoutError(t *testing.T) {
	hang := func(ctx context.Context, _ client.Endpoint) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	start := time.Now()
	_, err := client.Connect(context.Background(), client.Options{Endpoints: []client.Endpoint{{Host: "192.0.2.1", Port: 6379}},
		ConnectTimeout: 100 * time.Millisecond, Dialer: hang})
	var te *client.TimeoutError
	if !errors.As(err, &te) || te.CommandName != "CONNECT" || te.Diagnostics.Stage != client.StageConnecting || errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("want a Connecting timeout, got %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("ConnectTimeout not honoured")
	}
	// Caller cancellation wins and returns the context's error.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{{Host: "192.0.2.1", Port: 6379}},
		ConnectTimeout: time.Hour, Dialer: hang})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the context's error, got %v", err)
	}
}

func TestLazyCreateConnectsOnFirstUse(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	srv.Kill()
	var dials atomic.Int64
	dialer := func(ctx context.Context, ep client.Endpoint) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", ep.String())
	}
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Dialer: dialer, CommandTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(50 * time.Millisecond)
	if dials.Load() != 0 || c.IsConnected() {
		t.Fatal("Create did I/O")
	}
	ctx := ctxT(t)
	var ce *client.ConnectionError
	if err := c.Ping(ctx); !errors.As(err, &ce) {
		t.Fatalf("first use against a dead server: %v", err)
	}
	srv.Restart(t)
	// The failed attempt rests its slot (250 ms): a command during the rest fails at once, and
	// the first one after it retries.
	eventually(t, "a later command connects", 5*time.Second, func() bool { return c.Ping(ctx) == nil })
	if dials.Load() < 2 {
		t.Fatalf("a later command must retry the failed attempt (dials=%d)", dials.Load())
	}
}

func TestCloseAndAdminGuard(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	// CONFIG GET is refused too: Redis flags it admin, and it can return requirepass.
	for _, args := range [][]any{{"FLUSHALL"}, {"flushdb"}, {"CONFIG", "SET", "maxmemory", "1"}, {"config", "set", "x", "y"},
		{"CONFIG", "GET", "requirepass"}} {
		if _, err := c.Do(ctx, args...); !errors.Is(err, client.ErrAdminDisabled) {
			t.Fatalf("%v: %v", args, err)
		}
	}
	if _, err := c.Do(ctx, "INFO", "server"); err != nil {
		t.Fatalf("INFO is exempt from the admin guard: %v", err)
	}
	must(t, c.Close())
	must(t, c.Close())
	if err := c.Ping(ctx); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	admin, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, AllowAdmin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Do(ctx, "FLUSHDB"); err != nil {
		t.Fatal(err)
	}
}

func TestCloseFromStateHandler(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	closed := make(chan struct{})
	// The handler learns of the client through an atomic: the disconnect that runs it follows
	// Connect's return only through the server (CLIENT KILL), which the race detector cannot see.
	var cp atomic.Pointer[client.Client]
	var once sync.Once
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)},
		OnConnectionStateChange: func(ch client.ConnectionStateChange) {
			if c := cp.Load(); c != nil && ch.SourceState == client.SourceDisconnected {
				once.Do(func() { c.Close(); close(closed) })
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	cp.Store(c)
	srv.Do(t, "CLIENT", "KILL", "TYPE", "normal")
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("handler could not close the client")
	}
}

func TestOptionsValidation(t *testing.T) {
	ep := []client.Endpoint{{Host: "localhost", Port: 6379}}
	cases := []struct {
		opts   client.Options
		option string
	}{
		{client.Options{}, "Endpoints"},
		{client.Options{Endpoints: append(ep, ep...)}, "Endpoints"},
		{client.Options{Endpoints: []client.Endpoint{{Port: 1}}}, "Endpoints"},
		{client.Options{Endpoints: []client.Endpoint{{Host: "h", Port: 70000}}}, "Endpoints"},
		{client.Options{Endpoints: ep, Database: -1}, "Database"},
		{client.Options{Endpoints: ep, ConnectTimeout: -1}, "ConnectTimeout"},
		{client.Options{Endpoints: ep, CommandTimeout: -2}, "CommandTimeout"},
		{client.Options{Endpoints: ep, Connections: -1}, "Connections"},
		{client.Options{Endpoints: ep, Connections: client.MaxConnections + 1}, "Connections"},
		{client.Options{Endpoints: ep, Protocol: 4}, "Protocol"},
		{client.Options{Endpoints: ep, LibraryName: "has space"}, "LibraryName"},
		{client.Options{Endpoints: ep, ReconnectPolicy: &client.ReconnectPolicy{JitterRatio: 2}}, "ReconnectPolicy.JitterRatio"},
		{client.Options{Endpoints: ep, ReconnectPolicy: &client.ReconnectPolicy{MaxDelay: 48 * time.Hour}}, "ReconnectPolicy.MaxDelay"},
	}
	for _, tc := range cases {
		_, err := client.Create(tc.opts)
		var ce *client.ConfigError
		if !errors.As(err, &ce) || ce.Option != tc.option {
			t.Errorf("%+v: want ConfigError on %s, got %v", tc.opts, tc.option, err)
		}
	}
	if err := (&client.Options{Endpoints: ep, CommandTimeout: client.NoTimeout}).Validate(); err != nil {
		t.Errorf("NoTimeout must be valid: %v", err)
	}
}
