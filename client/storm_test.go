package client_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// TestNoPolicyDeadServerDoesNotStorm (issue 10, defect 6) against a real redis-server: a client
// with the zero-value ReconnectPolicy and 16 connections loses its server while eight callers
// send commands as fast as they fail. Each slot dials its replacement at once, then at most once
// per rest (250 ms, then 500 ms, 1 s...): in the 1.5 s that follow the kill, at most three times,
// four with a margin for scheduling. Before the fix, every command that found no ready slot
// dialed every failed slot: thousands of dials. The client recovers once the server is back.
func TestNoPolicyDeadServerDoesNotStorm(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	const slots = 16
	var dials atomic.Int64
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Connections: slots,
		Dialer: countingDialer(&dials), ConnectTimeout: time.Second, CommandTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	must(t, c.Ping(ctx))
	before := dials.Load()
	srv.Kill()
	var commands, failures atomic.Int64
	stop := time.Now().Add(1500 * time.Millisecond)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				commands.Add(1)
				if c.Ping(ctx) != nil {
					failures.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	outage := dials.Load() - before
	t.Logf("%d commands (%d failed) made %d dials over %d slots in 1.5 s", commands.Load(), failures.Load(), outage, slots)
	// The outage really pressed on the client: commands kept failing, and every slot went through
	// recovery (its immediate replacement at least).
	if failures.Load() < 200 || outage < slots {
		t.Fatalf("the outage did not press: %d failed commands, %d dials", failures.Load(), outage)
	}
	if outage > 4*slots {
		t.Fatalf("%d dials over %d slots in 1.5 s: the rests allow at most 3 per slot", outage, slots)
	}
	srv.Restart(t)
	eventually(t, "recovery after restart", 8*time.Second, func() bool {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		return c.Ping(pctx) == nil
	})
}
