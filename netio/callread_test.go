package netio_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// groupOf builds a group of commands, each from its arguments.
func groupOf(cmds ...[]string) ([]*cmd, []*engine.Command) {
	group := make([]*cmd, len(cmds))
	unit := make([]*engine.Command, len(cmds))
	for i, args := range cmds {
		group[i] = newCmd(args...)
		unit[i] = &group[i].Command
	}
	return group, unit
}

// incrs returns n INCRs of key.
func incrs(key string, n int) [][]string {
	out := make([][]string, n)
	for i := range out {
		out[i] = []string{"INCR", key}
	}
	return out
}

// offer sends a group and fails the test if the connection refuses it.
func offer(t *testing.T, conn *netio.Conn, unit []*engine.Command) {
	t.Helper()
	if !conn.OfferGroup(unit) {
		t.Fatal("the open connection refused a group")
	}
}

// lendSide runs one group whose caller asks to read and cannot (the reader goroutine owns the
// side), and waits until the reader goroutine parks with its side free, as it does after such a
// request once nothing is in flight.
func lendSide(t *testing.T, conn *netio.Conn) {
	t.Helper()
	// The request counts only for a group written directly, on an idle connection with its
	// writer parked: a fresh connection's writer may not have parked yet.
	for range 100 {
		group, unit := groupOf([]string{"PING"})
		offer(t, conn, unit)
		conn.ReadOwn(context.Background(), unit[0], unit[0], time.Time{})
		group[0].wait(t)
		for range 100 {
			if netio.ReadSideFree(conn) {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	t.Fatal("the reader goroutine never freed its read side")
}

// TestCallerReadsItsOwnGroup: a lone caller that writes groups one after another on an idle
// connection reads their replies itself after the first (which asks the reader goroutine to
// lend its side), and every reply pairs with its command in order. Before the mode, ReadOwn did
// not exist and the reader goroutine completed every command (CallerReads stays 0 with
// conn_callread.go's ReadOwn returning false at once).
func TestCallerReadsItsOwnGroup(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	conn := mustConnectDefault(t, tcp(t, srv.Addr()))
	const rounds, size = 50, 20
	next := int64(1)
	for range rounds {
		group, unit := groupOf(incrs("callread:n", size)...)
		offer(t, conn, unit)
		conn.ReadOwn(context.Background(), unit[0], unit[len(unit)-1], time.Now().Add(waitBound))
		for _, c := range group {
			c.wait(t)
			if c.Err != nil || c.Reply.Int != next {
				t.Fatalf("INCR: %v %s, want %d", c.Err, c.Reply.String(), next)
			}
			next++
		}
	}
	// Between two groups the side is free for a millisecond; a loaded machine may let it go
	// back to the reader goroutine now and then, so most, not all, groups are the caller's.
	if got := netio.CallerReads(conn); got < rounds/2 {
		t.Fatalf("the caller read %d of %d groups itself, want most of them", got, rounds)
	}
	// Single commands, which no caller reads, and a group whose caller does not ask, are read
	// by the reader goroutine, which takes its side back.
	for i := range 5 {
		if v := do(t, conn, "INCR", "callread:n"); v.Int != next {
			t.Fatalf("INCR %d: %s, want %d", i, v.String(), next)
		}
		next++
	}
	lendSide(t, conn)
	group, unit := groupOf(incrs("callread:n", 3)...)
	offer(t, conn, unit)
	for _, c := range group {
		if c.wait(t); c.Err != nil || c.Reply.Int != next {
			t.Fatalf("unread group: INCR %v %s, want %d", c.Err, c.Reply.String(), next)
		}
		next++
	}
}

// TestCallerReadHandsBackToTheReader: while a caller reads its group (blocked on a BLPOP), a
// second caller's command goes through the writer; once the first caller's group completes,
// the read side goes back to the reader goroutine, which reads the second reply. Nothing is
// lost or paired with the wrong command.
func TestCallerReadHandsBackToTheReader(t *testing.T) {
	netio.SetParkIdle(t, time.Minute) // the side stays free until the test's group takes it
	srv := redistest.Start(t, redistest.Config{})
	conn := mustConnectDefault(t, tcp(t, srv.Addr()))
	lendSide(t, conn)
	before := netio.CallerReads(conn)

	group, unit := groupOf([]string{"PING"}, []string{"BLPOP", "callread:list", "0"})
	offer(t, conn, unit)
	read := make(chan bool, 1)
	go func() { read <- conn.ReadOwn(context.Background(), unit[0], unit[1], time.Now().Add(waitBound)) }()
	if !waitFor(func() bool { return netio.CallerReads(conn) > before }) {
		t.Fatal("the caller did not take the free read side")
	}
	incr := newCmd("INCR", "callread:other")
	conn.Send(&incr.Command)
	other := mustConnectDefault(t, tcp(t, srv.Addr()))
	do(t, other, "LPUSH", "callread:list", "x")
	select {
	case ok := <-read:
		if !ok {
			t.Fatal("ReadOwn returned false, want its group complete")
		}
	case <-time.After(waitBound):
		t.Fatal("ReadOwn did not return")
	}
	if group[0].wait(t); string(group[0].Reply.Str) != "PONG" {
		t.Fatalf("PING: %v %s", group[0].Err, group[0].Reply.String())
	}
	if group[1].wait(t); group[1].Err != nil || group[1].Reply.Kind != resp.KindArray {
		t.Fatalf("BLPOP: %v %s", group[1].Err, group[1].Reply.String())
	}
	if incr.wait(t); incr.Err != nil || incr.Reply.Int != 1 {
		t.Fatalf("the second caller's INCR: %v %s", incr.Err, incr.Reply.String())
	}
	if v := do(t, conn, "PING"); string(v.Str) != "PONG" {
		t.Fatalf("PING after: %s", v.String())
	}
}

// gate is a loopback proxy in front of a server whose replies it can hold back and whose
// connection it can cut.
type gate struct {
	l      net.Listener
	up     string
	mu     sync.Mutex
	allow  int  // bytes of replies still let through while held
	held   bool // replies beyond allow wait
	cond   *sync.Cond
	conns  []net.Conn
	closed bool
	wg     sync.WaitGroup
}

func startGate(t *testing.T, upstream string) (*gate, engine.Endpoint) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{l: l, up: upstream}
	g.cond = sync.NewCond(&g.mu)
	g.wg.Add(1)
	go g.accept()
	t.Cleanup(func() {
		_ = l.Close()
		g.cut()
		g.wg.Wait()
	})
	return g, tcp(t, l.Addr().String())
}

func (g *gate) accept() {
	defer g.wg.Done()
	for {
		c, err := g.l.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", g.up)
		if err != nil {
			_ = c.Close()
			continue
		}
		g.mu.Lock()
		g.conns = append(g.conns, c, s)
		g.mu.Unlock()
		g.wg.Add(2)
		go func() { defer g.wg.Done(); _, _ = io.Copy(s, c); _ = s.Close() }()
		go func() { defer g.wg.Done(); g.replies(c, s); _ = c.Close() }()
	}
}

// replies copies the server's bytes to the client, byte by byte while held.
func (g *gate) replies(c, s net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		for p := buf[:n]; len(p) > 0; {
			g.mu.Lock()
			for g.held && g.allow == 0 && !g.closed {
				g.cond.Wait()
			}
			if g.closed {
				g.mu.Unlock()
				return
			}
			k := len(p)
			if g.held {
				k = min(k, g.allow)
				g.allow -= k
			}
			g.mu.Unlock()
			if _, werr := c.Write(p[:k]); werr != nil {
				return
			}
			p = p[k:]
		}
		if err != nil {
			return
		}
	}
}

// hold lets n more bytes of replies through, then holds the rest.
func (g *gate) hold(n int) {
	g.mu.Lock()
	g.held, g.allow = true, n
	g.mu.Unlock()
}

// release lets every reply through.
func (g *gate) release() {
	g.mu.Lock()
	g.held = false
	g.cond.Broadcast()
	g.mu.Unlock()
}

// cut closes every proxied connection.
func (g *gate) cut() {
	g.mu.Lock()
	g.closed = true
	for _, c := range g.conns {
		_ = c.Close()
	}
	g.cond.Broadcast()
	g.mu.Unlock()
}

// TestCallerReadStoppedMidReplyResumes: a caller whose read stops in the middle of a reply, at
// its deadline or at its context's end (the context's watch moves the socket's read deadline
// into the past), returns at that moment without failing the connection; the reader goroutine
// continues the reply where the caller's read stopped, completes the command with the whole
// value, and the connection serves the next command. Without the resumable hand-back (a caller
// treating its timeout as a failure) the connection would fail and the GET would end with an
// unknown outcome; without the context's watch the read would block until the reply came.
func TestCallerReadStoppedMidReplyResumes(t *testing.T) {
	for _, byContext := range []bool{false, true} {
		t.Run(map[bool]string{false: "deadline", true: "context"}[byContext], func(t *testing.T) {
			netio.SetParkIdle(t, time.Minute) // the side stays free until the test's group takes it
			srv := redistest.Start(t, redistest.Config{})
			g, ep := startGate(t, srv.Addr())
			conn, s := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), ep)
			value := strings.Repeat("v", 20<<10)
			do(t, conn, "SET", "callread:big", value)
			lendSide(t, conn)

			group, unit := groupOf([]string{"GET", "callread:big"})
			g.hold(1000) // the header and part of the payload
			offer(t, conn, unit)
			const stopAt = 200 * time.Millisecond
			ctx, deadline := context.Background(), time.Now().Add(stopAt)
			if byContext {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, stopAt)
				defer cancel()
				deadline = time.Time{}
			}
			start := time.Now()
			if conn.ReadOwn(ctx, unit[0], unit[0], deadline) {
				t.Fatal("ReadOwn reported the GET complete while its reply was held")
			}
			if d := time.Since(start); d < stopAt || d > 10*stopAt {
				t.Fatalf("ReadOwn returned after %v, want soon after %v", d, stopAt)
			}
			if group[0].completed() {
				t.Fatal("the GET completed with a partial reply")
			}
			g.release()
			group[0].wait(t)
			if group[0].Err != nil || string(group[0].Reply.Str) != value {
				t.Fatalf("GET after the hand-back: err %v, %d bytes, want the %d-byte value", group[0].Err, len(group[0].Reply.Str), len(value))
			}
			if v := do(t, conn, "PING"); string(v.Str) != "PONG" {
				t.Fatalf("PING after: %s", v.String())
			}
			if n := s.losts.Load(); n != 0 {
				t.Fatalf("Lost reported %d times, want none", n)
			}
		})
	}
}

