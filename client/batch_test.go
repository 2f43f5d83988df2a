package client_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// connectBoth connects one client per protocol to srv.
func forBothProtocols(t *testing.T, srv *redistest.Server, opts client.Options, fn func(t *testing.T, c *client.Client, p string)) {
	t.Helper()
	for _, proto := range []client.Protocol{client.ProtocolRESP2, client.ProtocolRESP3} {
		t.Run(proto.String(), func(t *testing.T) {
			o := opts
			o.Endpoints = []client.Endpoint{endpointOf(srv)}
			o.Protocol = proto
			c, err := client.Connect(ctxT(t), o)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fn(t, c, proto.String()+":")
		})
	}
}

// TestPipeline: a batch of typed commands runs in one round trip on one connection and each
// future holds its own typed result; a command that fails at the server fails alone.
func TestPipeline(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	forBothProtocols(t, srv, client.Options{Connections: 4}, func(t *testing.T, c *client.Client, p string) {
		ctx := ctxT(t)
		var b client.Batch
		set := b.Set(p+"a", "1")
		incr := b.Incr(p + "a")
		get := b.Get(p + "a")
		missing := b.Get(p + "missing")
		hset := b.HSet(p+"h", "f", "v", "g", "w")
		hgetall := b.HGetAll(p + "h")
		wrong := b.LPush(p+"a", "x") // WRONGTYPE: fails alone
		zadd := b.ZAdd(p+"z", client.ZMember{Member: "m", Score: 2})
		zrange := b.ZRangeWithScores(p+"z", 0, -1)
		id1 := b.ClientID()
		raw := b.Do("ECHO", "raw")
		id2 := b.ClientID()
		if _, err := get.Result(); !errors.Is(err, client.ErrNotRun) {
			t.Fatalf("a future before its batch ran: %v", err)
		}
		if b.Len() != 12 {
			t.Fatalf("Len = %d", b.Len())
		}
		err := c.Pipeline(ctx, &b)
		var se *client.ServerError
		if !errors.As(err, &se) || se.Code != "WRONGTYPE" {
			t.Fatalf("Pipeline returned %v, want the first command error (WRONGTYPE)", err)
		}
		if err := set.Err(); err != nil {
			t.Fatal(err)
		}
		if n, err := incr.Result(); n != 2 || err != nil {
			t.Fatalf("INCR: %d %v", n, err)
		}
		if v, err := get.Result(); v != client.OptionalString(some("2")) || err != nil {
			t.Fatalf("GET: %v %v", v, err)
		}
		if v := missing.Val(); v.Valid {
			t.Fatalf("GET missing: %v", v)
		}
		if n := hset.Val(); n != 2 {
			t.Fatalf("HSET: %d", n)
		}
		if m := hgetall.Val(); len(m) != 2 || m["g"] != "w" {
			t.Fatalf("HGETALL: %v", m)
		}
		if !errors.As(wrong.Err(), &se) || se.Code != "WRONGTYPE" {
			t.Fatalf("LPUSH on a string: %v", wrong.Err())
		}
		if zadd.Val() != 1 || len(zrange.Val()) != 1 || zrange.Val()[0] != (client.ZMember{Member: "m", Score: 2}) {
			t.Fatalf("ZADD %d ZRANGE %v", zadd.Val(), zrange.Val())
		}
		if s, _ := raw.Val().AsString(); s != "raw" {
			t.Fatalf("raw ECHO: %v", raw.Val())
		}
		if id1.Val() == 0 || id1.Val() != id2.Val() {
			t.Fatalf("the batch ran on connections %d and %d, want one", id1.Val(), id2.Val())
		}
		// The batch is empty again and reusable; the futures keep their results.
		if b.Len() != 0 {
			t.Fatalf("Len after the run = %d", b.Len())
		}
		again := b.Get(p + "a")
		if err := c.Pipeline(ctx, &b); err != nil || again.Val().Value != "2" || incr.Val() != 2 {
			t.Fatalf("reused batch: %v %v", err, again.Val())
		}
		// An empty batch is a no-op.
		if err := c.Pipeline(ctx, &b); err != nil {
			t.Fatal(err)
		}
	})
}

