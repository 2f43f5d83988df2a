package client_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// dialCounter is an Options.Dialer that counts dials and live connections, and can refuse.
type dialCounter struct {
	dials   atomic.Int64
	live    atomic.Int64
	maxLive atomic.Int64
	refuse  atomic.Bool
}

func (d *dialCounter) dial(ctx context.Context, ep client.Endpoint) (net.Conn, error) {
	d.dials.Add(1)
	if d.refuse.Load() {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "tcp", ep.String())
	if err != nil {
		return nil, err
	}
	n := d.live.Add(1)
	for {
		m := d.maxLive.Load()
		if n <= m || d.maxLive.CompareAndSwap(m, n) {
			break
		}
	}
	return &countedConn{Conn: nc, d: d}, nil
}

type countedConn struct {
	net.Conn
	d    *dialCounter
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.d.live.Add(-1) })
	return c.Conn.Close()
}

// soon polls cond for up to five seconds.
func soon(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestDedicatedCommandsOverBothProtocols(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	for _, proto := range []client.Protocol{client.ProtocolRESP2, client.ProtocolRESP3} {
		t.Run(proto.String(), func(t *testing.T) {
			checkNoLeaks(t)
			ctx := ctxT(t)
			dc := &dialCounter{}
			c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Protocol: proto, Dialer: dc.dial})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			p := proto.String() + ":"
			d, err := c.Dedicated(ctx)
			if err != nil {
				t.Fatal(err)
			}
			first := d.ConnID()
			must(t, d.Ping(ctx))
			must(t, d.Set(ctx, p+"k", "v"))
			if v, ok, err := d.Get(ctx, p+"k"); err != nil || !ok || v != "v" {
				t.Fatalf("GET: %q %v %v", v, ok, err)
			}
			// BLPOP served by a push from a multiplexed connection while it waits.
			go func() {
				time.Sleep(50 * time.Millisecond)
				_, _ = c.RPush(context.Background(), p+"list", "a", "b")
			}()
			if k, v, ok, err := d.BLPop(ctx, 5*time.Second, p+"other", p+"list"); err != nil || !ok || k != p+"list" || v != "a" {
				t.Fatalf("BLPOP: %q %q %v %v", k, v, ok, err)
			}
			if k, v, ok, err := d.BRPop(ctx, time.Second, p+"list"); err != nil || !ok || k != p+"list" || v != "b" {
				t.Fatalf("BRPOP: %q %q %v %v", k, v, ok, err)
			}
			// A block time that expires is not an error.
			start := time.Now()
			if _, _, ok, err := d.BLPop(ctx, 100*time.Millisecond, p+"empty"); err != nil || ok {
				t.Fatalf("BLPOP timeout: %v %v", ok, err)
			}
			if time.Since(start) < 90*time.Millisecond {
				t.Fatal("BLPOP returned before its block time")
			}
			_, err = d.RPush(ctx, p+"src", "x")
			must(t, err)
			if v, ok, err := d.BLMove(ctx, p+"src", p+"dst", client.ListLeft, client.ListRight, time.Second); err != nil || !ok || v != "x" {
				t.Fatalf("BLMOVE: %q %v %v", v, ok, err)
			}
			_, err = d.Do(ctx, "ZADD", p+"z", "2.5", "m")
			must(t, err)
			if k, m, s, ok, err := d.BZPopMin(ctx, time.Second, p+"z"); err != nil || !ok || k != p+"z" || m != "m" || s != 2.5 {
				t.Fatalf("BZPOPMIN: %q %q %v %v %v", k, m, s, ok, err)
			}
			_, err = d.Do(ctx, "XADD", p+"s", "1-1", "f", "v")
			must(t, err)
			streams, err := d.XReadBlock(ctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: p + "s", ID: "0"}}, Block: time.Second})
			if err != nil || len(streams) != 1 || streams[0].Key != p+"s" || len(streams[0].Entries) != 1 ||
				streams[0].Entries[0].ID != "1-1" || len(streams[0].Entries[0].Fields) != 2 || streams[0].Entries[0].Fields[1] != "v" {
				t.Fatalf("XREAD BLOCK: %+v %v", streams, err)
			}
			if streams, err := d.XReadBlock(ctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: p + "s", ID: "$"}}, Block: 50 * time.Millisecond}); err != nil || streams != nil {
				t.Fatalf("XREAD BLOCK timeout: %+v %v", streams, err)
			}
			must(t, d.Close())
			must(t, d.Close())
			if err := d.Ping(ctx); !errors.Is(err, client.ErrDedicatedClosed) {
				t.Fatalf("use after Close: %v", err)
			}
			// A healthy idle connection is reused at once: no dial.
			dials := dc.dials.Load()
			d2, err := c.Dedicated(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d2.ConnID() != first || dc.dials.Load() != dials {
				t.Fatalf("idle connection not reused: %d vs %d, dials %d -> %d", d2.ConnID(), first, dials, dc.dials.Load())
			}
			must(t, d2.Close())
			// Raw blocking commands through Client.Do run on a dedicated connection and never hold
			// up the multiplexed one.
			done := make(chan error, 1)
			go func() {
				_, err := c.Do(ctx, "BLPOP", p+"raw", 2)
				done <- err
			}()
			time.Sleep(50 * time.Millisecond)
			pingStart := time.Now()
			must(t, c.Ping(ctx))
			if time.Since(pingStart) > 500*time.Millisecond {
				t.Fatal("a blocking command held up the multiplexed connection")
			}
			_, err = c.RPush(ctx, p+"raw", "r")
			must(t, err)
			must(t, <-done)
		})
	}
}

