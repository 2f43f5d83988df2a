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

// TestSingleCommandsReadByTheirCaller: a lone caller whose context cannot be cancelled reads its
// commands' replies on its own goroutine, 50 commands in a row; a caller with a context that can
// be cancelled never does (a read blocked on the socket would not watch its context), and gets
// the same replies from the reader goroutine.
func TestSingleCommandsReadByTheirCaller(t *testing.T) {
	f := startDropFake(t, 1000)
	c, mu, readers := readersClient(t, f, time.Second)
	warmUntilTheCallerReads(t, c, mu, readers)
	me := callerGoroutine()
	before := readsOf(mu, readers, me)
	for i := 1; i <= 50; i++ {
		n, err := c.Incr(context.Background(), "own")
		if err != nil || n != int64(i) {
			t.Fatalf("INCR %d: %d %v", i, n, err)
		}
	}
	mine := readsOf(mu, readers, me) - before
	if mine < 25 {
		t.Fatalf("the caller read %d replies of 50 itself, want most of them", mine)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before = readsOf(mu, readers, me)
	for i := 51; i <= 100; i++ {
		n, err := c.Incr(ctx, "own")
		if err != nil || n != int64(i) {
			t.Fatalf("INCR %d with a cancellable context: %d %v", i, n, err)
		}
	}
	if got := readsOf(mu, readers, me) - before; got != 0 {
		t.Fatalf("a caller with a cancellable context read %d replies itself, want none", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if got := f.seen["own"]; got != 100 {
		t.Fatalf("the server ran %d INCRs, want 100", got)
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
// RESP3, a lone caller with a context that cannot be cancelled reads its commands' replies
// itself, and every typed result is what the same commands give a caller that waits for the
// connection's reader (a cancellable context): strings, integers, maps and scored members.
func TestSingleCommandsReadByTheirCallerOnRedis(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	for _, proto := range []client.Protocol{client.ProtocolRESP2, client.ProtocolRESP3} {
		t.Run(proto.String(), func(t *testing.T) {
			var mu sync.Mutex
			readers := map[int]int{}
			c, err := client.Connect(context.Background(), client.Options{
				Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}}, Protocol: proto,
				Dialer: readersDialer(&mu, readers)})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			warmUntilTheCallerReads(t, c, &mu, readers)
			cancellable, cancel := context.WithCancel(context.Background())
			defer cancel()
			prefix := "own:" + proto.String() + ":"
			results := map[string][]string{}
			me := callerGoroutine()
			for pass, ctx := range []context.Context{context.Background(), cancellable} {
				before := readsOf(&mu, readers, me)
				var got []string
				for i := 0; i < 20; i++ {
					k := prefix + strconv.Itoa(pass) + ":" + strconv.Itoa(i) // fresh keys in each pass
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
				if ctx == cancellable {
					if mine != 0 {
						t.Fatalf("with a cancellable context the caller read %d replies itself, want none", mine)
					}
					results["cancellable"] = got
				} else {
					if mine < 70 { // 140 commands; most read by the caller
						t.Fatalf("the caller read %d of 140 replies itself, want most of them", mine)
					}
					results["own"] = got
				}
			}
			if !reflect.DeepEqual(results["own"], results["cancellable"]) {
				t.Fatalf("results differ:\nread by the caller: %v\nread by the reader: %v", results["own"], results["cancellable"])
			}
		})
	}
}
