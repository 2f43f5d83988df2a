package client_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// Tests of a single command whose caller reads its reply itself (Client.submitOwn: a lone
// caller, with a context that cannot be cancelled, on an idle connection).

// readersClient connects to f with a dialer whose connections record the goroutines that read
// replies from the socket, and returns the client and the readers' counts (under mu).
func readersClient(t *testing.T, f *dropFake, timeout time.Duration) (*client.Client, *sync.Mutex, map[int]int) {
	t.Helper()
	var mu sync.Mutex
	readers := map[int]int{}
	c, err := client.Connect(context.Background(), client.Options{
		Endpoints: []client.Endpoint{f.endpoint()}, Protocol: client.ProtocolRESP2, CommandTimeout: timeout,
		Dialer: readersDialer(&mu, readers)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, &mu, readers
}

// readsOf returns how many reads the goroutine g made so far.
func readsOf(mu *sync.Mutex, readers map[int]int, g int) int {
	mu.Lock()
	defer mu.Unlock()
	return readers[g]
}

// warmUntilTheCallerReads sends PINGs with ctx until the calling goroutine has read a reply
// itself, and fails the test if it never does.
func warmUntilTheCallerReads(t *testing.T, c *client.Client, mu *sync.Mutex, readers map[int]int) {
	t.Helper()
	me := callerGoroutine()
	for i := 0; readsOf(mu, readers, me) == 0; i++ {
		if err := c.Ping(context.Background()); err != nil {
			t.Fatalf("warm-up PING: %v", err)
		}
		if i == 200 {
			t.Fatal("the caller never read its own reply")
		}
	}
}

// TestSingleCommandsReadByTheirCaller: a lone caller reads its commands' replies on its own
// goroutine, 50 commands in a row, with a context that cannot be cancelled and with one that
// can; a client whose idle-read watchdog owns the socket's read deadline never lends its read
// side, and gets the same replies from its reader goroutine.
func TestSingleCommandsReadByTheirCaller(t *testing.T) {
	f := startDropFake(t, 1000)
	c, mu, readers := readersClient(t, f, time.Second)
	warmUntilTheCallerReads(t, c, mu, readers)
	me := callerGoroutine()
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for pass, ctx := range []context.Context{context.Background(), cancellable} {
		before := readsOf(mu, readers, me)
		for i := 1; i <= 50; i++ {
			n, err := c.Incr(ctx, "own"+strconv.Itoa(pass))
			if err != nil || n != int64(i) {
				t.Fatalf("pass %d, INCR %d: %d %v", pass, i, n, err)
			}
		}
		if mine := readsOf(mu, readers, me) - before; mine < 25 {
			t.Fatalf("pass %d: the caller read %d replies of 50 itself, want most of them", pass, mine)
		}
	}

	var wmu sync.Mutex
	wreaders := map[int]int{}
	w, err := client.Connect(context.Background(), client.Options{
		Endpoints: []client.Endpoint{f.endpoint()}, Protocol: client.ProtocolRESP2,
		ConnectionIdleReadTimeout: time.Second, Dialer: readersDialer(&wmu, wreaders)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := 1; i <= 50; i++ {
		if n, err := w.Incr(context.Background(), "watched"); err != nil || n != int64(i) {
			t.Fatalf("watched INCR %d: %d %v", i, n, err)
		}
	}
	if got := readsOf(&wmu, wreaders, me); got != 0 {
		t.Fatalf("a client with the idle-read watchdog let its caller read %d replies, want none", got)
	}
}

// TestSingleCommandCancelledWhileTheCallerReads: a caller whose context ends while it reads its
// own reply stops at once, long before its command timeout, with an unknown outcome wrapping the
// context's error; the late reply is consumed by the connection's reader goroutine and paired
// with its own command, so the next commands get theirs, and nothing runs twice.
func TestSingleCommandCancelledWhileTheCallerReads(t *testing.T) {
	f := startDropFake(t, 1000)
	f.slowKey, f.slowFor = "slow", 300*time.Millisecond
	c, mu, readers := readersClient(t, f, 10*time.Second)
	warmUntilTheCallerReads(t, c, mu, readers)
	me := callerGoroutine()
	before := readsOf(mu, readers, me)
	if n, err := c.Incr(context.Background(), "fast"); err != nil || n != 1 {
		t.Fatalf("INCR fast: %d %v", n, err)
	}
	if readsOf(mu, readers, me) == before {
		t.Fatal("the caller read no reply itself: the test does not exercise its path")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Incr(ctx, "slow")
	elapsed := time.Since(start)
	var uo *client.UnknownOutcomeError
	if !errors.As(err, &uo) || uo.Stage != client.StageAwaitingReply || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("INCR slow: %v, want an unknown outcome awaiting its reply, from the context", err)
	}
	if elapsed > 250*time.Millisecond {
		t.Fatalf("the context's end stopped the caller after %v, want about 50ms", elapsed)
	}
	// The next commands queue behind the slow reply and get their own replies.
	for i := 1; i <= 3; i++ {
		if n, err := c.Incr(context.Background(), "after"); err != nil || n != int64(i) {
			t.Fatalf("INCR after #%d: %d %v", i, n, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen["slow"] != 1 || f.seen["after"] != 3 {
		t.Fatalf("the server saw slow %d and after %d times, want 1 and 3", f.seen["slow"], f.seen["after"])
	}
}

// TestSingleCommandsRacingTheirCancellation: a lone caller runs 2,000 INCRs of fresh keys, each
// with a context that ends after a drawn 0 to 80 µs, so that cancellations land before, during and
// after the caller's own reads (and late ones after the read ended). Every INCR that succeeded
// got 1, every key ran at most once, the server never saw a key twice, and commands with a
// context that did not end keep working on the same connection afterwards.
func TestSingleCommandsRacingTheirCancellation(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	var mu sync.Mutex
	readers := map[int]int{}
	c, err := client.Connect(context.Background(), client.Options{
		Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}}, Dialer: readersDialer(&mu, readers)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	warmUntilTheCallerReads(t, c, &mu, readers)
	const n = 2000
	ok, unknown, definite := 0, 0, 0
	keys := make([]string, n)
	outcome := make([]int, n) // 1: OK, 2: unknown, 3: definite failure
	for i := range n {
		keys[i] = "race:" + strconv.Itoa(i)
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%81)*time.Microsecond)
		v, err := c.Incr(ctx, keys[i])
		cancel()
		switch {
		case err == nil:
			if v != 1 {
				t.Fatalf("INCR %s: %d, want 1 (a reply paired with the wrong command?)", keys[i], v)
			}
			ok, outcome[i] = ok+1, 1
		case errors.Is(err, client.ErrUnknownOutcome):
			unknown, outcome[i] = unknown+1, 2
		default:
			definite, outcome[i] = definite+1, 3
		}
	}
	t.Logf("%d INCRs: %d OK, %d unknown, %d definite failures", n, ok, unknown, definite)
	if unknown == 0 || ok == 0 {
		t.Fatalf("the cancellations cut %d commands short and let %d through: the test did not exercise both", unknown, ok)
	}
	for i := 1; i <= 20; i++ {
		if v, err := c.Incr(context.Background(), "race:after"); err != nil || v != int64(i) {
			t.Fatalf("INCR race:after #%d: %d %v", i, v, err)
		}
	}
	for from := 0; from < n; from += 500 {
		vs, err := c.MGet(context.Background(), keys[from:from+500]...)
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range vs {
			i := from + j
			switch {
			case outcome[i] == 1 && v.Value != "1":
				t.Errorf("%s reported OK, holds %q", keys[i], v.Value)
			case outcome[i] == 3 && v.Valid:
				t.Errorf("%s failed definitely, holds %q", keys[i], v.Value)
			case v.Valid && v.Value != "1":
				t.Errorf("%s holds %q: it ran more than once", keys[i], v.Value)
			}
		}
	}
}

// TestSingleCommandLostReplyWhileTheCallerReads: the no-replay rule holds when the caller reads
// its own reply. The server answers three INCRs, which the caller reads itself, then closes the
// connection without answering the fourth: that INCR ends with an unknown outcome at
// StageAwaitingReply, no command reaches the server twice, and the client recovers.
func TestSingleCommandLostReplyWhileTheCallerReads(t *testing.T) {
	f := startDropFake(t, 3)
	c, mu, readers := readersClient(t, f, time.Second)
	warmUntilTheCallerReads(t, c, mu, readers)
	me := callerGoroutine()
	before := readsOf(mu, readers, me)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if n, err := c.Incr(ctx, "k"+strconv.Itoa(i)); err != nil || n != 1 {
			t.Fatalf("INCR k%d: %d %v", i, n, err)
		}
	}
	if readsOf(mu, readers, me) == before {
		t.Fatal("the caller read none of the three replies itself: the test does not exercise its path")
	}
	_, err := c.Incr(ctx, "k3")
	var uo *client.UnknownOutcomeError
	if !errors.As(err, &uo) || uo.CommandName != "INCR" || uo.Stage != client.StageAwaitingReply {
		t.Fatalf("INCR k3: %v, want an unknown outcome awaiting its reply", err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("PING after the loss: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := 0; i < 4; i++ {
		if got := f.seen["k"+strconv.Itoa(i)]; got != 1 {
			t.Errorf("k%d reached the server %d times, want once", i, got)
		}
	}
}

// TestSingleCommandTimeoutWhileTheCallerReads: a caller reading its own reply stops at its
// command timeout. The server reads an INCR and never answers: the INCR ends with a
// *TimeoutError at StageAwaitingReply after the timeout (not before it, and not much later), it
// reached the server once, and Close returns.
func TestSingleCommandTimeoutWhileTheCallerReads(t *testing.T) {
	f := startDropFake(t, 0)
	f.stall = true
	const timeout = 200 * time.Millisecond
	c, mu, readers := readersClient(t, f, timeout)
	warmUntilTheCallerReads(t, c, mu, readers)
	start := time.Now()
	_, err := c.Incr(context.Background(), "stalled")
	elapsed := time.Since(start)
	var te *client.TimeoutError
	if !errors.As(err, &te) || te.CommandName != "INCR" || te.Diagnostics.Stage != client.StageAwaitingReply {
		t.Fatalf("INCR: %v, want a timeout awaiting its reply", err)
	}
	if elapsed < timeout || elapsed > 10*timeout {
		t.Fatalf("the timeout ended the INCR after %v, want about %v", elapsed, timeout)
	}
	f.mu.Lock()
	seen := f.seen["stalled"]
	f.mu.Unlock()
	if seen != 1 {
		t.Fatalf("the INCR reached the server %d times, want once", seen)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSingleCommandsReadByTheirCallerOnRedis: against a real redis-server, under RESP2 and
// RESP3, a lone caller reads its commands' replies itself, with a context that can be
// cancelled, and every typed result is what the same commands give through a client that never
// lends its read side (the idle-read watchdog on): strings, integers, maps and scored members.
func TestSingleCommandsReadByTheirCallerOnRedis(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, proto := range []client.Protocol{client.ProtocolRESP2, client.ProtocolRESP3} {
		t.Run(proto.String(), func(t *testing.T) {
			me := callerGoroutine()
			results := map[string][]string{}
			for _, watched := range []bool{false, true} {
				var mu sync.Mutex
				readers := map[int]int{}
				opts := client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}}, Protocol: proto,
					Dialer: readersDialer(&mu, readers)}
				if watched {
					opts.ConnectionIdleReadTimeout = time.Second
				}
				c, err := client.Connect(ctx, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if !watched {
					warmUntilTheCallerReads(t, c, &mu, readers)
				}
				prefix := "own:" + proto.String() + ":" + strconv.FormatBool(watched) + ":" // fresh keys for each client
				before := readsOf(&mu, readers, me)
				var got []string
				for i := 0; i < 20; i++ {
					k := prefix + strconv.Itoa(i)
					if err := c.Set(ctx, k, "v"+strconv.Itoa(i)); err != nil {
						t.Fatal(err)
					}
					v, ok, err := c.Get(ctx, k)
					n, ierr := c.Incr(ctx, k+":n")
					_, herr := c.HSet(ctx, k+":h", "f", "x", "g", strconv.Itoa(i))
					h, hgerr := c.HGetAll(ctx, k+":h")
					_, zerr := c.ZAdd(ctx, k+":z", client.ZMember{Member: "a", Score: float64(i)}, client.ZMember{Member: "b", Score: 0.5})
					z, zrerr := c.ZRangeWithScores(ctx, k+":z", 0, -1)
					if err := errors.Join(err, ierr, herr, hgerr, zerr, zrerr); err != nil || !ok {
						t.Fatalf("%s: %v (found %v)", k, err, ok)
					}
					got = append(got, v, strconv.FormatInt(n, 10), h["f"]+"/"+h["g"], strconv.Itoa(len(z))+z[0].Member)
				}
				mine := readsOf(&mu, readers, me) - before
				switch {
				case watched && mine != 0:
					t.Fatalf("the watched client's caller read %d replies itself, want none", mine)
				case !watched && mine < 70: // 140 commands; most read by the caller
					t.Fatalf("the caller read %d of 140 replies itself, want most of them", mine)
				}
				results[strconv.FormatBool(watched)] = got
			}
			if !reflect.DeepEqual(results["false"], results["true"]) {
				t.Fatalf("results differ:\nread by the caller: %v\nread by the reader: %v", results["false"], results["true"])
			}
		})
	}
}