// TestDedicatedBLPopAcrossRestart: a BLPOP blocked while the server restarts fails with an
// unknown outcome (it was accepted) and is never replayed; after the restart a new BLPOP works.
func TestDedicatedBLPopAcrossRestart(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)},
		ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: 50 * time.Millisecond, MaxDelay: 200 * time.Millisecond, MaxAttempts: 50}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	result := make(chan error, 1)
	go func() {
		_, _, _, err := c.BLPop(ctx, 0, "restart:list")
		result <- err
	}()
	soon(t, "the BLPOP to block", func() bool {
		out, _ := srv.TryDo("INFO", "clients")
		return containsField(out, "blocked_clients:1")
	})
	srv.Kill()
	err = <-result
	var unknown *client.UnknownOutcomeError
	if !errors.As(err, &unknown) || unknown.CommandName != "BLPOP" || !errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("blocked BLPOP across a kill: %v", err)
	}
	srv.Restart(t)
	// The old BLPOP is never replayed: an element pushed now stays until a new BLPOP takes it.
	soon(t, "the client to reconnect", func() bool {
		return c.Set(ctx, "restart:probe", "x") == nil
	})
	_, err = c.RPush(ctx, "restart:list", "after")
	must(t, err)
	time.Sleep(100 * time.Millisecond)
	if n, err := c.Do(ctx, "LLEN", "restart:list"); err != nil || n.Int != 1 {
		t.Fatalf("the element was consumed by a replayed BLPOP: %v %v", n, err)
	}
	k, v, ok, err := c.BLPop(ctx, 5*time.Second, "restart:list")
	if err != nil || !ok || k != "restart:list" || v != "after" {
		t.Fatalf("BLPOP after the restart: %q %q %v %v", k, v, ok, err)
	}
}

func containsField(info, field string) bool {
	for i := 0; i+len(field) <= len(info); i++ {
		if info[i:i+len(field)] == field {
			return true
		}
	}
	return false
}

// TestDedicatedNOPERMNotRetried: an ACL user without permission for its setup (SELECT) is
// rejected with NOPERM during the handshake; a policy does not retry it: one dial per rent.
func TestDedicatedNOPERMNotRetried(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{Extra: []string{"user limited on >pw ~* -@all +ping"}})
	ctx := ctxT(t)
	dc := &dialCounter{}
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Username: "limited", Password: "pw",
		Database: 1, Dialer: dc.dial,
		ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: 10 * time.Millisecond, MaxAttempts: 5}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for rent := int64(1); rent <= 2; rent++ {
		start := time.Now()
		_, err := c.Dedicated(ctx)
		var se *client.ServerError
		var ce *client.ConnectionError
		if !errors.As(err, &se) || se.Code != "NOPERM" || !errors.As(err, &ce) || errors.Is(err, client.ErrReconnectLimit) {
			t.Fatalf("rent %d: want a connection error with a NOPERM server error, got %v", rent, err)
		}
		if got := dc.dials.Load(); got != rent {
			t.Fatalf("rent %d: %d dials, want %d (a permanent rejection is not retried)", rent, got, rent)
		}
		if time.Since(start) > 2*time.Second {
			t.Fatal("the permanent rejection was not returned at once")
		}
	}
	if out, _ := srv.TryDo("PING"); out != "PONG" {
		t.Fatalf("server: %q", out)
	}
}

