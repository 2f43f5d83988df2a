package client_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// TestMovingMovesQueuedCommandsToTheNewEndpoint: A announces MOVING to B when it receives BLOCK,
// and stops reading. The client's writer then blocks in the write of a large SET, and two WHO
// commands sent meanwhile wait in the old connection's queue: never written. B's handshake is
// held until they are queued. Once B is ready, the WHOs move to it and B answers them (without
// the move they would drain on A and A would answer them once it reads again); BLOCK and the
// SET, which A may have received, drain on A and A answers them; A never sees a WHO.
func TestMovingMovesQueuedCommandsToTheNewEndpoint(t *testing.T) {
	letB := make(chan struct{})
	bDialed := make(chan struct{}, 4)
	b := redistest.StartFake(t, func(c *redistest.FakeConn, args []string) {
		if args[0] == "HELLO" {
			bDialed <- struct{}{}
			<-letB
		}
		if c.Standard(args) {
			return
		}
		c.Reply(resp.BulkString("B"))
	})
	releaseA := make(chan struct{})
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
			c.Push(resp.BulkString("MOVING"), resp.Int(1), resp.Int(30), resp.BulkString("127.0.0.1:"+strconv.Itoa(b.Port())))
			<-releaseA // stop reading: the client's writes back up
			c.Reply(resp.SimpleString("OK"))
		case "SET":
			c.Reply(resp.SimpleString("OK"))
		default:
			c.Reply(resp.BulkString("A"))
		}
	})
	defer close(releaseA)
	defer close(letB)
	c := maintClient(t, a, client.Options{Connections: 1, CommandTimeout: 20 * time.Second,
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
	select {
	case <-bDialed: // the handoff dials B; B's handshake waits
	case <-time.After(10 * time.Second):
		t.Fatal("no connection to B after MOVING")
	}
	set := run("SET", "big", strings.Repeat("x", 8<<20))
	time.Sleep(200 * time.Millisecond) // the writer takes the SET and blocks in its write
	who1, who2 := run("WHO"), run("WHO")
	time.Sleep(200 * time.Millisecond) // both WHOs wait in the old connection's queue
	letB <- struct{}{}                 // B's handshake goes on: the slot switches to B

	for i, ch := range []chan result{who1, who2} {
		select {
		case r := <-ch:
			if r.err != nil || r.v != "B" {
				t.Fatalf("WHO %d: %q, %v; want B's answer (the queued command moves)", i+1, r.v, r.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("WHO %d was not answered while A is blocked: it did not move to B", i+1)
		}
	}
	releaseA <- struct{}{}
	for name, ch := range map[string]chan result{"BLOCK": block, "SET": set} {
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatalf("%s, accepted by A, did not drain there: %v", name, r.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s was not answered after A read again", name)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seenByA) != 2 || seenByA[0] != "BLOCK" || seenByA[1] != "SET" {
		t.Fatalf("A saw %q, want BLOCK and SET only: a moved command reached the old endpoint", seenByA)
	}
}