// TestAtomicOnASharedConnection: MULTI/EXEC batches run on the shared connections while other
// callers send commands on them. Each transaction's commands run together, and no other
// caller's command joins one: a typed INCR that got QUEUED would fail its shape check (a
// *ProtocolError), and a transaction that took a foreign command would not count 1, 2.
func TestAtomicOnASharedConnection(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	forBothProtocols(t, srv, client.Options{Connections: 2}, func(t *testing.T, c *client.Client, p string) {
		ctx := ctxT(t)
		const callers, rounds = 6, 150
		var wg sync.WaitGroup
		errs := make(chan error, callers+1)
		for i := 0; i < callers; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				key := fmt.Sprintf("%sother:%d", p, i)
				for n := int64(1); n <= rounds; n++ {
					got, err := c.Incr(ctx, key)
					if err != nil || got != n {
						errs <- fmt.Errorf("caller %d: INCR = %d, %v (want %d)", i, got, err, n)
						return
					}
				}
			}(i)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				var b client.Batch
				key := fmt.Sprintf("%stx:%d", p, r)
				first := b.Incr(key)
				second := b.Incr(key)
				get := b.Get(key)
				if err := c.Atomic(ctx, &b); err != nil {
					errs <- fmt.Errorf("round %d: %v", r, err)
					return
				}
				if first.Val() != 1 || second.Val() != 2 || get.Val().Value != "2" {
					errs <- fmt.Errorf("round %d: %d %d %v", r, first.Val(), second.Val(), get.Val())
					return
				}
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})
}

// TestAtomicErrors: a command that fails at run time fails alone; a command Redis refuses to
// queue discards the transaction (every entry fails with the *TxQueueError, nothing applied).
func TestAtomicErrors(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	forBothProtocols(t, srv, client.Options{}, func(t *testing.T, c *client.Client, p string) {
		ctx := ctxT(t)
		if err := c.Set(ctx, p+"s", "x"); err != nil {
			t.Fatal(err)
		}
		var b client.Batch
		ok := b.Incr(p + "n")
		wrong := b.LPush(p+"s", "v")
		after := b.Incr(p + "n")
		err := c.Atomic(ctx, &b)
		var se *client.ServerError
		if !errors.As(err, &se) || se.Code != "WRONGTYPE" || ok.Val() != 1 || after.Val() != 2 || !errors.As(wrong.Err(), &se) {
			t.Fatalf("run-time error: %v; %d %v %d", err, ok.Val(), wrong.Err(), after.Val())
		}
		first := b.Incr(p + "q")
		bad := b.Do("NOSUCHCOMMAND", "x")
		err = c.Atomic(ctx, &b)
		var qe *client.TxQueueError
		if !errors.As(err, &qe) || qe.Index != 1 || !errors.As(first.Err(), &qe) || !errors.As(bad.Err(), &qe) {
			t.Fatalf("queue-time error: %v; %v %v", err, first.Err(), bad.Err())
		}
		if _, found, _ := c.Get(ctx, p+"q"); found {
			t.Fatal("a discarded transaction applied a command")
		}
	})
}

// TestBatchRefusals: what a batch may not carry is refused before anything is sent: session
// commands on a shared connection, transaction commands inside Atomic, blocking commands, and
// administrative ones without AllowAdmin.
func TestBatchRefusals(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cases := []struct {
		name   string
		queue  func(b *client.Batch)
		atomic bool
		path   string
	}{
		{"SELECT in a pipeline", func(b *client.Batch) { b.Do("SELECT", "1") }, false, "Commands.Pipeline"},
		{"MULTI in a pipeline", func(b *client.Batch) { b.Do("multi") }, false, "Commands.Pipeline"},
		{"MULTI in Atomic", func(b *client.Batch) { b.Do([]byte("MULTI")) }, true, "Commands.Atomic"},
		{"WATCH in Atomic", func(b *client.Batch) { b.Do("WATCH", "k") }, true, "Commands.Atomic"},
		{"SELECT in Atomic on a shared connection", func(b *client.Batch) { b.Do("SELECT", "1") }, true, "Commands.Atomic"},
		{"CLIENT REPLY", func(b *client.Batch) { b.Do("CLIENT", "REPLY", "OFF") }, false, "Commands.Pipeline"},
		{"SUBSCRIBE", func(b *client.Batch) { b.Do("SUBSCRIBE", "ch") }, false, "Commands.Pipeline"},
		{"BLPOP", func(b *client.Batch) { b.Do("BLPOP", "l", "0") }, false, "Commands.Pipeline"},
		{"XREAD BLOCK", func(b *client.Batch) { b.Do("XREAD", "BLOCK", "0", "STREAMS", "s", "$") }, true, "Commands.Atomic"},
	}
	for _, tc := range cases {
		var b client.Batch
		n := b.Incr("refused:n")
		tc.queue(&b)
		run := c.Pipeline
		if tc.atomic {
			run = c.Atomic
		}
		err := run(ctx, &b)
		var sce *client.SessionCommandError
		if !errors.As(err, &sce) || sce.Path != tc.path || !errors.Is(n.Err(), client.ErrSessionCommand) {
			t.Errorf("%s: %v (entry: %v), want a *SessionCommandError from %s", tc.name, err, n.Err(), tc.path)
		}
	}
	var b client.Batch
	b.Incr("refused:n")
	b.Do("CONFIG", []byte("set"), "maxmemory", "1")
	if err := c.Pipeline(ctx, &b); !errors.Is(err, client.ErrAdminDisabled) {
		t.Errorf("CONFIG SET in a batch: %v", err)
	}
	if v, found, err := c.Get(ctx, "refused:n"); err != nil || found {
		t.Fatalf("a refused batch sent commands: %q %v %v", v, found, err)
	}
}

