package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// maintShrinkFake starts a scripted RESP3 server whose SLOW command sends MIGRATING, waits
// 300 ms, sends MIGRATED, waits 1.5 s and replies OK: a command kept alive by the window must
// time out when MIGRATED closes it, long before the reply.
func maintShrinkFake(t *testing.T) *redistest.Fake {
	return redistest.StartFake(t, func(c *redistest.FakeConn, args []string) {
		if c.Standard(args) {
			return
		}
		if args[0] == "SLOW" {
			c.Reply(maintPush("MIGRATING", 1, 30))
			time.Sleep(300 * time.Millisecond)
			c.Reply(maintPush("MIGRATED", 2, -1))
			time.Sleep(1500 * time.Millisecond)
			c.Reply(resp.SimpleString("OK"))
			return
		}
		c.ErrorReply("ERR unknown command")
	})
}

// slowPipeline runs a pipeline of SLOW ms and PING and returns how long it took, the futures'
// errors and the run's error.
func slowPipeline(c *client.Client, ms string) (time.Duration, []error, error) {
	var b client.Batch
	first := b.Do("SLOW", ms)
	second := b.Do("PING")
	start := time.Now()
	err := c.Pipeline(context.Background(), &b)
	return time.Since(start), []error{first.Err(), second.Err()}, err
}

// TestMaintenanceRelaxesPipeline: a MIGRATING notice that arrives while a pipeline waits
// extends the run's deadline to MaintenanceRelaxedTimeout from its start, as for a single
// command, so replies slower than CommandTimeout still arrive and every entry gets its own.
// Before batches asked their connection's relaxation, the run timed out at CommandTimeout. The
// positive control is the same pipeline without the opt-in: it times out.
func TestMaintenanceRelaxesPipeline(t *testing.T) {
	f, optIns := maintFake(t, func() []resp.Value { return []resp.Value{maintPush("MIGRATING", 1, 5)} })
	o := client.Options{CommandTimeout: 150 * time.Millisecond, MaintenanceRelaxedTimeout: 5 * time.Second,
		MaintenanceNotifications: client.MaintenanceAuto}
	c := maintClient(t, f, o)
	took, errs, err := slowPipeline(c, "500")
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("relaxed pipeline failed after %v: %v (entries %v)", took, err, errs)
	}
	if took < 450*time.Millisecond || optIns.Load() == 0 {
		t.Fatalf("the run took %v (opt-ins %d): the slow reply never happened", took, optIns.Load())
	}

	o.MaintenanceNotifications = client.MaintenanceDisabled
	d := maintClient(t, f, o)
	_, errs, err = slowPipeline(d, "500")
	var te *client.TimeoutError
	if !errors.As(err, &te) || !errors.As(errs[1], &te) {
		t.Fatalf("without maintenance notifications: %v (entries %v), want *TimeoutError", err, errs)
	}
}

// TestMaintenanceCompletionEndsPipeline: a pipeline that MIGRATING kept alive past
// CommandTimeout times out as soon as MIGRATED closes the window (engine.Relax.Shrunk), not at
// the relaxed deadline or at the reply. Before batches asked their connection's relaxation, it
// timed out at CommandTimeout (100 ms), before MIGRATED.
func TestMaintenanceCompletionEndsPipeline(t *testing.T) {
	f := maintShrinkFake(t)
	c := maintClient(t, f, client.Options{CommandTimeout: 100 * time.Millisecond,
		MaintenanceNotifications: client.MaintenanceAuto, MaintenanceRelaxedTimeout: 5 * time.Second})
	took, errs, err := slowPipeline(c, "0")
	var te *client.TimeoutError
	if !errors.As(err, &te) || !errors.As(errs[1], &te) {
		t.Fatalf("%v (entries %v) after %v, want *TimeoutError when MIGRATED closed the window", err, errs, took)
	}
	if took < 250*time.Millisecond || took > 1200*time.Millisecond {
		t.Fatalf("timed out after %v, want about when MIGRATED arrived (300ms)", took)
	}
}