// TestCallerReadFailureFailsOnce: the connection breaks while a caller reads its group. Each
// command completes once, with an unknown outcome (written, no reply), and Lost is reported
// exactly once, by the reader goroutine that takes the failure over.
func TestCallerReadFailureFailsOnce(t *testing.T) {
	netio.SetParkIdle(t, time.Minute) // the side stays free until the test's group takes it
	srv := redistest.Start(t, redistest.Config{})
	g, ep := startGate(t, srv.Addr())
	conn, s := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), ep)
	lendSide(t, conn)

	group, unit := groupOf(incrs("callread:lost", 3)...)
	g.hold(0)
	offer(t, conn, unit)
	read := make(chan bool, 1)
	go func() { read <- conn.ReadOwn(context.Background(), unit[0], unit[2], time.Time{}) }()
	if !waitFor(func() bool { return netio.CallerReads(conn) > 0 }) {
		t.Fatal("the caller did not take the free read side")
	}
	g.cut()
	select {
	case ok := <-read:
		if ok {
			t.Fatal("ReadOwn reported the group complete")
		}
	case <-time.After(waitBound):
		t.Fatal("ReadOwn did not return after the connection broke")
	}
	for _, c := range group {
		c.wait(t)
		var ioErr *netio.IOError
		if !errors.As(c.Err, &ioErr) || !c.MaybeSent() {
			t.Fatalf("%s: err %v (maybe sent %v), want an unknown outcome", c.Name, c.Err, c.MaybeSent())
		}
	}
	s.awaitLost(t)
	time.Sleep(50 * time.Millisecond)
	if n := s.losts.Load(); n != 1 {
		t.Fatalf("Lost reported %d times, want once", n)
	}
}