// TestDedicatedExhaustion: with a policy, a rent retries transient failures up to MaxAttempts
// retries and then fails with the reconnect-limit error wrapping the last failure; the pool
// stays usable and the next rent gets a fresh budget. Command slots stay healthy meanwhile.
func TestDedicatedExhaustion(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	dc := &dialCounter{}
	var mu sync.Mutex
	var events []client.ConnectionStateChange
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Dialer: dc.dial,
		ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: 10 * time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxAttempts: 2},
		OnConnectionStateChange: func(ch client.ConnectionStateChange) {
			mu.Lock()
			events = append(events, ch)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	base := dc.dials.Load()
	dc.refuse.Store(true)
	for rent := int64(1); rent <= 2; rent++ {
		_, err := c.Dedicated(ctx)
		var limit *client.ReconnectLimitError
		var op *net.OpError
		if !errors.As(err, &limit) || !errors.Is(err, client.ErrReconnectLimit) || !errors.As(err, &op) {
			t.Fatalf("rent %d: want a reconnect-limit error wrapping the refusal, got %v", rent, err)
		}
		if got := dc.dials.Load() - base; got != 3*rent {
			t.Fatalf("rent %d: %d dials, want %d (MaxAttempts counts retries)", rent, got, 3*rent)
		}
	}
	if !c.IsConnected() {
		t.Fatal("dedicated recovery marked the command slots unhealthy")
	}
	must(t, c.Ping(ctx))
	dc.refuse.Store(false)
	d, err := c.Dedicated(ctx)
	if err != nil {
		t.Fatalf("the pool is unusable after exhaustion: %v", err)
	}
	must(t, d.Close())
	// Observations: source dedicated, no slot, an episode id per rent, the aggregate endpoint
	// state (connected: the command slots are healthy), and exhaustion.
	soon(t, "dedicated observations", func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, e := range events {
			if e.Source == client.SourceDedicated && e.Exhausted {
				n++
			}
		}
		return n == 2
	})
	mu.Lock()
	defer mu.Unlock()
	episodes := map[uint64]bool{}
	for _, e := range events {
		if e.Source != client.SourceDedicated {
			continue
		}
		if e.Slot != -1 || e.Episode == 0 || e.State != client.EndpointConnected {
			t.Fatalf("dedicated observation %+v: want slot -1, an episode and the connected aggregate", e)
		}
		episodes[e.Episode] = true
	}
	if len(episodes) != 2 {
		t.Fatalf("want one episode per failed rent, got %v", episodes)
	}
}

