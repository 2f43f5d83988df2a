package simtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/simtest"
)

// TestPubSub: a simulated client subscribes, receives what another task publishes, in order,
// waiting in virtual time; when the node drops its connections, the subscription recovers
// under the policy (resubscribed on a new connection, a gap marker first), and the messages
// published after that arrive. The seed replays the same run.
func TestPubSub(t *testing.T) {
	sc := simtest.DefaultScenario()
	sc.Client.ReconnectPolicy = &scenario.PolicySpec{InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	sc.Faults = []scenario.Fault{{At: scenario.At(3 * time.Second), Drop: &scenario.Target{Node: "r1"}}}
	body := func(env *simtest.Env) {
		ctx := context.Background()
		c := env.Client()
		sub, err := c.Subscribe(ctx, "news")
		if err != nil {
			env.Fatalf("subscribe: %v", err)
		}
		env.Go(func() {
			for i, msg := range []string{"a", "b"} {
				env.Sleep(time.Second)
				if n, err := c.Publish(ctx, "news", msg); err != nil || n != 1 {
					env.Errorf("publish %d: %d %v", i, n, err)
				}
			}
			env.Sleep(3 * time.Second) // the drop at 3 s, then the resubscription
			if _, err := c.Publish(ctx, "news", "c"); err != nil {
				env.Errorf("publish after the drop: %v", err)
			}
		})
		var got []string
		gaps := 0
		for len(got) < 3 {
			wctx, cancel := env.WithTimeout(ctx, 10*time.Second)
			m, err := sub.Next(wctx)
			cancel()
			if err != nil {
				env.Fatalf("next after %v: %v", got, err)
			}
			switch m.Kind {
			case client.MessagePublished:
				got = append(got, m.Payload)
			case client.MessageGap:
				gaps++
			}
		}
		if got[0] != "a" || got[1] != "b" || got[2] != "c" || gaps != 1 {
			env.Errorf("messages %v with %d gap markers, want [a b c] with one gap", got, gaps)
		}
		if now := env.Now(); now < 5*time.Second {
			env.Errorf("the last message came at %v of virtual time, want after 5s", now)
		}
		if err := sub.Close(); err != nil {
			env.Errorf("close: %v", err)
		}
	}
	a := simtest.Test(t, simtest.Config{Scenario: sc, Seed: 7}, body)
	if a.Failed() {
		return
	}
	if b := simtest.Run(simtest.Config{Scenario: sc, Seed: 7}, body); b.TraceHash != a.TraceHash {
		t.Fatalf("the seed does not replay: %s then %s", a.TraceHash, b.TraceHash)
	}
}
