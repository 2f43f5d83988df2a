package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/respire-go/respire/sim/scenario"
)

// timelineScenario is a run with n drop faults, 10ms apart: every drop makes the client
// reconnect, so every fault is followed by an accept.
func timelineScenario(tb testing.TB, n int) *scenario.Scenario {
	var b strings.Builder
	fmt.Fprintf(&b, "name: timeline\nseed: 1\nduration: %dms\n", 1000+10*n+1000)
	b.WriteString("client: {connections: 2, connect_timeout: 100ms, command_timeout: 200ms, reconnect_policy: {initial_delay: 1ms, max_delay: 10ms}}\n")
	b.WriteString("workload: {callers: 2, rate: 50/s}\nfaults:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {at: %dms, drop: {node: r1}}\n", 1000+10*i)
	}
	sc, err := scenario.Parse([]byte(b.String()))
	if err != nil {
		tb.Fatal(err)
	}
	return sc
}

// BenchmarkFaultTimeline runs timelines of growing length: the time per fault stays flat when
// the run is linear in the number of faults (an accept used to visit every fault of the
// timeline, which made a 100,000-drop file take minutes).
func BenchmarkFaultTimeline(b *testing.B) {
	for _, n := range []int{1000, 4000, 16000} {
		sc := timelineScenario(b, n)
		b.Run(fmt.Sprintf("faults=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := Run(sc, 1, RunOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/fault")
		})
	}
}
