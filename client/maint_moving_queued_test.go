package client_test

import (
	"context"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// gatedConn is a connection whose next Write, once armed, signals writing and blocks until
// release: the client's writer is then stuck in a write, and what is sent meanwhile queues.
type gatedConn struct {
	net.Conn
	armed            *atomic.Bool
	writing, release chan struct{}
}

func (g gatedConn) Write(p []byte) (int, error) {
	if g.armed.CompareAndSwap(true, false) {
		g.writing <- struct{}{}
		<-g.release
	}
	return g.Conn.Write(p)
}

// TestMovingMovesQueuedCommandsToTheNewEndpoint: BLOCK waits on A; the client's writer then
// blocks in the write of a SET (a gated socket), and two WHO commands sent meanwhile wait in the
// old connection's queue: never written. A then announces MOVING to B. Once B is ready, the
// WHOs move to it and B answers them while A's connection is still stuck (without the move they
// would drain on A, and A would answer them only once unblocked); BLOCK and the SET, which A may
// have received, drain on A and A answers them; A never sees a WHO.
func TestMovingMovesQueuedCommandsToTheNewEndpoint(t *testing.T) {
	b := redistest.StartFake(t, func(c *redistest.FakeConn, args []string) {
		if !c.Standard(args) {
			c.Reply(resp.BulkString("B"))
		}
	})
	releaseA := make(chan struct{})
	blocked := make(chan *redistest.FakeConn, 1)
	var mu sync.Mutex
	var seenByA []string
	a := redistest.StartFake(t, func(c *redistest.FakeConn, args []string) {
		if c.Standard(args) {
			return
		}
		mu.Lock()
		seenByA = append(seenByA, args[0])
		mu.Unlock()
		switch args[0] {
		case "BLOCK":
			blocked <- c
			<-releaseA
			c.Reply(resp.SimpleString("OK"))
		case "SET":
			c.Reply(resp.SimpleString("OK"))
		default:
			c.Reply(resp.BulkString("A"))
		}
	})
	armed := new(atomic.Bool)
	writing, releaseWrite := make(chan struct{}, 1), make(chan struct{})
	dialer := func(ctx context.Context, ep client.Endpoint) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)))
		if err != nil || ep.Port != a.Port() {
			return nc, err
		}
		return gatedConn{Conn: nc, armed: armed, writing: writing, release: releaseWrite}, nil
	}
	c := maintClient(t, a, client.Options{Connections: 1, CommandTimeout: 20 * time.Second, Dialer: dialer,
		MaintenanceNotifications: client.MaintenanceEnabled, MaintenanceRelaxedTimeout: 20 * time.Second})
	ctx := context.Background()

	type result struct {
		v   string
		err error
	}
	run := func(args ...any) chan result {
		ch := make(chan result, 1)
		go func() {
			v, err := c.Do(ctx, args...)
			ch <- result{string(v.Str), err}
		}()
		return ch
	}
	block := run("BLOCK")
	var aConn *redistest.FakeConn
	select {
	case aConn = <-blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("BLOCK never reached A")
	}
	armed.Store(true)
	set := run("SET", "k", "v")
	select {
	case <-writing: // the writer is stuck in the SET's write
	case <-time.After(10 * time.Second):
		t.Fatal("the SET was never written")
	}
	who1, who2 := run("WHO"), run("WHO")
	time.Sleep(300 * time.Millisecond) // both WHOs wait in the old connection's queue
	aConn.Push(resp.BulkString("MOVING"), resp.Int(1), resp.Int(30), resp.BulkString("127.0.0.1:"+strconv.Itoa(b.Port())))

	for i, ch := range []chan result{who1, who2} {
		select {
		case r := <-ch:
			if r.err != nil || r.v != "B" {
				t.Fatalf("WHO %d: %q, %v; want B's answer (the queued command moves)", i+1, r.v, r.err)
			}
		case <-time.After(10 * time.Second):
			close(releaseWrite)
			close(releaseA)
			t.Fatalf("WHO %d was not answered while A's connection is stuck: it did not move to B", i+1)
		}
	}
	close(releaseWrite)
	close(releaseA)
	for name, ch := range map[string]chan result{"BLOCK": block, "SET": set} {
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatalf("%s, accepted by A, did not drain there: %v", name, r.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s was not answered after A's connection went on", name)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seenByA) != 2 || seenByA[0] != "BLOCK" || seenByA[1] != "SET" {
		t.Fatalf("A saw %q, want BLOCK and SET only: a moved command reached the old endpoint", seenByA)
	}
}
