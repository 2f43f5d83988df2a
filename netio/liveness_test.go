package netio_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
)

// livenessConfig is a RESP2 transport without setup commands: its handshake sends nothing, so a
// fake server that reads everything and never answers (stall) is a peer gone quiet.
func livenessConfig(idle, stall time.Duration) netio.TransportConfig {
	return netio.TransportConfig{
		Handshake:         netio.HandshakeConfig{Protocol: netio.ProtocolRESP2},
		IdleReadTimeout:   idle,
		WriteStallTimeout: stall,
	}
}

func TestIdleReadTimeoutAbortsWhenRepliesArePending(t *testing.T) {
	const bound = 100 * time.Millisecond
	_, ep := startFake(t, stall)
	conn, s := mustConnect(t, netio.NewTransport(livenessConfig(bound, 0)), ep)

	// An idle connection without pending replies stays open however long it is quiet.
	time.Sleep(3 * bound)
	if s.losts.Load() != 0 || conn.Err() != nil {
		t.Fatalf("idle connection without pending replies was aborted: %v", conn.Err())
	}

	// New commands do not postpone the bound: one every bound/4 while the peer is silent.
	start := time.Now()
	first := newCmd("GET", "k")
	conn.Send(&first.Command)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(bound / 4):
				c := newCmd("GET", "k")
				conn.Send(&c.Command)
			}
		}
	}()
	err := s.awaitLost(t)
	elapsed := time.Since(start)
	var le *netio.LivenessError
	var ioe *netio.IOError
	if !errors.As(err, &le) || le.Op != "read" || le.Budget != bound || !errors.As(err, &ioe) || !ioe.Timeout() {
		t.Fatalf("Lost with %v, want an *IOError caused by a read *LivenessError", err)
	}
	if elapsed < bound || elapsed > bound+bound*3/2+200*time.Millisecond {
		t.Fatalf("aborted after %v, want about %v", elapsed, bound)
	}
	first.wait(t)
	if first.Err == nil || !first.MaybeSent() {
		t.Fatalf("the written command ended with %v (maybe sent %v), want an unknown outcome", first.Err, first.MaybeSent())
	}
	if !strings.Contains(err.Error(), "idle read timeout") {
		t.Fatalf("error does not name the bound: %v", err)
	}
}

func TestIdleReadTimeoutOffWaitsForever(t *testing.T) {
	_, ep := startFake(t, stall)
	conn, s := mustConnect(t, netio.NewTransport(livenessConfig(0, 0)), ep)
	c := newCmd("GET", "k")
	conn.Send(&c.Command)
	time.Sleep(300 * time.Millisecond)
	if c.completed() || s.losts.Load() != 0 {
		t.Fatalf("without a bound the command must stay pending (err %v)", c.Err)
	}
}

// TestIdleReadTimeoutKeepsAnsweringConnectionAlive: replies that keep arriving, each within the
// bound, never trip it, even though the connection always has replies pending.
//
// The bound is ten times the server's 50 ms answer: at three times (150 ms) the test failed on
// a loaded machine ("no reply byte for 150ms with replies pending", 1 of 15 runs with the
// machine's load at 9), where the server or the test process can be left without a CPU for
// 100 ms. The run lasts four bounds, so the connection still has replies pending for far
// longer than the bound.
func TestIdleReadTimeoutKeepsAnsweringConnectionAlive(t *testing.T) {
	const bound = 500 * time.Millisecond
	srv := redistest.Start(t, redistest.Config{})
	tr := netio.NewTransport(netio.TransportConfig{IdleReadTimeout: bound})
	conn, s := mustConnect(t, tr, tcp(t, srv.Addr()))
	deadline := time.Now().Add(4 * bound)
	for time.Now().Before(deadline) {
		// DEBUG SLEEP answers after 50 ms: pending the whole time, never idle for the bound.
		c := newCmd("DEBUG", "SLEEP", "0.05")
		conn.Send(&c.Command)
		if c.wait(t); c.Err != nil {
			t.Fatalf("DEBUG SLEEP: %v", c.Err)
		}
	}
	if s.losts.Load() != 0 {
		t.Fatal("a connection that kept answering was aborted")
	}
}