// TestBatchOnDedicatedConn: a DedicatedConn runs batches too; Atomic there honours WATCH.
func TestBatchOnDedicatedConn(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	forBothProtocols(t, srv, client.Options{}, func(t *testing.T, c *client.Client, p string) {
		ctx := ctxT(t)
		err := c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
			var b client.Batch
			sel := b.Do("SELECT", "0") // allowed on a dedicated connection
			n := b.Incr(p + "n")
			if err := d.Pipeline(ctx, &b); err != nil || sel.Err() != nil || n.Val() != 1 {
				return fmt.Errorf("pipeline: %v %v %d", err, sel.Err(), n.Val())
			}
			if err := d.Watch(ctx, p+"n"); err != nil {
				return err
			}
			if _, err := c.Incr(ctx, p+"n"); err != nil { // another connection changes the key
				return err
			}
			m := b.Incr(p + "n")
			err := d.Atomic(ctx, &b)
			var tc *client.TxConflictError
			if !errors.As(err, &tc) || !errors.Is(m.Err(), client.ErrTxConflict) {
				return fmt.Errorf("atomic after a watched change: %v %v", err, m.Err())
			}
			m = b.Incr(p + "n")
			if err := d.Atomic(ctx, &b); err != nil || m.Val() != 3 {
				return fmt.Errorf("atomic: %v %d", err, m.Val())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// dropFake is a loopback RESP2 server that answers the first answer INCR commands of each
// connection (MULTI with OK and, after it, INCR with QUEUED) and then closes the connection
// without answering the next one: a reply lost in the middle of a batch. It counts every
// INCR it read, per key, so that a replay would show.
type dropFake struct {
	l      net.Listener
	answer int
	// stall keeps the connection open, reading and never answering, instead of closing it.
	stall bool
	// slowKey's INCR is answered only after slowFor.
	slowKey string
	slowFor time.Duration
	wg      sync.WaitGroup
	mu      sync.Mutex
	seen    map[string]int
	conns   []net.Conn
	closed  atomic.Bool
}

func startDropFake(t *testing.T, answer int) *dropFake {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &dropFake{l: l, answer: answer, seen: map[string]int{}}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(func() {
		f.closed.Store(true)
		_ = l.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			_ = c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *dropFake) endpoint() client.Endpoint {
	return client.Endpoint{Host: "127.0.0.1", Port: f.l.Addr().(*net.TCPAddr).Port}
}

func (f *dropFake) accept() {
	defer f.wg.Done()
	for {
		nc, err := f.l.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, nc)
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(nc)
	}
}

func (f *dropFake) serve(nc net.Conn) {
	defer f.wg.Done()
	defer nc.Close()
	rd := resp.NewReader(bufio.NewReader(nc), nil)
	var args [][]byte
	answered, inMulti := 0, false
	for {
		if err := rd.ReadCommand(&args); err != nil || len(args) == 0 {
			return
		}
		var reply string
		switch strings.ToUpper(string(args[0])) {
		case "HELLO":
			reply = "-ERR unknown command 'HELLO'\r\n"
		case "PING":
			reply = "+PONG\r\n"
		case "MULTI":
			inMulti = true
			reply = "+OK\r\n"
		case "INCR":
			f.mu.Lock()
			f.seen[string(args[1])]++
			n := f.seen[string(args[1])]
			f.mu.Unlock()
			if answered == f.answer && !f.stall {
				return // the reply is lost: the connection closes
			}
			if answered == f.answer {
				continue // stalled: read on, answer nothing
			}
			answered++
			reply = ":" + strconv.Itoa(n) + "\r\n"
			if f.slowKey != "" && string(args[1]) == f.slowKey {
				time.Sleep(f.slowFor)
			}
			if inMulti {
				reply = "+QUEUED\r\n"
			}
		case "EXEC":
			return // the transaction's reply is lost
		default:
			reply = "+OK\r\n"
		}
		if _, err := nc.Write([]byte(reply)); err != nil {
			return
		}
	}
}

// TestBatchLostReplyMidBatch: the connection fails after the third reply of a five-command
// pipeline. The three commands whose replies arrived keep them; each of the other two reports
// its own unknown outcome (it was written, it may have run), and nothing is sent again: the
// server saw every command at most once (the last one never: the connection closed before the
// server read it, which the client cannot know). In an Atomic batch, the lost EXEC leaves
// every command's outcome unknown.
func TestBatchLostReplyMidBatch(t *testing.T) {
	f := startDropFake(t, 3)
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{f.endpoint()}, Protocol: client.ProtocolRESP2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b client.Batch
	var fs []*client.Future[int64]
	for i := 0; i < 5; i++ {
		fs = append(fs, b.Incr(fmt.Sprintf("k%d", i)))
	}
	err = c.Pipeline(ctx, &b)
	if !errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("Pipeline: %v, want the first unknown outcome", err)
	}
	for i, fu := range fs {
		n, err := fu.Result()
		if i < 3 {
			if err != nil || n != 1 {
				t.Errorf("entry %d, answered: %d %v", i, n, err)
			}
			continue
		}
		// Writing or AwaitingReply: the reader can see the server close the connection before
		// the goroutine that wrote the batch (the caller itself, on an idle connection) has
		// returned from the write and marked it written; either way the outcome is unknown.
		var uo *client.UnknownOutcomeError
		if !errors.As(err, &uo) || uo.CommandName != "INCR" ||
			(uo.Stage != client.StageAwaitingReply && uo.Stage != client.StageWriting) {
			t.Errorf("entry %d, lost: %v, want its own unknown outcome", i, err)
		}
	}
	// A single client's next command reconnects; no entry of the batch was resent.
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	for i := 0; i < 5; i++ {
		if n := f.seen[fmt.Sprintf("k%d", i)]; n > 1 || (i < 4 && n != 1) {
			t.Errorf("k%d reached the server %d times", i, n)
		}
	}
	f.mu.Unlock()

	var tx client.Batch
	a, bb := tx.Incr("t1"), tx.Incr("t2")
	err = c.Atomic(ctx, &tx)
	var uo *client.UnknownOutcomeError
	if !errors.As(err, &uo) || uo.CommandName != "EXEC" {
		t.Fatalf("Atomic: %v, want EXEC's unknown outcome", err)
	}
	for i, fu := range []*client.Future[int64]{a, bb} {
		if !errors.As(fu.Err(), &uo) || uo.CommandName != "INCR" {
			t.Errorf("transaction entry %d: %v, want its own unknown outcome", i, fu.Err())
		}
	}
}

// checkAnsweredThenTimedOut checks the INCR entries of a pipeline whose context's deadline
// passed after the first answered replies: those entries hold 1, each of the others its own
// unknown outcome wrapping context.DeadlineExceeded.
func checkAnsweredThenTimedOut(t *testing.T, fs []*client.Future[int64], answered int) {
	t.Helper()
	for i, fu := range fs {
		n, err := fu.Result()
		switch {
		case i < answered && (err != nil || n != 1):
			t.Errorf("answered entry %d: %d %v", i, n, err)
		case i >= answered && (!errors.Is(err, client.ErrUnknownOutcome) || !errors.Is(err, context.DeadlineExceeded)):
			t.Errorf("pending entry %d: %v, want its own unknown outcome from the context", i, err)
		}
	}
}

// TestBatchCancelledMidBatch: the context ends while replies are pending (the server answered
// two commands of four and stalls): the commands whose replies arrived keep them, and each of
// the others reports an unknown outcome wrapping the context's error (it was sent and may
// run). Nothing is sent again.
func TestBatchCancelledMidBatch(t *testing.T) {
	f := startDropFake(t, 2)
	f.stall = true
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{f.endpoint()}, Protocol: client.ProtocolRESP2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b client.Batch
	var fs []*client.Future[int64]
	for i := 0; i < 4; i++ {
		fs = append(fs, b.Incr(fmt.Sprintf("c%d", i)))
	}
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err = c.Pipeline(cctx, &b)
	if !errors.Is(err, client.ErrUnknownOutcome) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Pipeline: %v", err)
	}
	checkAnsweredThenTimedOut(t, fs, 2)
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := 0; i < 4; i++ {
		if n := f.seen[fmt.Sprintf("c%d", i)]; n != 1 {
			t.Errorf("c%d reached the server %d times", i, n)
		}
	}
}

// TestDedicatedExecTypedFutures: the typed commands of a transaction on a DedicatedConn fill
// their futures as well as Exec's raw replies.
func TestDedicatedExecTypedFutures(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var incr *client.Future[int64]
	var get *client.Future[client.OptionalString]
	err = c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
		out, err := d.Exec(ctx, func(tx *client.Tx) {
			incr = tx.IncrBy("dx", 5)
			get = tx.Get("dx")
		})
		if err != nil || len(out) != 2 {
			return fmt.Errorf("exec: %v %v", out, err)
		}
		return nil
	})
	if err != nil || incr.Val() != 5 || get.Val().Value != "5" {
		t.Fatalf("%v: %d %v", err, incr.Val(), get.Val())
	}
}

// TestPipelinedWatchIsClearedAtClose: a WATCH sent in a batch on a dedicated connection is
// cleared when the connection goes back to the pool, so the next renter's transaction does
// not inherit it.
func TestPipelinedWatchIsClearedAtClose(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var first int64
	err = c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
		var b client.Batch
		id := b.ClientID()
		b.Do("WATCH", "pw:k")
		if err := d.Pipeline(ctx, &b); err != nil {
			return err
		}
		first = id.Val()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "pw:k", "changed"); err != nil {
		t.Fatal(err)
	}
	err = c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
		id, err := d.ClientID(ctx)
		if err != nil {
			return err
		}
		if id != first {
			return fmt.Errorf("the pool handed out connection %d, not %d: the test needs the same one", id, first)
		}
		_, err = d.Exec(ctx, func(tx *client.Tx) { tx.Set("pw:x", "v") })
		return err
	})
	if err != nil {
		t.Fatalf("the next renter inherited the WATCH: %v", err)
	}
}

