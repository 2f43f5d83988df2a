package netio_test

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// Adversarial cases of the caller-reads mode (conn_callread.go): the connection ends or drains
// while a caller holds the read side, and the mode stays off where the reader goroutine has
// other duties.

// readingBLPOP lends conn's read side, writes a group PING, BLPOP key 0 directly and lets a
// caller read it on its own goroutine. It returns once the caller holds the side and the PING
// completed, so that the caller is blocked in the read of the BLPOP's reply; read receives what
// ReadOwn returned.
func readingBLPOP(t *testing.T, conn *netio.Conn, key string) (group []*cmd, read chan bool) {
	t.Helper()
	lendSide(t, conn)
	before := netio.CallerReads(conn)
	group, unit := groupOf([]string{"PING"}, []string{"BLPOP", key, "0"})
	offer(t, conn, unit)
	read = make(chan bool, 1)
	go func() { read <- conn.ReadOwn(context.Background(), unit[0], unit[1], time.Time{}) }()
	if !waitFor(func() bool { return netio.CallerReads(conn) > before }) {
		t.Fatal("the caller did not take the free read side")
	}
	if group[0].wait(t); group[0].Err != nil || string(group[0].Reply.Str) != "PONG" {
		t.Fatalf("PING: %v %s", group[0].Err, group[0].Reply.String())
	}
	return group, read
}

// readResult waits for what ReadOwn returned.
func readResult(t *testing.T, read chan bool) bool {
	t.Helper()
	select {
	case ok := <-read:
		return ok
	case <-time.After(waitBound):
		t.Fatal("ReadOwn did not return")
		return false
	}
}

// TestCallerReadCloseWhileReading: Close while a caller, without a deadline, is blocked reading
// its group. Close returns (the caller's read fails on the closed socket and gives the side
// back to the reader goroutine, which completes the connection's end), the command the caller
// was waiting for ends closed with an unknown outcome (it was written), nothing reports Lost and
// no goroutine of the connection outlives it. If ReadOwn left the side free after a failure
// instead of giving it back, the parked reader would never run finish and Close would hang.
func TestCallerReadCloseWhileReading(t *testing.T) {
	netio.SetParkIdle(t, time.Minute) // the side stays free until the test's group takes it
	srv := redistest.Start(t, redistest.Config{})
	base := runtime.NumGoroutine()
	conn, s := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), tcp(t, srv.Addr()))
	group, read := readingBLPOP(t, conn, "callrev:close")

	closed := make(chan struct{})
	go func() { conn.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(waitBound):
		t.Fatal("Close did not return while a caller read")
	}
	if readResult(t, read) {
		t.Fatal("ReadOwn reported the BLPOP complete after Close")
	}
	blpop := group[1].wait(t)
	if !errors.Is(blpop.Err, netio.ErrClosed) || !blpop.MaybeSent() {
		t.Fatalf("BLPOP: err %v (maybe sent %v), want closed with an unknown outcome", blpop.Err, blpop.MaybeSent())
	}
	late := newCmd("PING")
	conn.Send(&late.Command)
	if late.wait(t); !errors.Is(late.Err, netio.ErrClosed) || late.MaybeSent() {
		t.Fatalf("PING after Close: err %v (maybe sent %v), want closed, never sent", late.Err, late.MaybeSent())
	}
	if n := s.losts.Load(); n != 0 {
		t.Fatalf("Lost reported %d times after Close, want none", n)
	}
	deadline := time.Now().Add(waitBound)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines outlived the closed connection:\n%s", n-base, buf[:runtime.Stack(buf, true)])
	}
}

// TestCallerReadDrainWhileReading: Drain, and DrainMove (a MOVING handoff), while a caller
// reads its group. A command sent after the drain ends at once, never sent. The group written
// directly is never handed back by DrainMove (its bytes left: it must never be replayed on
// another connection); the caller reads its reply once the server answers, and the connection
// then closes on its own (the caller's handle sees the drain complete), without a Lost.
func TestCallerReadDrainWhileReading(t *testing.T) {
	netio.SetParkIdle(t, time.Minute)
	srv := redistest.Start(t, redistest.Config{})
	other := mustConnectDefault(t, tcp(t, srv.Addr()))
	for _, move := range []bool{false, true} {
		name := "Drain"
		if move {
			name = "DrainMove"
		}
		t.Run(name, func(t *testing.T) {
			conn, s := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), tcp(t, srv.Addr()))
			key := "callrev:drain:" + name
			group, read := readingBLPOP(t, conn, key)
			if move {
				if moved := conn.DrainMove(); len(moved) != 0 {
					t.Fatalf("DrainMove handed back %d commands written directly, want none", len(moved))
				}
			} else {
				conn.Drain()
			}
			late := newCmd("PING")
			conn.Send(&late.Command)
			if late.wait(t); !errors.Is(late.Err, netio.ErrClosed) || late.MaybeSent() {
				t.Fatalf("PING after the drain: err %v (maybe sent %v), want closed, never sent", late.Err, late.MaybeSent())
			}
			if conn.Stopped() {
				t.Fatal("the connection stopped with the caller's BLPOP unanswered")
			}
			do(t, other, "LPUSH", key, "x")
			if !readResult(t, read) {
				t.Fatal("ReadOwn did not report the drained group complete")
			}
			if blpop := group[1].wait(t); blpop.Err != nil || blpop.Reply.Kind != resp.KindArray {
				t.Fatalf("BLPOP: %v %s", blpop.Err, blpop.Reply.String())
			}
			if !waitFor(conn.Stopped) {
				t.Fatal("the drained connection did not close")
			}
			if n := s.losts.Load(); n != 0 {
				t.Fatalf("a drained connection reported Lost %d times", n)
			}
		})
	}
}

