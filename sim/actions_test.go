package sim

import (
	"strings"
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// TestClientCloseRecreate runs the shipped scenario: three clients, whose connection ids stay
// unique in the records and the steps, whose journals each replay, and across which nothing is
// replayed; the recreate ends written commands unknown, and calls made while the client is
// closed fail definitely with the closed error.
func TestClientCloseRecreate(t *testing.T) {
	sc := mustLoad(t, "../scenarios/client-close-recreate.yaml")
	res := run(t, sc, sc.Seed, true)
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations %v, missing %v", v.Unexpected, v.Missing)
	}
	if len(res.Clients) != 2 || res.Clients[0].Gen != 1 || res.Clients[1].Gen != 2 {
		t.Fatalf("want generations 1 and 2 after the initial client, got %+v", res.Clients)
	}
	// Every dial of the run has its own connection id, and each generation's carry its offset.
	dialed := map[fsm.ConnID]bool{}
	perGen := map[int]int{}
	for i, st := range res.Steps {
		for _, f := range st.Effects {
			if f.Kind != fsm.Dial {
				continue
			}
			if dialed[f.Conn] {
				t.Fatalf("conn %d dialed twice", f.Conn)
			}
			dialed[f.Conn] = true
			g := res.GenOf(i)
			perGen[g]++
			if uint64(f.Conn)>>record.GenShift&0xff != uint64(g) {
				t.Fatalf("conn %d of generation %d lacks its offset", f.Conn, g)
			}
		}
	}
	for g := 0; g <= 2; g++ {
		if perGen[g] == 0 {
			t.Fatalf("generation %d dialed nothing: %v", g, perGen)
		}
	}
	for _, s := range res.Sends {
		if !dialed[s.Conn] {
			t.Fatalf("command %d written on conn %d, which no step dialed", s.CmdID, s.Conn)
		}
	}
	// The recreate at 1.3s (the node paused since 1s) ends written commands unknown; calls while
	// the client is closed (3s to 3.5s) fail definitely as on a closed client.
	unknownAtRecreate, closedCalls := 0, 0
	for _, op := range res.Ops {
		if op.Outcome == record.OpUnknown && op.Return == sc.Actions[0].At {
			unknownAtRecreate++
		}
		if op.Call > sc.Actions[1].At && op.Call < sc.Actions[2].At {
			if op.Outcome != record.OpFailed || !strings.Contains(op.Err, "closed") {
				t.Fatalf("op %d called while the client was closed ended %v (%s)", op.ID, op.Outcome, op.Err)
			}
			closedCalls++
		}
	}
	if unknownAtRecreate == 0 || closedCalls == 0 {
		t.Fatalf("want unknown outcomes at the recreate and calls on the closed client, got %d and %d", unknownAtRecreate, closedCalls)
	}
	if !strings.Contains(strings.Join(res.Trace, "\n"), "client create gen=2 connect=lazy") {
		t.Fatal("the trace lacks the lazy create")
	}
	// The journal replays per generation: replayed as one journal, the recreated clients'
	// events do not fit the first client's machines.
	if out := (check.Replay{Config: sc.EngineConfig()}).Check(res); len(out) != 0 {
		t.Fatalf("replay: %v", out)
	}
	whole := *res
	whole.Clients = nil
	if out := (check.Replay{Config: sc.EngineConfig()}).Check(&whole); len(out) == 0 {
		t.Fatal("replaying the generations as one journal must fail (the control)")
	}
}

// TestPlantReplayAcrossRecreate: the planted replay resends a command written by the first
// client on a connection of the recreated one, and no-replay catches it.
func TestPlantReplayAcrossRecreate(t *testing.T) {
	sc := mustLoad(t, "testdata/plant_replay_across_recreate.yaml")
	res := run(t, sc, sc.Seed, false)
	first := map[uint64]fsm.ConnID{}
	across := 0
	for _, s := range res.Sends {
		if c, ok := first[s.CmdID]; ok && uint64(c) < record.GenOffset(1) && uint64(s.Conn) >= record.GenOffset(1) {
			across++
		}
		if _, ok := first[s.CmdID]; !ok {
			first[s.CmdID] = s.Conn
		}
	}
	if across != 1 {
		t.Fatalf("want one command written by the first client and again by the second, got %d", across)
	}
	out := check.NoReplay{}.Check(res)
	if len(out) == 0 {
		t.Fatal("no-replay missed the replay across the recreate")
	}
}

// TestPolicyAcrossRecreate: a slot exhausted by the first client is a fresh slot in the
// recreated one, whose dials the policy checker accepts; judged as one client, they are dials
// after exhaustion (the control).
func TestPolicyAcrossRecreate(t *testing.T) {
	sc := mustParse(t, `name: policy-across-recreate
seed: 5
duration: 6s
client:
  connections: 2
  command_timeout: 300ms
  reconnect_policy: {initial_delay: 50ms, max_delay: 200ms, max_attempts: 2}
faults:
  - {at: 1s, kill: {node: r1, restart_after: 2s}}
actions:
  - {at: 2500ms, recreate: {connect: lazy}}
workload: {callers: 8, rate: 400/s, keys: 8, counters: 2}
expect: {invariants: all, linearizable: true, liveness: {within: 1s}}
`)
	res := run(t, sc, sc.Seed, false)
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations %v", v.Unexpected)
	}
	p := check.Policy{Policy: sc.Client.ReconnectPolicy.Policy()}
	whole := *res
	whole.Clients = nil
	found := false
	for _, v := range p.Check(&whole) {
		found = found || strings.Contains(v.Message, "dialed after exhaustion")
	}
	if !found {
		t.Fatal("judged as one client, the recreated client's dials must follow an exhaustion (the control)")
	}
}

// TestHostRefusesActions: a Host runs the application's code, which closes its own clients.
func TestHostRefusesActions(t *testing.T) {
	sc := mustParse(t, "name: h\nduration: 2s\nactions: [{at: 1s, recreate: {}}]\n")
	if _, err := NewHost(sc, 1, RunOptions{}); err != ErrHostActions {
		t.Fatalf("want ErrHostActions, got %v", err)
	}
}

func mustParse(t testing.TB, text string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}
