package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/scenario"
)

// window is one kill or pause fault of an overlap case, in seconds.
type window struct {
	kind     string
	from, to float64
}

// downtime merges the windows into the union during which the node must serve nothing.
func downtime(ws []window) [][2]time.Duration {
	var out [][2]time.Duration
	for _, w := range ws {
		from, to := secs(w.from), secs(w.to)
		merged := false
		for i := range out {
			if from <= out[i][1] && to >= out[i][0] {
				out[i][0], out[i][1] = min(out[i][0], from), max(out[i][1], to)
				merged = true
			}
		}
		if !merged {
			out = append(out, [2]time.Duration{from, to})
		}
	}
	// A second pass joins intervals that a later window bridged.
	for changed := true; changed; {
		changed = false
		for i := 0; i < len(out) && !changed; i++ {
			for j := i + 1; j < len(out); j++ {
				if out[j][0] <= out[i][1] && out[j][1] >= out[i][0] {
					out[i][0], out[i][1] = min(out[i][0], out[j][0]), max(out[i][1], out[j][1])
					out = append(out[:j], out[j+1:]...)
					changed = true
					break
				}
			}
		}
	}
	return out
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// overlapScenario is a node under the windows, with callers that would be served at once
// whenever it runs.
func overlapScenario(t *testing.T, ws []window) *scenario.Scenario {
	var b strings.Builder
	b.WriteString(`name: overlap
seed: 5
duration: 12s
client:
  connections: 2
  connect_timeout: 200ms
  command_timeout: 300ms
  reconnect_policy: {initial_delay: 20ms, max_delay: 50ms}
workload: {callers: 4, rate: 400/s, keys: 4, counters: 1}
faults:
`)
	for _, w := range ws {
		field := "for"
		if w.kind == "kill" {
			field = "restart_after"
		}
		fmt.Fprintf(&b, "  - {at: %v, %s: {node: r1, %s: %v}}\n", secs(w.from), w.kind, field, secs(w.to-w.from))
	}
	sc, err := scenario.Parse([]byte(b.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	return sc
}

// TestFaultWindowsCompose: kill and pause windows on one node compose as a union, for every
// overlap shape: the node applies nothing and completes no handshake while any window holds it,
// and serves again once the last one ends. Before the fix an inner window's restart or resume
// revived a node that an outer window still held down (the nested, overlapping, same-start and
// mixed cases failed).
func TestFaultWindowsCompose(t *testing.T) {
	cases := []struct {
		name string
		ws   []window
	}{
		{"disjoint", []window{{"kill", 2, 3}, {"kill", 5, 6}}},
		{"touching", []window{{"kill", 2, 4}, {"kill", 4, 6}}},
		{"overlapping", []window{{"kill", 2, 5}, {"kill", 4, 7}}},
		{"overlapping listed late first", []window{{"kill", 4, 7}, {"kill", 2, 5}}},
		{"nested", []window{{"kill", 2, 8}, {"kill", 3, 4}}},
		{"identical", []window{{"kill", 2, 5}, {"kill", 2, 5}}},
		{"same start", []window{{"kill", 2, 7}, {"kill", 2, 4}}},
		{"same end", []window{{"kill", 2, 7}, {"kill", 5, 7}}},
		{"three chained", []window{{"kill", 2, 4}, {"kill", 3, 6}, {"kill", 5, 8}}},
		{"pause nested", []window{{"pause", 2, 8}, {"pause", 3, 4}}},
		{"pause overlapping", []window{{"pause", 2, 5}, {"pause", 4, 7}}},
		{"pause same start", []window{{"pause", 2, 7}, {"pause", 2, 4}}},
		{"pause touching", []window{{"pause", 2, 4}, {"pause", 4, 6}}},
		{"kill inside pause", []window{{"pause", 2, 8}, {"kill", 3, 5}}},
		{"pause inside kill", []window{{"kill", 2, 8}, {"pause", 3, 5}}},
		{"pause outlives kill", []window{{"kill", 2, 5}, {"pause", 4, 8}}},
		{"kill outlives pause", []window{{"pause", 2, 5}, {"kill", 4, 8}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := overlapScenario(t, tc.ws)
			res := run(t, sc, sc.Seed, false)
			down := downtime(tc.ws)
			for _, a := range res.Applies {
				for _, d := range down {
					if a.At > d[0] && a.At < d[1] {
						t.Fatalf("command %d (%s) applied at %v, while windows hold the node in %v", a.CmdID, a.Name, a.At, d)
					}
				}
			}
			for _, s := range steps(res, fsm.HandshakeDone, 0, res.End+1) {
				for _, d := range down {
					if s.Event.At > d[0] && s.Event.At < d[1] {
						t.Fatalf("handshake done at %v, while windows hold the node in %v", s.Event.At, d)
					}
				}
			}
			// The fault did happen: the node served before, stopped serving, and serves again
			// after each stretch of downtime.
			for _, d := range down {
				before, after := 0, 0
				for _, a := range res.Applies {
					if a.CmdID == 0 {
						continue
					}
					if a.At > d[0]-time.Second && a.At <= d[0] {
						before++
					}
					if a.At >= d[1] && a.At < d[1]+time.Second {
						after++
					}
				}
				if before == 0 || after == 0 {
					t.Fatalf("downtime %v: %d applies in the second before, %d in the second after", d, before, after)
				}
			}
		})
	}
}
