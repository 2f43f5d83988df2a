package engine

import (
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// answerAll completes the validation sent on h's connections: ROLE with role, CONFIG GET and
// INFO with an empty array. Probes (PING) stay unanswered, on the connection.
func answerAll(t *testing.T, h *harness, role string) {
	t.Helper()
	n := 0
	for _, c := range h.conns {
		c.mu.Lock()
		sent := c.sent
		c.sent = nil
		for _, cmd := range sent {
			if cmd.Name == "PING" {
				c.sent = append(c.sent, cmd)
			}
		}
		c.mu.Unlock()
		for _, cmd := range sent {
			if cmd.Name == "PING" {
				continue
			}
			reply := "*0\r\n"
			if cmd.Name == "ROLE" {
				reply = role
			}
			if _, err := resp.Parse([]byte(reply), &cmd.Reply, nil); err != nil {
				t.Fatal(err)
			}
			cmd.Complete(nil)
			n++
		}
	}
	if n != 3 {
		t.Fatalf("answered %d commands, want the validation's three", n)
	}
}

// validatedRouter returns a Replica-policy router with refresh interval every over a primary and
// a replica engine on a manual runtime at 7 s, both connected and validated: each engine answered
// the validation (ROLE, CONFIG GET, INFO SERVER). It returns the replica's harness; the router
// closes when the test ends.
func validatedRouter(t *testing.T, every time.Duration) (*ReplicaRouter, *harness, *manualRuntime) {
	t.Helper()
	primary := newHarness(t, Config{Slots: 1})
	replica := newHarness(t, Config{Slots: 1, Endpoint: Endpoint{Host: "127.0.0.2", Port: 6379}})
	cfg := fsm.RouterConfig{Default: fsm.ReadReplica, RefreshInterval: every,
		Endpoints: []fsm.Endpoint{fsm.MakeEndpoint("127.0.0.1", 6379), fsm.MakeEndpoint("127.0.0.2", 6379)}}
	rt := newManualRuntime()
	rt.now = 7 * time.Second
	r, err := NewReplicaRouter(cfg, []*Engine{primary.eng, replica.eng}, rt)
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	t.Cleanup(r.Close)
	primary.run()
	primary.ready()
	replica.run()
	replica.ready()
	answerAll(t, primary, roleMaster)
	answerAll(t, replica, roleReplica)
	return r, replica, rt
}

// TestReplicaRouterRunsOnItsRuntime: the router reads its time from the Runtime it is given and
// arms its wake timer there, so a virtual clock (the simulator's) drives it as it drives the
// engines.
func TestReplicaRouterRunsOnItsRuntime(t *testing.T) {
	r, _, rt := validatedRouter(t, time.Second)
	rt.mu.Lock()
	armed := len(rt.timers)
	rt.now = 9 * time.Second
	rt.mu.Unlock()
	if armed != 1 {
		t.Fatalf("the router armed %d timers on its runtime, want its one wake timer", armed)
	}
	if n := rt.fireAll(); n != 1 {
		t.Fatalf("fired %d timers", n)
	}
	j, whole := r.Journal()
	if !whole || len(j) < 2 {
		t.Fatalf("journal %v (whole %v): want the start and the wake", j, whole)
	}
	if j[0].At != 7*time.Second || j[len(j)-1].At != 9*time.Second || j[len(j)-1].Kind != fsm.Woke {
		t.Fatalf("journal times %v then %v (%v): want the runtime's 7s then 9s", j[0].At, j[len(j)-1].At, j[len(j)-1].Kind)
	}
	r.Close()
	rt.mu.Lock()
	left := len(rt.timers)
	rt.mu.Unlock()
	if left != 0 {
		t.Fatalf("Close left %d timers armed on the runtime", left)
	}
}