// TestDedicatedPoolBounds: concurrent renters never hold more than MaximumSize connections;
// idle connections are bounded by MaximumIdle and retired to MinimumSize by IdleTimeout.
func TestDedicatedPoolBounds(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	dc := &dialCounter{}
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Dialer: dc.dial, ClientName: "bounds",
		DedicatedPool: client.DedicatedPoolOptions{MaximumSize: 3, MaximumIdle: 2, MinimumSize: 1, IdleTimeout: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	var inUse, maxInUse atomic.Int64
	var served atomic.Int64
	errs := make(chan error, 12)
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
				n := inUse.Add(1)
				defer inUse.Add(-1)
				for {
					m := maxInUse.Load()
					if n <= m || maxInUse.CompareAndSwap(m, n) {
						break
					}
				}
				// Hold the connection with a blocking command.
				_, _, _, err := d.BLPop(ctx, 100*time.Millisecond, "bounds:"+strconv.Itoa(i))
				served.Add(1)
				return err
			})
		}()
	}
	// While renters hold every connection, the server sees at most MaximumSize of them.
	time.Sleep(50 * time.Millisecond)
	if out, err := srv.TryDo("CLIENT", "LIST"); err == nil {
		if n := countClients(out, "name=bounds"); n > 3 {
			t.Fatalf("server sees %d dedicated connections, MaximumSize 3", n)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	if served.Load() != 12 || maxInUse.Load() > 3 || dc.maxLive.Load() > 3 {
		t.Fatalf("served %d, max in use %d, max live connections %d (MaximumSize 3)", served.Load(), maxInUse.Load(), dc.maxLive.Load())
	}
	if maxInUse.Load() < 2 {
		t.Fatalf("renters did not run concurrently (max %d)", maxInUse.Load())
	}
	// At most MaximumIdle connections stay; IdleTimeout then retires idle ones down to
	// MinimumSize.
	soon(t, "idle connections bounded by MaximumIdle", func() bool { return dc.live.Load() <= 2 })
	soon(t, "idle retirement down to MinimumSize", func() bool { return dc.live.Load() == 1 })
	time.Sleep(300 * time.Millisecond)
	if n := dc.live.Load(); n != 1 {
		t.Fatalf("%d connections after idle retirement, MinimumSize 1", n)
	}
}

func countClients(list, marker string) int {
	n := 0
	for i := 0; i+len(marker) <= len(list); i++ {
		if list[i:i+len(marker)] == marker {
			n++
		}
	}
	return n
}

// TestDedicatedWatchConflict: a watched key changed by another connection aborts EXEC with the
// distinct conflict error, nothing of the transaction is applied and it is not replayed; an
// unchanged key commits; a command refused while queuing discards the whole transaction.
func TestDedicatedWatchConflict(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	for _, proto := range []client.Protocol{client.ProtocolRESP2, client.ProtocolRESP3} {
		t.Run(proto.String(), func(t *testing.T) {
			ctx := ctxT(t)
			c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Protocol: proto})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			p := proto.String() + ":"
			must(t, c.Set(ctx, p+"balance", "100"))
			err = c.Watch(ctx, func(d *client.DedicatedConn) error {
				v, _, err := d.Get(ctx, p+"balance")
				if err != nil {
					return err
				}
				// Another connection changes the watched key in between.
				if err := c.Set(ctx, p+"balance", "50"); err != nil {
					return err
				}
				n, _ := strconv.Atoi(v)
				_, err = d.Exec(ctx, func(tx *client.Tx) {
					tx.Set(p+"balance", strconv.Itoa(n-10))
					tx.Incr(p + "audit")
				})
				return err
			}, p+"balance")
			var conflict *client.TxConflictError
			if !errors.Is(err, client.ErrTxConflict) || !errors.As(err, &conflict) {
				t.Fatalf("want the transaction conflict error, got %v", err)
			}
			if v, _, _ := c.Get(ctx, p+"balance"); v != "50" {
				t.Fatalf("balance %q: the aborted transaction was applied or replayed", v)
			}
			if _, ok, _ := c.Get(ctx, p+"audit"); ok {
				t.Fatal("a command of the aborted transaction was applied")
			}
			// Unchanged: it commits.
			var replies int
			err = c.Watch(ctx, func(d *client.DedicatedConn) error {
				out, err := d.Exec(ctx, func(tx *client.Tx) {
					tx.Set(p+"balance", "40")
					tx.Incr(p + "audit")
				})
				replies = len(out)
				if err == nil && (out[0].IsError() || out[1].Int != 1) {
					t.Fatalf("EXEC replies %v", out)
				}
				return err
			}, p+"balance")
			if err != nil || replies != 2 {
				t.Fatalf("transaction without conflict: %v (%d replies)", err, replies)
			}
			if v, _, _ := c.Get(ctx, p+"balance"); v != "40" {
				t.Fatalf("balance %q after commit", v)
			}
			// A command refused while queuing discards everything.
			err = c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
				_, err := d.Exec(ctx, func(tx *client.Tx) {
					tx.Set(p+"balance", "0")
					tx.Do("INCR") // wrong number of arguments: refused at queue time
				})
				return err
			})
			var qe *client.TxQueueError
			var se *client.ServerError
			if !errors.As(err, &qe) || qe.Index != 1 || !errors.As(err, &se) || se.Code != "ERR" {
				t.Fatalf("want a queue error on command 1, got %v", err)
			}
			if v, _, _ := c.Get(ctx, p+"balance"); v != "40" {
				t.Fatalf("balance %q: a discarded transaction was applied", v)
			}
		})
	}
}

