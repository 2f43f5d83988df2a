package sim

import (
	"strings"
	"testing"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/scenario"
)

// fenceScenario pauses the node with writes in flight; the idle-read bound kills the client's
// connections, their written commands end with unknown outcomes, and each such connection owes a
// fence. The fences dial the node while it is paused (the control connections hang in their
// handshake), and are answered once it resumes.
const fenceScenario = `
name: fence-paused-node
seed: 19
duration: 12s
topology: {kind: standalone, nodes: [{id: r1}]}
client:
  connections: 2
  connect: eager
  connect_timeout: 1s
  command_timeout: 5s
  reconnect_policy: {initial_delay: 100ms, max_delay: 1s, jitter_ratio: 0}
  connection_idle_read_timeout: 500ms
  enable_fences: true
faults:
  - {at: 2s, pause: {node: r1, for: 3s}}
workload: {callers: 4, rate: 50/s, keys: 4, counters: 1}
expect:
  invariants: all
  linearizable: true
  outcomes: {unknown: {min: 1}}
  liveness: {within: 3s}
`

// TestFencesInTheSimulator: with client.enable_fences, every connection the idle-read bound killed
// with writes unanswered is fenced: its obligation is journaled, a control connection dials the
// node, CLIENT KILL ID names the dead connection's id, and the kill is answered once the node
// resumes, after the paused writes ran. The run stays deterministic and passes its checkers;
// without client.enable_fences nothing of this happens (the control).
func TestFencesInTheSimulator(t *testing.T) {
	sc, err := scenario.Parse([]byte(fenceScenario))
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, sc, sc.Seed, true)
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("checkers: %+v", v.Unexpected)
	}
	trace := strings.Join(res.Trace, "\n")
	for _, want := range []string{"fence owed conn=", " id=", "dial conn=fence#", "kill conn=fence#", "killed conn=fence#"} {
		if !strings.Contains(trace, want) {
			t.Fatalf("trace lacks %q", want)
		}
	}
	if strings.Contains(trace, "unidentified") {
		t.Fatal("a connection ended without its CLIENT ID")
	}
	if again := run(t, sc, sc.Seed, false); again.TraceHash != res.TraceHash {
		t.Fatalf("not deterministic: %s then %s", res.TraceHash, again.TraceHash)
	}
	off := sc.Clone()
	off.Client.EnableFences = false
	if tr := strings.Join(run(t, off, off.Seed, true).Trace, "\n"); strings.Contains(tr, "fence#") || strings.Contains(tr, " owed ") {
		t.Fatal("fences ran without client.enable_fences")
	}
}
