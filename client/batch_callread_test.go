package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
)

// callerGoroutine returns the calling goroutine's number, from the header of its stack trace.
func callerGoroutine() int {
	var buf [64]byte
	b := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.Atoi(string(b))
	return id
}

// readersConn records the goroutines that read replies from the socket.
type readersConn struct {
	net.Conn
	mu      *sync.Mutex
	readers map[int]int
}

func (c readersConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.readers[callerGoroutine()]++
		c.mu.Unlock()
	}
	return n, err
}

// readersDialer returns a dialer whose connections record, in readers (under mu), the goroutines
// that read replies from the socket.
func readersDialer(mu *sync.Mutex, readers map[int]int) func(context.Context, client.Endpoint) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, ep client.Endpoint) (net.Conn, error) {
		nc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)))
		if err != nil {
			return nil, err
		}
		return readersConn{Conn: nc, mu: mu, readers: readers}, nil
	}
}

// TestBatchLostReplyWhileTheCallerReads: a caller that runs pipelines one after another with a
// context that cannot be cancelled reads their replies on its own goroutine (the connection's
// caller-reads mode), and the no-replay rule holds there too: when the connection fails after
// the third reply of a five-command pipeline that the caller reads itself, the three answered
// commands keep their replies, each of the other two reports its own unknown outcome, and no
// command reaches the server twice. The test checks that the caller's goroutine did read
// replies from the socket (without the mode only the reader goroutine does).
func TestBatchLostReplyWhileTheCallerReads(t *testing.T) {
	f := startDropFake(t, 3)
	var mu sync.Mutex
	readers := map[int]int{}
	ctx := context.Background()
	c, err := client.Connect(ctx, client.Options{
		Endpoints: []client.Endpoint{f.endpoint()}, Protocol: client.ProtocolRESP2, Dialer: readersDialer(&mu, readers)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	me := callerGoroutine()
	// Pipelines of PINGs (the fake does not count them) until the caller reads one itself.
	for i := 0; ; i++ {
		var warm client.Batch
		pongs := []*client.Future[client.None]{warm.Ping(), warm.Ping()}
		if err := c.Pipeline(ctx, &warm); err != nil {
			t.Fatalf("warm-up pipeline: %v", err)
		}
		for _, p := range pongs {
			if err := p.Err(); err != nil {
				t.Fatalf("warm-up PING: %v", err)
			}
		}
		mu.Lock()
		mine := readers[me]
		mu.Unlock()
		if mine > 0 {
			break
		}
		if i == 200 {
			t.Fatal("the caller never read its own replies")
		}
	}

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
		var uo *client.UnknownOutcomeError
		if !errors.As(err, &uo) || uo.CommandName != "INCR" || uo.Stage != client.StageAwaitingReply {
			t.Errorf("entry %d, lost: %v, want its own unknown outcome", i, err)
		}
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := 0; i < 5; i++ {
		if n := f.seen[fmt.Sprintf("k%d", i)]; n > 1 || (i < 4 && n != 1) {
			t.Errorf("k%d reached the server %d times", i, n)
		}
	}
}

// TestPipelineCancelledWhileTheCallerReads: a pipeline whose caller reads its replies itself,
// with a context that ends while the third reply is late: the caller stops at once (not at the
// late reply), the two answered entries keep their replies, the three others report unknown
// outcomes from the context, and the late replies, read by the connection's reader goroutine,
// pair with their own commands: the next pipeline gets its own replies, and nothing ran twice.
func TestPipelineCancelledWhileTheCallerReads(t *testing.T) {
	f := startDropFake(t, 1000)
	f.slowKey, f.slowFor = "p2", 300*time.Millisecond
	var mu sync.Mutex
	readers := map[int]int{}
	c, err := client.Connect(context.Background(), client.Options{
		Endpoints: []client.Endpoint{f.endpoint()}, Protocol: client.ProtocolRESP2, Dialer: readersDialer(&mu, readers)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	warmUntilTheCallerReads(t, c, &mu, readers)
	me := callerGoroutine()
	before := readsOf(&mu, readers, me)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var b client.Batch
	var fs []*client.Future[int64]
	for i := 0; i < 5; i++ {
		fs = append(fs, b.Incr(fmt.Sprintf("p%d", i)))
	}
	start := time.Now()
	err = c.Pipeline(ctx, &b)
	if elapsed := time.Since(start); elapsed > 250*time.Millisecond {
		t.Fatalf("the context's end stopped the pipeline after %v, want about 50ms", elapsed)
	}
	if !errors.Is(err, client.ErrUnknownOutcome) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Pipeline: %v, want the first unknown outcome, from the context", err)
	}
	if readsOf(&mu, readers, me) == before {
		t.Fatal("the caller read none of the pipeline's replies itself: the test does not exercise its path")
	}
	checkAnsweredThenTimedOut(t, fs, 2)
	var next client.Batch
	again := []*client.Future[int64]{next.Incr("q"), next.Incr("q")}
	if err := c.Pipeline(context.Background(), &next); err != nil {
		t.Fatalf("the next pipeline: %v", err)
	}
	for i, fu := range again {
		if n, err := fu.Result(); err != nil || n != int64(i+1) {
			t.Fatalf("the next pipeline's entry %d: %d %v, want %d", i, n, err, i+1)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := 0; i < 5; i++ {
		if got := f.seen[fmt.Sprintf("p%d", i)]; got != 1 {
			t.Errorf("p%d reached the server %d times, want once", i, got)
		}
	}
}