// TestDedicatedBlockingCancellation: a cancelled blocking command is never resent. Without
// UnblockOnCancel its connection is discarded and the outcome is unknown; with it, CLIENT
// UNBLOCK releases the command, the call returns the context's error promptly and the connection
// is kept.
func TestDedicatedBlockingCancellation(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	for _, unblock := range []bool{false, true} {
		t.Run("unblock="+strconv.FormatBool(unblock), func(t *testing.T) {
			checkNoLeaks(t)
			ctx := ctxT(t)
			dc := &dialCounter{}
			c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Dialer: dc.dial,
				DedicatedPool: client.DedicatedPoolOptions{UnblockOnCancel: unblock}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			key := "cancel:" + strconv.FormatBool(unblock)
			d, err := c.Dedicated(ctx)
			if err != nil {
				t.Fatal(err)
			}
			id := d.ConnID()
			cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			start := time.Now()
			_, _, _, err = d.BLPop(cctx, 0, key)
			cancel()
			if time.Since(start) > 900*time.Millisecond {
				t.Fatalf("cancellation took %v", time.Since(start))
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("cancelled BLPOP: %v", err)
			}
			if unblock {
				if errors.Is(err, client.ErrUnknownOutcome) {
					t.Fatalf("an unblocked BLPOP took nothing, its outcome is known: %v", err)
				}
				must(t, d.Close())
			} else {
				if !errors.Is(err, client.ErrUnknownOutcome) {
					t.Fatalf("want an unknown outcome without UnblockOnCancel: %v", err)
				}
				if err := d.Ping(ctx); !errors.Is(err, client.ErrDedicatedClosed) {
					t.Fatalf("the connection was not discarded: %v", err)
				}
			}
			// Nothing is left blocked on the server, and an element pushed now is not taken by the
			// cancelled command.
			soon(t, "no blocked client", func() bool {
				out, _ := srv.TryDo("INFO", "clients")
				return containsField(out, "blocked_clients:0")
			})
			_, err = c.RPush(ctx, key, "kept")
			must(t, err)
			d2, err := c.Dedicated(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if unblock != (d2.ConnID() == id) {
				t.Fatalf("unblock=%v: reused %v", unblock, d2.ConnID() == id)
			}
			if _, v, ok, err := d2.BLPop(ctx, time.Second, key); err != nil || !ok || v != "kept" {
				t.Fatalf("BLPOP after cancellation: %q %v %v", v, ok, err)
			}
			must(t, d2.Close())
		})
	}
}

// TestDedicatedRentCancellation: the caller's context bounds a rent through its backoff;
// cancelling one rent does not cancel another, whose own budget continues.
func TestDedicatedRentCancellation(t *testing.T) {
	checkNoLeaks(t)
	dc := &dialCounter{}
	dc.refuse.Store(true)
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: 1}}, Dialer: dc.dial,
		ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: 200 * time.Millisecond, MaxDelay: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	long, cancelLong := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelLong()
	other := make(chan error, 1)
	go func() {
		_, err := c.Dedicated(long)
		other <- err
	}()
	start := time.Now()
	if _, err := c.Dedicated(short); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("a rent cancelled in its backoff: %v after %v", err, time.Since(start))
	}
	// The other rent continues with its own (unlimited) budget: more dials happen.
	dials := dc.dials.Load()
	soon(t, "the other rent to keep retrying", func() bool { return dc.dials.Load() >= dials+2 })
	select {
	case err := <-other:
		t.Fatalf("the other rent ended: %v", err)
	default:
	}
	cancelLong()
	if err := <-other; !errors.Is(err, context.Canceled) {
		t.Fatalf("the unlimited rent: %v", err)
	}
}

