package simtest_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/simtest"
)

// The worked example of docs/testing-your-code.md: a payment service charges each payment once.
// Charging is a non-idempotent write (here INCR charged:<id>, standing for a ledger entry or a
// call to a card processor); the service must never charge a payment twice, whatever the
// network does.

// chargeNaive retries the charge on any error. When a reply is lost, the INCR ran but the
// client cannot know it: the retry charges the payment a second time.
func chargeNaive(ctx context.Context, c *client.Client, id string) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if _, err = c.Incr(ctx, "charged:"+id); err == nil {
			return nil
		}
	}
	return err
}

// errPending says a charge's outcome could not be learned: reconciliation decides later.
var errPending = errors.New("payment pending: outcome unknown")

// chargeReadFirst retries only a charge that certainly did not run, and after an unknown
// outcome reads the payment's state before deciding. That is not enough: the lost INCR may
// still be on its way to the server, or waiting in its buffers, when the read runs on another
// connection. The read sees no charge, the retry charges, and the lost INCR lands later.
func chargeReadFirst(ctx context.Context, c *client.Client, id string) error {
	key := "charged:" + id
	for attempt := 0; attempt < 3; attempt++ {
		_, err := c.Incr(ctx, key)
		if err == nil {
			return nil
		}
		if !errors.Is(err, client.ErrUnknownOutcome) {
			continue // a definite failure: the INCR never ran, retrying is safe
		}
		v, ok, rerr := c.Get(ctx, key)
		switch {
		case rerr != nil:
			return errPending
		case ok && v != "0":
			return nil // the lost INCR ran: the payment is charged
		}
		// The INCR seems not to have run: charge again (wrong if it is still on its way).
	}
	return errPending
}

// chargeSafe settles an unknown outcome before it reads: client.Settle returns once the
// server acknowledged a fence on the lost INCR's connection, so the INCR either ran or never
// will, and the read that follows is final. When no fence is possible (the reply was lost to
// a timeout while the connection stayed up) or the read fails, the payment is left pending
// for reconciliation rather than charged again.
func chargeSafe(ctx context.Context, c *client.Client, id string) error {
	key := "charged:" + id
	for attempt := 0; attempt < 3; attempt++ {
		_, err := c.Incr(ctx, key)
		if err == nil {
			return nil
		}
		if !errors.Is(err, client.ErrUnknownOutcome) {
			continue // a definite failure: the INCR never ran, retrying is safe
		}
		if c.Settle(ctx, err) != nil {
			return errPending // no fence: the INCR may still run
		}
		v, ok, rerr := c.Get(ctx, key)
		switch {
		case rerr != nil:
			return errPending
		case ok && v != "0":
			return nil // the lost INCR ran: the payment is charged
		}
		// The INCR did not run and never will: charge again.
	}
	return errPending
}

// payments returns the property under test: three tasks each take two payments; once the
// faults healed, every payment must be charged at most once, and exactly once when the handler
// reported success.
func payments(charge func(context.Context, *client.Client, string) error) func(env *simtest.Env) {
	return func(env *simtest.Env) {
		ctx := context.Background()
		c := env.Client()
		outcome := map[string]error{}
		var tasks []*simtest.Task
		for i := 0; i < 3; i++ {
			tasks = append(tasks, env.Go(func() {
				for j := 0; j < 2; j++ {
					id := "p" + strconv.Itoa(2*i+j)
					outcome[id] = charge(ctx, c, id)
					env.Sleep(time.Duration(env.Rand().IntN(300)) * time.Millisecond)
				}
			}))
		}
		for _, t := range tasks {
			t.Wait()
		}
		env.Sleep(4*time.Second - env.Now())                   // every drawn fault has healed by then
		for _, id := range slices.Sorted(maps.Keys(outcome)) { // in order: the run stays deterministic
			err, n := outcome[id], chargedCount(env, c, id)
			switch {
			case n > 1:
				env.Errorf("payment %s charged %d times", id, n)
			case err == nil && n != 1:
				env.Errorf("payment %s reported paid but charged %d times", id, n)
			}
		}
	}
}

// chargedCount reads how many times payment id was charged, retrying the read (reads are safe
// to retry).
func chargedCount(env *simtest.Env, c *client.Client, id string) int {
	for attempt := 0; ; attempt++ {
		v, ok, err := c.Get(context.Background(), "charged:"+id)
		if err == nil {
			if !ok {
				return 0
			}
			n, _ := strconv.Atoi(v)
			return n
		}
		if attempt == 10 {
			env.Fatalf("reading payment %s: %v", id, err)
		}
		env.Sleep(500 * time.Millisecond)
	}
}

// paymentScenario is the world of the example: one node, two connections, 1 s timeouts, a
// 300 ms idle-read bound (a connection whose replies stop coming is closed), fences enabled
// (client.Settle), and a client that connects on first use (client.Create), so that a fault
// drawn at 0 s meets the service's first payment rather than its start-up.
func paymentScenario() *scenario.Scenario {
	sc := simtest.DefaultScenario()
	sc.Name = "payments"
	sc.Duration = 20 * time.Second
	sc.Client.Connect = scenario.ConnectLazy
	sc.Client.Connections = 2
	sc.Client.ConnectionIdleReadTimeout = 300 * time.Millisecond
	sc.Client.EnableFences = true
	return sc
}

// A single lost reply is enough for the naive handler to charge a payment twice; the safe
// handler reads the payment before it retries.
func Example() {
	sc := paymentScenario()
	sc.Faults = []scenario.Fault{{At: scenario.At(0), LoseReply: &scenario.Target{Node: "r1"}}}
	for _, h := range []struct {
		name   string
		charge func(context.Context, *client.Client, string) error
	}{{"naive", chargeNaive}, {"safe", chargeSafe}} {
		res := simtest.Run(simtest.Config{Scenario: sc, Seed: 1}, payments(h.charge))
		fmt.Printf("%s: failed=%v %v\n", h.name, res.Failed(), res.Failures)
	}
	// Output:
	// naive: failed=true [payment p2 charged 2 times]
	// safe: failed=false []
}

// A command still on its way when its connection died: slot 0's path is cut off for 323 ms
// just after the first INCRs were written (a timeline rapid shrank). Reading before retrying,
// without a fence, sees no charge and charges again; the lost INCR lands when the path heals.
// Settling first kills the lost INCR's connection on the server before the read, so the INCR
// never runs.
func Example_partition() {
	slot, heal := 0, scenario.At(323*time.Millisecond)
	cut := scenario.Fault{At: scenario.At(5 * time.Millisecond), Blackhole: &scenario.BlackholeFault{Target: scenario.Target{ClientSlot: &slot}, For: &heal}}
	readFirst := paymentScenario()
	readFirst.Client.EnableFences = false
	readFirst.Faults = []scenario.Fault{cut}
	settled := paymentScenario()
	settled.Faults = []scenario.Fault{cut}
	for _, h := range []struct {
		name   string
		sc     *scenario.Scenario
		charge func(context.Context, *client.Client, string) error
	}{{"read first, no fences", readFirst, chargeReadFirst}, {"settle, then read", settled, chargeSafe}} {
		res := simtest.Run(simtest.Config{Scenario: h.sc, Seed: 1}, payments(h.charge))
		fmt.Printf("%s: failed=%v %v\n", h.name, res.Failed(), res.Failures)
	}
	// Output:
	// read first, no fences: failed=true [payment p3 charged 2 times]
	// settle, then read: failed=false []
}