// TestBatchBound: a batch holds at most MaxBatchLen commands; one more fails the batch before
// anything is sent.
func TestBatchBound(t *testing.T) {
	var b client.Batch
	for i := 0; i < client.MaxBatchLen; i++ {
		b.Ping()
	}
	over := b.Ping()
	var ce *client.ConfigError
	if !errors.As(over.Err(), &ce) || b.Len() != client.MaxBatchLen {
		t.Fatalf("command %d: %v (Len %d)", client.MaxBatchLen+1, over.Err(), b.Len())
	}
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Pipeline(context.Background(), &b); !errors.As(err, &ce) {
		t.Fatalf("an oversized batch ran: %v", err)
	}
}

// TestBatchWithdrawnWhileWaiting: a batch still waiting for a connection when its context
// ends is withdrawn whole: every entry fails with the context's error (a definite failure:
// nothing was sent) and the server never sees a command of it.
func TestBatchWithdrawnWhileWaiting(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var got atomic.Int64
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go func() { // a server that never finishes the handshake: it reads and answers nothing
				defer nc.Close()
				buf := make([]byte, 4096)
				for {
					n, err := nc.Read(buf)
					got.Add(int64(strings.Count(string(buf[:n]), "INCR")))
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port}},
		ConnectTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b client.Batch
	x, y := b.Incr("w1"), b.Incr("w2")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := c.Pipeline(ctx, &b); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("Pipeline: %v, want the context's error alone", err)
	}
	for _, f := range []*client.Future[int64]{x, y} {
		if err := f.Err(); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, client.ErrUnknownOutcome) {
			t.Fatalf("entry: %v", err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := got.Load(); n != 0 {
		t.Fatalf("the server saw %d commands of a withdrawn batch", n)
	}
}