// TestDedicatedCloseStopsRents: closing the client (from an observer of a dedicated event, even)
// stops a rent in its backoff with ErrClosed, and leaves no goroutine behind.
func TestDedicatedCloseStopsRents(t *testing.T) {
	checkNoLeaks(t)
	dc := &dialCounter{}
	dc.refuse.Store(true)
	var c *client.Client
	closedBy := make(chan struct{})
	var once sync.Once
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: 1}}, Dialer: dc.dial,
		ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: time.Hour, MaxAttempts: 3},
		MeterProvider:   provider,
		OnConnectionStateChange: func(ch client.ConnectionStateChange) {
			if ch.Source == client.SourceDedicated && ch.Scheduled {
				once.Do(func() {
					_ = c.Close() // a handler may close the client
					close(closedBy)
				})
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.Dedicated(context.Background())
	if !errors.Is(err, client.ErrClosed) || time.Since(start) > 5*time.Second {
		t.Fatalf("rent in its backoff when the client closed: %v", err)
	}
	<-closedBy
	if _, err := c.Dedicated(context.Background()); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("rent after Close: %v", err)
	}
	// The scheduled attempt was measured with the dedicated source tag.
	var rm metricdata.ResourceMetrics
	must(t, reader.Collect(context.Background(), &rm))
	found := false
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			if h, ok := md.Data.(metricdata.Histogram[int64]); ok && md.Name == "respire.connection.reconnect.attempt" {
				for _, dp := range h.DataPoints {
					if v, ok := dp.Attributes.Value(attribute.Key("respire.connection.source")); ok && v.AsString() == "dedicated" {
						found = true
					}
					if _, ok := dp.Attributes.Value(attribute.Key("respire.connection.episode")); ok {
						t.Fatal("episode ids must not be metric attributes")
					}
				}
			}
		}
	}
	if !found {
		t.Fatalf("no attempt measurement tagged respire.connection.source=dedicated: %+v", rm)
	}
}

func TestDedicatedPoolOptionsValidation(t *testing.T) {
	ep := []client.Endpoint{{Host: "localhost", Port: 6379}}
	cases := []struct {
		pool   client.DedicatedPoolOptions
		option string
	}{
		{client.DedicatedPoolOptions{}, ""},
		{client.DedicatedPoolOptions{MinimumSize: 2, MaximumSize: 32, MaximumIdle: 8, IdleTimeout: time.Minute}, ""},
		{client.DedicatedPoolOptions{MinimumSize: 4}, ""},
		{client.DedicatedPoolOptions{MaximumIdle: client.NoIdleReuse}, ""},
		{client.DedicatedPoolOptions{IdleTimeout: time.Millisecond}, ""},
		{client.DedicatedPoolOptions{IdleTimeout: 24 * time.Hour}, ""},
		{client.DedicatedPoolOptions{MinimumSize: -1}, "DedicatedPool.MinimumSize"},
		{client.DedicatedPoolOptions{MinimumSize: 5}, "DedicatedPool.MinimumSize"},
		{client.DedicatedPoolOptions{MinimumSize: 1, MaximumIdle: client.NoIdleReuse}, "DedicatedPool.MinimumSize"},
		{client.DedicatedPoolOptions{MinimumSize: 3, MaximumIdle: 8, MaximumSize: 2}, "DedicatedPool.MinimumSize"},
		{client.DedicatedPoolOptions{MaximumSize: -1}, "DedicatedPool.MaximumSize"},
		{client.DedicatedPoolOptions{MaximumIdle: -2}, "DedicatedPool.MaximumIdle"},
		{client.DedicatedPoolOptions{IdleTimeout: -time.Second}, "DedicatedPool.IdleTimeout"},
		{client.DedicatedPoolOptions{IdleTimeout: time.Microsecond}, "DedicatedPool.IdleTimeout"},
		{client.DedicatedPoolOptions{IdleTimeout: 24*time.Hour + 1}, "DedicatedPool.IdleTimeout"},
	}
	for _, tc := range cases {
		o := client.Options{Endpoints: ep, DedicatedPool: tc.pool}
		err := o.Validate()
		var ce *client.ConfigError
		switch {
		case tc.option == "" && err != nil:
			t.Errorf("%+v: want valid, got %v", tc.pool, err)
		case tc.option != "" && (!errors.As(err, &ce) || ce.Option != tc.option):
			t.Errorf("%+v: want a ConfigError on %s, got %v", tc.pool, tc.option, err)
		}
	}
}