// TestParkedReaderWatchesTheIdleConnection: after a caller read its group, the reader goroutine
// is parked off the socket; it takes its side back within about a millisecond, so a server
// closing the idle connection is still noticed (Lost), and Close does not wait for anything.
func TestParkedReaderWatchesTheIdleConnection(t *testing.T) {
	netio.SetParkIdle(t, 50*time.Millisecond)
	srv := redistest.Start(t, redistest.Config{})
	g, ep := startGate(t, srv.Addr())
	conn, s := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), ep)
	lendSide(t, conn)
	g.cut()
	s.awaitLost(t) // after the reader goroutine took its side back (50 ms)

	// Close of a connection whose reader is parked (for a minute) returns: the failure gives the
	// side back to the reader goroutine, which completes the connection's end.
	netio.SetParkIdle(t, time.Minute)
	conn2, _ := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), tcp(t, srv.Addr()))
	lendSide(t, conn2)
	closed := make(chan struct{})
	go func() { conn2.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(waitBound):
		t.Fatal("Close of a connection with a parked reader did not return")
	}
}

// TestOverlappingCallersStopTheLending: once the writer puts a command in flight behind
// another caller's (callers overlap), requests to read are ignored for a while: the reader
// goroutine stays on the socket and no caller reads, since with several callers the side would
// mostly travel back and forth. Without the countdown the second of these groups would be read
// by its caller.
func TestOverlappingCallersStopTheLending(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	conn := mustConnectDefault(t, tcp(t, srv.Addr()))
	blpop := newCmd("BLPOP", "callread:busy", "0")
	conn.Send(&blpop.Command)
	if !waitFor(func() bool { return blpop.Stage() == engine.StageAwaitingReply }) {
		t.Fatal("the BLPOP was never written")
	}
	ping := newCmd("PING")
	conn.Send(&ping.Command) // behind the BLPOP: the writer writes it with a command in flight
	other := mustConnectDefault(t, tcp(t, srv.Addr()))
	do(t, other, "LPUSH", "callread:busy", "x")
	blpop.wait(t)
	ping.wait(t)
	if got := netio.ReadBusy(conn); got == 0 {
		t.Fatal("overlapping callers did not stop the lending")
	}
	const rounds = 20
	for range rounds {
		group, unit := groupOf([]string{"PING"}, []string{"PING"})
		offer(t, conn, unit)
		conn.ReadOwn(context.Background(), unit[0], unit[1], time.Time{})
		group[1].wait(t)
	}
	if got := netio.CallerReads(conn); got != 0 {
		t.Fatalf("callers read %d groups right after callers overlapped, want none", got)
	}
	if got := netio.ReadBusy(conn); got == 0 || got > 256-rounds {
		t.Fatalf("%d requests left to ignore after %d ignored", got, rounds)
	}
}