// TestCallerReadOffWhereTheReaderHasDuties: the mode is off on a connection with the idle-read
// watchdog (which owns the read deadline), a push handler or maintenance notices (both promised
// to the reader goroutine): a caller that asks to read is never lent the side, however often it
// asks, and its replies all come through the reader goroutine. A connection without any of them
// lends its side under the same steps, so the test would see a lending it should not.
func TestCallerReadOffWhereTheReaderHasDuties(t *testing.T) {
	netio.SetParkIdle(t, time.Minute) // a lent side would stay free: the next group takes it
	f := redistest.StartFake(t, func(c *redistest.FakeConn, args []string) {
		if !c.Standard(args) {
			c.Reply(resp.SimpleString("OK"))
		}
	})
	cases := []struct {
		name  string
		cfg   netio.TransportConfig
		lends bool
	}{
		{name: "plain", lends: true},
		{name: "idle-read", cfg: netio.TransportConfig{IdleReadTimeout: time.Minute}},
		{name: "push", cfg: netio.TransportConfig{Push: func(resp.Value) {}}},
		{name: "maintenance", cfg: netio.TransportConfig{
			Handshake:   netio.HandshakeConfig{Maintenance: netio.MaintAuto},
			Maintenance: fsm.MaintConfig{RelaxedTimeout: time.Second, WindowTimeout: time.Minute},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn, _ := mustConnect(t, netio.NewTransport(tc.cfg), tcp(t, f.Addr()))
			if tc.name == "maintenance" && conn.Relax() == nil {
				t.Fatal("the handshake did not enable maintenance notices")
			}
			for range 20 {
				group, unit := groupOf([]string{"PING"}, []string{"PING"})
				offer(t, conn, unit)
				conn.ReadOwn(context.Background(), unit[0], unit[1], time.Now().Add(waitBound))
				for _, c := range group {
					if c.wait(t); c.Err != nil || string(c.Reply.Str) != "PONG" {
						t.Fatalf("PING: %v %s", c.Err, c.Reply.String())
					}
				}
			}
			if got := netio.CallerReads(conn); (got > 0) != tc.lends {
				t.Fatalf("callers read %d groups themselves, want lending %v", got, tc.lends)
			}
			if !tc.lends && netio.ReadSideFree(conn) {
				t.Fatal("the reader goroutine left its side free")
			}
			if c := do(t, conn, "PING"); string(c.Str) != "PONG" {
				t.Fatalf("PING after: %s", c.String())
			}
		})
	}
}

// noDeadlineConn is a transport connection that refuses read deadlines, as some connections a
// custom dial hook returns do (tunnels, in-process pipes of other libraries).
type noDeadlineConn struct{ net.Conn }

var errNoDeadline = errors.New("deadlines not supported")

func (noDeadlineConn) SetDeadline(time.Time) error     { return errNoDeadline }
func (noDeadlineConn) SetReadDeadline(time.Time) error { return errNoDeadline }

