//go:build linux

package netio_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
)

// loopbackPair returns both ends of a loopback TCP connection.
func loopbackPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// A raw write larger than the socket's buffers waits for the poller and goes on in chunks; raw
// reads return the same bytes.
func TestSysConnMovesLargeBuffersBothWays(t *testing.T) {
	c, s := loopbackPair(t)
	w, counts := netio.WrapSys(c, true)
	if counts == nil {
		t.Fatal("a *net.TCPConn was not wrapped")
	}
	go func() { _, _ = io.Copy(s, s) }() // echo
	payload := bytes.Repeat([]byte("0123456789abcdef"), 4<<20/16)
	werr := make(chan error, 1)
	go func() {
		n, err := w.Write(payload)
		if err == nil && n != len(payload) {
			err = errors.New("short write: " + strconv.Itoa(n))
		}
		werr <- err
	}()
	got := make([]byte, len(payload))
	if _, err := io.ReadFull(w, got); err != nil {
		t.Fatal(err)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("the echoed bytes differ")
	}
	reads, writes := counts()
	// 4 MiB in raw calls of at most 256 KiB each: at least 16 of each.
	if reads < 16 || writes < 16 {
		t.Fatalf("raw reads %d, raw writes %d: want at least 16 of each", reads, writes)
	}
}

// With neither goroutine's mode set, the calls go through package net.
func TestSysConnCallersUseNet(t *testing.T) {
	c, s := loopbackPair(t)
	w, counts := netio.WrapSys(c, false)
	go func() { _, _ = io.Copy(s, s) }()
	if _, err := w.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(w, buf); err != nil {
		t.Fatal(err)
	}
	if reads, writes := counts(); reads != 0 || writes != 0 {
		t.Fatalf("raw reads %d, raw writes %d: want none", reads, writes)
	}
}

// Raw calls fail the way net's do: io.EOF at the peer's close, a timeout at the read deadline, a
// *net.OpError naming the operation and carrying the errno at a reset.
func TestSysConnErrorsHaveNetsShape(t *testing.T) {
	t.Run("EOF", func(t *testing.T) {
		c, s := loopbackPair(t)
		w, _ := netio.WrapSys(c, true)
		s.Close()
		if _, err := w.Read(make([]byte, 16)); err != io.EOF {
			t.Fatalf("got %v, want io.EOF", err)
		}
	})
	t.Run("Deadline", func(t *testing.T) {
		c, _ := loopbackPair(t)
		w, _ := netio.WrapSys(c, true)
		if err := w.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		_, err := w.Read(make([]byte, 16))
		var ne net.Error
		var oe *net.OpError
		if !errors.As(err, &ne) || !ne.Timeout() || !errors.As(err, &oe) || oe.Op != "read" {
			t.Fatalf("got %#v, want a read *net.OpError that is a timeout", err)
		}
	})
	t.Run("Reset", func(t *testing.T) {
		c, s := loopbackPair(t)
		w, _ := netio.WrapSys(c, true)
		if err := s.SetLinger(0); err != nil {
			t.Fatal(err)
		}
		s.Close() // RST
		_, err := w.Read(make([]byte, 16))
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "read" || !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("got %v, want a read *net.OpError with ECONNRESET", err)
		}
		var werr error
		for range 100 { // the first writes after a reset may still be accepted
			if _, werr = w.Write([]byte("x")); werr != nil {
				break
			}
		}
		if !errors.As(werr, &oe) || oe.Op != "write" || !(errors.Is(werr, syscall.EPIPE) || errors.Is(werr, syscall.ECONNRESET)) {
			t.Fatalf("write after reset: got %v, want a write *net.OpError with EPIPE or ECONNRESET", werr)
		}
	})
}

// A Conn on plain TCP makes raw calls on its goroutines when many callers keep it busy, and its
// replies stay in order.
func TestConnGoroutinesMakeRawCalls(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	conn := mustConnectDefault(t, tcp(t, srv.Addr()))
	if _, _, raw := netio.SysCounts(conn); !raw {
		t.Fatal("a plain TCP connection does not make raw calls")
	}
	const callers, rounds = 32, 200
	incrFromCallers(t, conn, "sys:ctr:", callers, rounds)
	reads, writes, _ := netio.SysCounts(conn)
	if reads == 0 || writes == 0 {
		t.Fatalf("raw reads %d, raw writes %d after %d commands from %d callers: want some of each", reads, writes, callers*rounds, callers)
	}
	t.Logf("raw reads %d, raw writes %d for %d commands", reads, writes, callers*rounds)
}
