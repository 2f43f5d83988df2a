package client_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/resp"
)

// queuedFake is a loopback RESP2 server that answers SET with +QUEUED, as a connection stuck
// in MULTI would: PING with PONG, HELLO with an unknown-command error, GET with a null and
// anything else with OK.
type queuedFake struct {
	l        net.Listener
	wg       sync.WaitGroup
	accepts  atomic.Int32
	closes   atomic.Int32
	mu       sync.Mutex
	conns    []net.Conn
	shutdown atomic.Bool
}

func startQueuedFake(t *testing.T) *queuedFake {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &queuedFake{l: l}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *queuedFake) endpoint() client.Endpoint {
	a := f.l.Addr().(*net.TCPAddr)
	return client.Endpoint{Host: "127.0.0.1", Port: a.Port}
}

func (f *queuedFake) accept() {
	defer f.wg.Done()
	for {
		nc, err := f.l.Accept()
		if err != nil {
			return
		}
		f.accepts.Add(1)
		f.mu.Lock()
		f.conns = append(f.conns, nc)
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(nc)
	}
}

func (f *queuedFake) serve(nc net.Conn) {
	defer f.wg.Done()
	defer f.closes.Add(1)
	defer nc.Close()
	rd := resp.NewReader(bufio.NewReader(nc), nil)
	var args [][]byte
	for {
		if err := rd.ReadCommand(&args); err != nil {
			if !errors.Is(err, io.EOF) && !f.shutdown.Load() {
				_ = err // a reset by the client is a close too
			}
			return
		}
		if len(args) == 0 {
			continue
		}
		var reply string
		switch strings.ToUpper(string(args[0])) {
		case "PING":
			reply = "+PONG\r\n"
		case "HELLO":
			reply = "-ERR unknown command 'HELLO'\r\n"
		case "SET":
			reply = "+QUEUED\r\n"
		case "GET":
			reply = "$-1\r\n"
		default:
			reply = "+OK\r\n"
		}
		if _, err := nc.Write([]byte(reply)); err != nil {
			return
		}
	}
}

// accepted returns how many connections the fake accepted.
func (f *queuedFake) accepted() int { return int(f.accepts.Load()) }

// waitClosed waits until at least n connections were closed by the client.
func (f *queuedFake) waitClosed(n int) bool {
	deadline := time.Now().Add(5 * time.Second)
	for int(f.closes.Load()) < n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

func (f *queuedFake) close() {
	f.shutdown.Store(true)
	_ = f.l.Close()
	f.mu.Lock()
	for _, nc := range f.conns {
		_ = nc.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