// TestCallerReadNeedsAReadDeadline: on a socket that refuses read deadlines, a caller with a
// deadline (the client's command timeout) must not read: its read could not stop at the
// deadline, and the caller would wait past its timeout for as long as the server stays silent.
// ReadOwn returns false at once, the reader goroutine reads the group, and later callers with a
// deadline do not take the side either. Before the fix ReadOwn ignored the refused deadline and
// blocked in the read of the BLPOP's reply until the server answered.
func TestCallerReadNeedsAReadDeadline(t *testing.T) {
	netio.SetParkIdle(t, time.Minute)
	srv := redistest.Start(t, redistest.Config{})
	cfg := netio.TransportConfig{
		HandshakeTimeout: -1, // the handshake would refuse the socket otherwise
		Dialer:           wrappingDialer(func(nc net.Conn) net.Conn { return noDeadlineConn{nc} }),
	}
	conn, s := mustConnect(t, netio.NewTransport(cfg), tcp(t, srv.Addr()))
	other := mustConnectDefault(t, tcp(t, srv.Addr()))
	for round := range 2 {
		lendSide(t, conn) // a caller without a deadline may read: the side is lent
		before := netio.CallerReads(conn)
		key := "callrev:nodeadline:" + strconv.Itoa(round)
		group, unit := groupOf([]string{"PING"}, []string{"BLPOP", key, "0"})
		offer(t, conn, unit)
		read := make(chan bool, 1)
		go func() {
			read <- conn.ReadOwn(context.Background(), unit[0], unit[1], time.Now().Add(100*time.Millisecond))
		}()
		select {
		case ok := <-read:
			if ok {
				t.Fatal("ReadOwn reported the BLPOP complete")
			}
		case <-time.After(waitBound):
			do(t, other, "LPUSH", key, "x") // let the stuck caller go
			t.Fatal("a caller with a deadline read a socket without read deadlines past its deadline")
		}
		if got := netio.CallerReads(conn); got != before {
			t.Fatalf("round %d: a caller with a deadline read %d groups", round, got-before)
		}
		do(t, other, "LPUSH", key, "x")
		for _, c := range group {
			if c.wait(t); c.Err != nil {
				t.Fatalf("round %d: %s: %v", round, c.Name, c.Err)
			}
		}
	}
	if n := s.losts.Load(); n != 0 {
		t.Fatalf("Lost reported %d times", n)
	}
}

// TestCallerReadHandOverStress: a caller that reads its own groups, with deadlines so short
// that many stop in the middle of a reply, runs beside a second goroutine sending single
// commands and a third sending groups it never reads, all on one connection; then the
// connection is closed under them. Every reply must pair with its own command (each ECHO
// carries a token of its own), every command must complete exactly once (a second completion
// closes a closed channel), and a command that got no reply ends closed by Close, never with
// another failure. Run under -race it checks the hand-overs of the read side between the
// reader goroutine and the caller.
func TestCallerReadHandOverStress(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	conn, _ := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), tcp(t, srv.Addr()))
	const rounds = 300
	check := func(c *cmd, token string) error {
		<-c.done
		if c.Err != nil {
			if !errors.Is(c.Err, netio.ErrClosed) {
				return c.Err
			}
			return nil
		}
		if got := string(c.Reply.Str); got != token {
			return errors.New("ECHO " + token + " answered " + got)
		}
		return nil
	}
	echo := func(token string) *cmd { return newCmd("ECHO", token) }
	errs := make(chan error, 3)
	stop := make(chan struct{})
	run := func(name string, body func(i int) error) {
		go func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				if err := body(i); err != nil {
					errs <- errors.New(name + ": " + err.Error())
					return
				}
			}
		}()
	}
	big := strings.Repeat("b", 12<<10) // a reply the caller's short deadline may cut
	run("reading caller", func(i int) error {
		tokens := []string{"r" + strconv.Itoa(i) + "a", big + strconv.Itoa(i), "r" + strconv.Itoa(i) + "c"}
		group := make([]*cmd, len(tokens))
		unit := make([]*engine.Command, len(tokens))
		for k, tok := range tokens {
			group[k] = echo(tok)
			unit[k] = &group[k].Command
		}
		// An overlap with the others stops the lending for the next 256 requests
		// (busyRequests); the caller asks again each time, to be lent the side often.
		netio.ClearReadBusy(conn)
		if !conn.OfferGroup(unit) {
			return nil // closed
		}
		conn.ReadOwn(context.Background(), unit[0], unit[len(unit)-1], time.Now().Add(time.Duration(i%7)*20*time.Microsecond))
		for k, c := range group {
			if err := check(c, tokens[k]); err != nil {
				return err
			}
		}
		return nil
	})
	// The others arrive now and then, between the caller's groups or while it reads.
	pause := func() { time.Sleep(time.Millisecond) }
	run("sender", func(i int) error {
		pause()
		tok := "s" + strconv.Itoa(i)
		c := echo(tok)
		conn.Send(&c.Command)
		return check(c, tok)
	})
	run("unread group", func(i int) error {
		pause()
		tokens := []string{"u" + strconv.Itoa(i) + "a", "u" + strconv.Itoa(i) + "b"}
		group, unit := groupOf([]string{"ECHO", tokens[0]}, []string{"ECHO", tokens[1]})
		if !conn.OfferGroup(unit) {
			return nil
		}
		for k, c := range group {
			if err := check(c, tokens[k]); err != nil {
				return err
			}
		}
		return nil
	})
	deadline := time.Now().Add(waitBound)
	for netio.CallerReads(conn) < rounds && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	reads := netio.CallerReads(conn)
	conn.Close()
	close(stop)
	for range 3 {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(waitBound):
			t.Fatal("a goroutine did not finish after Close")
		}
	}
	if reads == 0 {
		t.Fatal("the caller never read a group itself: the test did not exercise the hand-overs")
	}
	t.Logf("the caller read %d groups itself", reads)
}
