package main

import (
	"sync/atomic"
	"testing"

	"github.com/respire-go/respire/sim/scenario"
)

// BenchmarkSweepRun is one run of a seed sweep of a short scenario (testdata/fine.yaml: 1 s,
// about 200 operations), as a worker of `run --seeds` does it: run, judge in segments, keep the
// summary. Its B/op is what each seed of a long sweep allocates, which sets how often the
// garbage collector runs and so how high the sweep's heap can overshoot (docs/performance.md).
func BenchmarkSweepRun(b *testing.B) {
	sc, err := scenario.Load("testdata/fine.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var reports atomic.Int64
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if s := runJob(sc, job{seed: uint64(i + 1)}, config{}, &reports); !s.pass {
			b.Fatalf("seed %d failed: %+v", i+1, s)
		}
	}
}
