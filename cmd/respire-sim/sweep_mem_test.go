package main

import (
	"io"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/sim/scenario"
)

// sweepMemoryMetrics are the runtime's memory classes BenchmarkSweepMemory samples.
var sweepMemoryMetrics = []string{
	"/gc/heap/live:bytes",                 // the live heap as of the last collection
	"/memory/classes/heap/objects:bytes",  // live and not yet swept objects
	"/memory/classes/heap/unused:bytes",   // free space in spans in use
	"/memory/classes/heap/free:bytes",     // free spans, not returned to the system
	"/memory/classes/heap/released:bytes", // free spans returned to the system
	"/memory/classes/total:bytes",         // everything the runtime mapped
}

// BenchmarkSweepMemory runs `run --seeds 1..N --jobs 1 --max-reports 0 --quiet` of
// testdata/fine.yaml in process, as bench/simmem.sh runs the binary, and samples the runtime's
// memory classes every 5 ms: the peak live heap (after each collection), the peak heap in use
// (objects and unused space of spans in use), the peak of free spans the runtime kept, and the
// process's peak RSS (VmHWM). Run each size in a process of its own, so that the peaks are the
// sweep's:
//
//	go test ./cmd/respire-sim -run '^$' -bench 'SweepMemory/seeds=1000$' -benchtime 1x
//	go test ./cmd/respire-sim -run '^$' -bench 'SweepMemory/seeds=10000$' -benchtime 1x
//
// A sweep whose memory grew with its seeds would show it in the live heap; what the runtime
// keeps beyond it (free spans not yet scavenged) shows in heap-free, and moves the RSS.
func BenchmarkSweepMemory(b *testing.B) {
	sc, err := scenario.Load("testdata/fine.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []uint64{1000, 10000} {
		b.Run("seeds="+strconv.FormatUint(n, 10), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				peak := make([]uint64, len(sweepMemoryMetrics))
				samples := make([]metrics.Sample, len(sweepMemoryMetrics))
				for k, name := range sweepMemoryMetrics {
					samples[k].Name = name
				}
				var inUse uint64
				sample := func() {
					metrics.Read(samples)
					for k := range samples {
						peak[k] = max(peak[k], samples[k].Value.Uint64())
					}
					inUse = max(inUse, samples[1].Value.Uint64()+samples[2].Value.Uint64())
				}
				done := make(chan struct{})
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					tick := time.NewTicker(5 * time.Millisecond)
					defer tick.Stop()
					for {
						select {
						case <-done:
							return
						case <-tick.C:
							sample()
						}
					}
				}()
				cfg := config{seedFrom: 1, seedTo: n, seedRange: true, jobs: 1, quiet: true, reportDir: b.TempDir()}
				code := execute([]*scenario.Scenario{sc}, cfg, io.Discard, io.Discard)
				close(done)
				wg.Wait()
				sample()
				if code != 0 {
					b.Fatalf("the sweep exited %d", code)
				}
				mb := func(v uint64) float64 { return float64(v) / (1 << 20) }
				b.ReportMetric(mb(peak[0]), "live-peak-MB")
				b.ReportMetric(mb(inUse), "inuse-peak-MB")
				b.ReportMetric(mb(peak[3]), "free-peak-MB")
				b.ReportMetric(mb(samples[4].Value.Uint64()), "released-end-MB")
				b.ReportMetric(mb(samples[5].Value.Uint64()), "mapped-end-MB")
				if hwm, ok := procStatusKB("VmHWM:"); ok {
					b.ReportMetric(float64(hwm)/1024, "rss-peak-MB")
				}
			}
		})
	}
}

// procStatusKB returns a field of /proc/self/status in kB (Linux only).
func procStatusKB(field string) (uint64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			v, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}