// TestMayReadOnlyTheLastDirectGroup: MayRead admits the caller of the group its caller wrote
// directly on an idle connection (and ReadOwn then reads it), and turns away the caller of a
// group the writer wrote behind a command still in flight, whose replies the reader goroutine
// reads: the engine then neither asks ReadOwn nor computes a deadline for it.
func TestMayReadOnlyTheLastDirectGroup(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	conn := mustConnectDefault(t, tcp(t, srv.Addr()))
	lendSide(t, conn)
	for i := 0; ; i++ {
		group, unit := groupOf([]string{"PING"}, []string{"PING"})
		if !conn.OfferOwnGroup(unit) {
			t.Fatal("the open connection refused a group")
		}
		if !conn.MayRead(unit[0]) {
			t.Fatal("MayRead turned away the caller of the group it just wrote directly")
		}
		read := conn.ReadOwn(context.Background(), unit[0], unit[1], time.Now().Add(waitBound))
		group[1].wait(t)
		if read {
			break
		}
		if i == 100 {
			t.Fatal("the caller of a group written directly never read it")
		}
	}
	blpop := newCmd("BLPOP", "callread:mayread", "0")
	conn.Send(&blpop.Command)
	if !waitFor(func() bool { return blpop.Stage() == engine.StageAwaitingReply }) {
		t.Fatal("the BLPOP was never written")
	}
	group, unit := groupOf([]string{"PING"})
	offer(t, conn, unit) // behind the BLPOP: the writer writes it
	if conn.MayRead(unit[0]) {
		t.Fatal("MayRead admitted the caller of a group written behind a command in flight")
	}
	do(t, mustConnectDefault(t, tcp(t, srv.Addr())), "LPUSH", "callread:mayread", "x")
	blpop.wait(t)
	group[0].wait(t)
}