// TestDedicatedWrongPassNotRetried: WRONGPASS is permanent too: one dial, a *ServerError.
func TestDedicatedWrongPassNotRetried(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{Password: "right"})
	dc := &dialCounter{}
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Password: "wrong", Dialer: dc.dial,
		ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: 10 * time.Millisecond, MaxAttempts: 5}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Dedicated(ctxT(t))
	var se *client.ServerError
	if !errors.As(err, &se) || se.Code != "WRONGPASS" || dc.dials.Load() != 1 {
		t.Fatalf("want one attempt failing with WRONGPASS, got %v after %d dials", err, dc.dials.Load())
	}
}

// TestDedicatedRentDeadlineInHandshake: the caller's context also bounds the handshake of a
// rent's attempt (a paused server accepts the connection but never answers).
func TestDedicatedRentDeadlineInHandshake(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, CommandTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv.Pause()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Dedicated(ctx)
	srv.Resume()
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("rent during a stalled handshake: %v after %v", err, time.Since(start))
	}
	d, err := c.Dedicated(ctxT(t))
	if err != nil {
		t.Fatalf("rent after the server resumed: %v", err)
	}
	must(t, d.Ping(ctxT(t)))
	must(t, d.Close())
}

// TestDedicatedCloseAbortsBorrowed: closing the client aborts a blocking command on a rented
// connection (its outcome is unknown) and leaves no goroutine behind.
func TestDedicatedCloseAbortsBorrowed(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	result := make(chan error, 1)
	go func() {
		_, _, _, err := c.BLPop(ctx, 0, "abort:list")
		result <- err
	}()
	soon(t, "the BLPOP to block", func() bool {
		out, _ := srv.TryDo("INFO", "clients")
		return containsField(out, "blocked_clients:1")
	})
	must(t, c.Close())
	select {
	case err := <-result:
		if err == nil || !(errors.Is(err, client.ErrUnknownOutcome) || errors.Is(err, client.ErrClosed)) {
			t.Fatalf("blocked call at Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not abort the borrowed blocking call")
	}
}

// TestDedicatedBlockingIgnoresCommandTimeout: a blocking command waits for its own block time,
// longer than CommandTimeout, and then reports nothing instead of a timeout.
func TestDedicatedBlockingIgnoresCommandTimeout(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, CommandTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, _, ok, err := c.BLPop(ctx, 300*time.Millisecond, "ignore:timeout")
	if err != nil || ok || time.Since(start) < 250*time.Millisecond {
		t.Fatalf("BLPOP with a block time above CommandTimeout: ok=%v err=%v after %v", ok, err, time.Since(start))
	}
	// An ordinary command on a dedicated connection keeps CommandTimeout, and the connection,
	// which still owes the reply, is discarded.
	d, err := c.Dedicated(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	err = d.Ping(ctx)
	srv.Resume()
	var te *client.TimeoutError
	if !errors.As(err, &te) || te.Diagnostics.Stage != client.StageAwaitingReply || te.CommandName != "PING" {
		t.Fatalf("PING on a paused server: %v", err)
	}
	if err := d.Ping(ctx); !errors.Is(err, client.ErrDedicatedClosed) {
		t.Fatalf("the connection was not discarded: %v", err)
	}
	must(t, d.Close())
}

// TestDedicatedConnectTimeout: an expired ConnectTimeout fails a rent without a policy with a
// *TimeoutError of stage Connecting and command CONNECT, as for the command slots.
func TestDedicatedConnectTimeout(t *testing.T) {
	checkNoLeaks(t)
	hang := func(ctx context.Context, _ client.Endpoint) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: 1}}, Dialer: hang,
		ConnectTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Dedicated(ctxT(t))
	var te *client.TimeoutError
	if !errors.As(err, &te) || te.CommandName != "CONNECT" || te.Diagnostics.Stage != client.StageConnecting {
		t.Fatalf("rent with an expired ConnectTimeout: %v", err)
	}
}
