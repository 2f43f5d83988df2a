package sim

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/scenario"
)

// benchScenario runs the scenario file b.N times and reports virtual seconds per wall second,
// scheduler events per second and per run, and, where the platform can tell, virtual seconds per
// CPU second of the whole process (robust when the machine is shared; it includes the GC).
func benchScenario(b *testing.B, path string) {
	sc := mustLoad(b, path)
	b.ReportAllocs()
	var events uint64
	var virtual time.Duration
	cpuStart, cpuOK := processCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := Run(sc, sc.Seed, RunOptions{})
		if err != nil {
			b.Fatal(err)
		}
		events += res.Events
		virtual += res.End
	}
	b.StopTimer()
	wall := b.Elapsed().Seconds()
	b.ReportMetric(virtual.Seconds()/wall, "virtual-s/s")
	b.ReportMetric(float64(events)/wall, "events/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/run")
	if cpuEnd, ok := processCPU(); ok && cpuOK && cpuEnd > cpuStart {
		b.ReportMetric(virtual.Seconds()/(cpuEnd-cpuStart).Seconds(), "virtual-s/cpu-s")
	}
}

// BenchmarkRunWorkload: 8 callers, 200 ops/s, 60 s virtual, no faults (testdata/workload.yaml).
// Target: at least 2,000 virtual seconds per second.
func BenchmarkRunWorkload(b *testing.B) { benchScenario(b, "testdata/workload.yaml") }

// BenchmarkRunRecovery: a node refusing connections for most of a virtual hour, a policy with no
// attempt limit, and a trickle of workload (testdata/recovery.yaml). Target: at least 50,000
// virtual seconds per second.
func BenchmarkRunRecovery(b *testing.B) { benchScenario(b, "testdata/recovery.yaml") }

// BenchmarkRunIncident19h: the shape of the 19-hour incident (scenarios/incident-19h-refusing-
// peer.yaml): the peer refuses connections for 19 virtual hours while the client keeps a policy
// without MaxAttempts and a light workload. Recovery-dominated; target: at least 50,000 virtual
// seconds per second.
func BenchmarkRunIncident19h(b *testing.B) {
	benchScenario(b, "../scenarios/incident-19h-refusing-peer.yaml")
}

// BenchmarkScenarioSetWithChecking runs every scenario of the project's scenarios/ directory with
// a fresh seed per run and every checker its expectations select (linearizability included), in
// parallel on all cores, and reports seeds (runs) per minute. One op is one run of one scenario.
func BenchmarkScenarioSetWithChecking(b *testing.B) {
	files, err := filepath.Glob("../scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		b.Fatalf("no scenarios: %v", err)
	}
	var set []*scenario.Scenario
	for _, f := range files {
		set = append(set, mustLoad(b, f))
	}
	var next atomic.Uint64
	var failed atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := next.Add(1)
			sc := set[n%uint64(len(set))]
			res, err := Run(sc, n, RunOptions{})
			if err != nil || !check.Judge(res).Pass() {
				failed.Add(1)
			}
		}
	})
	b.StopTimer()
	if failed.Load() > 0 {
		b.Fatalf("%d runs failed their checks", failed.Load())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Minutes(), "seeds/min")
}