// TestIdleReadTimeoutWithPausedRedis: a real server stopped with SIGSTOP keeps the socket open
// and answers nothing; the bound aborts the connection, and the written command's outcome is
// unknown.
func TestIdleReadTimeoutWithPausedRedis(t *testing.T) {
	const bound = 200 * time.Millisecond
	srv := redistest.Start(t, redistest.Config{})
	tr := netio.NewTransport(netio.TransportConfig{IdleReadTimeout: bound})
	conn, s := mustConnect(t, tr, tcp(t, srv.Addr()))
	if v := do(t, conn, "PING"); string(v.Str) != "PONG" {
		t.Fatalf("PING replied %v", v)
	}
	srv.Pause()
	defer srv.Resume()
	start := time.Now()
	c := newCmd("INCR", "counter")
	conn.Send(&c.Command)
	err := s.awaitLost(t)
	if elapsed := time.Since(start); elapsed < bound || elapsed > bound+time.Second {
		t.Fatalf("aborted after %v, want about %v", elapsed, bound)
	}
	if !errors.As(err, new(*netio.LivenessError)) {
		t.Fatalf("Lost with %v", err)
	}
	c.wait(t)
	if !c.MaybeSent() || c.Err == nil {
		t.Fatalf("INCR ended with %v, want an unknown outcome", c.Err)
	}
}

// TestWriteStallTimeoutWithPausedRedis: a write larger than the socket buffers to a stopped
// server makes no progress; the write bound aborts the connection, while the idle-read bound is
// off.
func TestWriteStallTimeoutWithPausedRedis(t *testing.T) {
	const bound = 200 * time.Millisecond
	srv := redistest.Start(t, redistest.Config{})
	tr := netio.NewTransport(netio.TransportConfig{WriteStallTimeout: bound})
	conn, s := mustConnect(t, tr, tcp(t, srv.Addr()))
	srv.Pause()
	defer srv.Resume()
	big := newCmd("SET", "big", strings.Repeat("x", 64<<20))
	start := time.Now()
	conn.Send(&big.Command)
	err := s.awaitLost(t)
	if elapsed := time.Since(start); elapsed < bound || elapsed > 30*time.Second { // the upper bound only catches a hang: -race on a busy machine is slow
		t.Fatalf("aborted after %v", elapsed)
	}
	var le *netio.LivenessError
	if !errors.As(err, &le) || le.Op != "write" || le.Budget != bound {
		t.Fatalf("Lost with %v, want a write *LivenessError", err)
	}
	big.wait(t)
	if big.FinalStage() != engine.StageWriting || !big.MaybeSent() {
		t.Fatalf("the stalled SET ended at %v, want writing (an unknown outcome)", big.FinalStage())
	}
}

// TestWriteStallOffWaits: without the write bound a stalled write waits.
func TestWriteStallOffWaits(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	conn, s := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), tcp(t, srv.Addr()))
	srv.Pause()
	big := newCmd("SET", "big", strings.Repeat("x", 64<<20))
	conn.Send(&big.Command)
	time.Sleep(500 * time.Millisecond)
	if big.completed() || s.losts.Load() != 0 {
		t.Fatalf("without a write bound the write must wait (err %v)", big.Err)
	}
	srv.Resume()
	if big.wait(t); big.Err != nil {
		t.Fatalf("SET after resume: %v", big.Err)
	}
}

// TestOfferRefusesWithoutCompleting: a draining or closed connection refuses an offered command
// and leaves it untouched, so that the engine can route it elsewhere.
func TestOfferRefusesWithoutCompleting(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	conn, _ := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), tcp(t, srv.Addr()))
	ok := newCmd("PING")
	if !conn.Offer(&ok.Command) {
		t.Fatal("an open connection refused an offered command")
	}
	ok.wait(t)
	conn.Drain()
	refused := newCmd("PING")
	if conn.Offer(&refused.Command) {
		t.Fatal("a draining connection accepted an offered command")
	}
	if refused.completed() || refused.Stage() != engine.StageBuffered {
		t.Fatalf("a refused command was touched: stage %v", refused.Stage())
	}
}

// TestIdleReadTimeoutLingeringDeadline: the read deadline is re-armed lazily, so one may linger
// after the replies it guarded arrived. It never aborts an idle connection, and when new replies
// become pending shortly before it expires, the connection still gets the whole bound.
func TestIdleReadTimeoutLingeringDeadline(t *testing.T) {
	const bound = 200 * time.Millisecond
	srv := redistest.Start(t, redistest.Config{})
	tr := netio.NewTransport(netio.TransportConfig{IdleReadTimeout: bound})
	conn, s := mustConnect(t, tr, tcp(t, srv.Addr()))
	do(t, conn, "PING")
	time.Sleep(3 * bound) // the lingering deadline expires with nothing pending
	if s.losts.Load() != 0 {
		t.Fatal("a lingering deadline aborted an idle connection")
	}
	do(t, conn, "PING")
	time.Sleep(bound * 9 / 10) // within the lingering deadline's last quarter
	srv.Pause()
	defer srv.Resume()
	start := time.Now()
	c := newCmd("PING")
	conn.Send(&c.Command)
	s.awaitLost(t)
	if elapsed := time.Since(start); elapsed < bound {
		t.Fatalf("aborted %v after the replies became pending, before the bound %v", elapsed, bound)
	}
}