// TestMaintenanceRelaxesAtomic: a transaction's run (MULTI, the commands, EXEC as one group)
// is relaxed as a pipeline is.
func TestMaintenanceRelaxesAtomic(t *testing.T) {
	slowMulti := redistest.StartFake(t, func(fc *redistest.FakeConn, args []string) {
		if fc.Standard(args) {
			return
		}
		switch args[0] {
		case "MULTI":
			fc.Reply(maintPush("MIGRATING", 1, 5))
			time.Sleep(400 * time.Millisecond)
			fc.Reply(resp.SimpleString("OK"))
		case "NOOP":
			fc.Reply(resp.SimpleString("QUEUED"))
		case "EXEC":
			fc.Reply(resp.ArrayOf(resp.SimpleString("PONG")))
		default:
			fc.ErrorReply("ERR unknown command")
		}
	})
	c := maintClient(t, slowMulti, client.Options{CommandTimeout: 150 * time.Millisecond,
		MaintenanceNotifications: client.MaintenanceAuto, MaintenanceRelaxedTimeout: 5 * time.Second})
	var b client.Batch
	p := b.Do("NOOP")
	start := time.Now()
	if err := c.Atomic(context.Background(), &b); err != nil {
		t.Fatalf("relaxed transaction failed after %v: %v", time.Since(start), err)
	}
	if took := time.Since(start); took < 350*time.Millisecond {
		t.Fatalf("the run took %v: the slow MULTI never happened", took)
	}
	v, err := p.Result()
	if s, _ := v.AsString(); err != nil || s != "PONG" {
		t.Fatalf("NOOP in the transaction: %q, %v", s, err)
	}
}

// dedicatedSlow runs SLOW ms on a dedicated connection and returns how long it took and its
// error.
func dedicatedSlow(t *testing.T, c *client.Client, ms string) (time.Duration, error) {
	t.Helper()
	d, err := c.Dedicated(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Close() }()
	start := time.Now()
	_, err = d.Do(context.Background(), "SLOW", ms)
	return time.Since(start), err
}

// TestMaintenanceRelaxesDedicated: a dedicated connection that opted in relaxes its commands'
// deadlines after MIGRATING, as a shared connection does. Before, its command timed out at
// CommandTimeout. The positive control is the same command without the opt-in.
func TestMaintenanceRelaxesDedicated(t *testing.T) {
	f, _ := maintFake(t, func() []resp.Value { return []resp.Value{maintPush("MIGRATING", 1, 5)} })
	o := client.Options{CommandTimeout: 150 * time.Millisecond, MaintenanceRelaxedTimeout: 5 * time.Second,
		MaintenanceNotifications: client.MaintenanceAuto}
	c := maintClient(t, f, o)
	took, err := dedicatedSlow(t, c, "500")
	if err != nil {
		t.Fatalf("relaxed dedicated command failed after %v: %v", took, err)
	}
	if took < 450*time.Millisecond {
		t.Fatalf("the command took %v: the slow reply never happened", took)
	}

	o.MaintenanceNotifications = client.MaintenanceDisabled
	d := maintClient(t, f, o)
	_, err = dedicatedSlow(t, d, "500")
	var te *client.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("without maintenance notifications: %v, want a *TimeoutError", err)
	}
}

// TestMaintenanceCompletionEndsDedicated: MIGRATED ends the window that kept a dedicated
// connection's command alive, and it times out at once.
func TestMaintenanceCompletionEndsDedicated(t *testing.T) {
	f := maintShrinkFake(t)
	c := maintClient(t, f, client.Options{CommandTimeout: 100 * time.Millisecond,
		MaintenanceNotifications: client.MaintenanceAuto, MaintenanceRelaxedTimeout: 5 * time.Second})
	took, err := dedicatedSlow(t, c, "0")
	var te *client.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("%v after %v, want a *TimeoutError when MIGRATED closed the window", err, took)
	}
	if took < 250*time.Millisecond || took > 1200*time.Millisecond {
		t.Fatalf("timed out after %v, want about when MIGRATED arrived (300ms)", took)
	}
}

// TestMaintenanceRelaxesDedicatedPipeline: a batch on a dedicated connection is relaxed too.
func TestMaintenanceRelaxesDedicatedPipeline(t *testing.T) {
	f, _ := maintFake(t, func() []resp.Value { return []resp.Value{maintPush("MIGRATING", 1, 5)} })
	c := maintClient(t, f, client.Options{CommandTimeout: 150 * time.Millisecond,
		MaintenanceNotifications: client.MaintenanceAuto, MaintenanceRelaxedTimeout: 5 * time.Second})
	d, err := c.Dedicated(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Close() }()
	var b client.Batch
	first := b.Do("SLOW", "500")
	start := time.Now()
	if err := d.Pipeline(context.Background(), &b); err != nil || first.Err() != nil {
		t.Fatalf("relaxed dedicated pipeline failed after %v: %v", time.Since(start), err)
	}
	if took := time.Since(start); took < 450*time.Millisecond {
		t.Fatalf("the run took %v: the slow reply never happened", took)
	}
}
