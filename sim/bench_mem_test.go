package sim

import (
	"runtime"
	"testing"
	"time"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// heapSampler is a sink that passes segments on to a check.Stream and samples the live heap
// after each (runtime.GC first, so that the sample is what the run holds, not garbage).
type heapSampler struct {
	*check.Stream
	peak uint64
}

func (h *heapSampler) Segment(seg *record.Result) {
	h.Stream.Segment(seg)
	h.sample()
}

func (h *heapSampler) sample() {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.peak = max(h.peak, ms.HeapAlloc)
}

// Memory modes of benchMemory.
const (
	judgedInSegments = iota // records in segments, journal in windows (respire-sim)
	keepJournal             // records in segments, the whole journal kept (as before windows)
	keepEverything          // no sink: every record and step kept
)

// benchMemory runs sc and reports the live heap: the largest sample at the segments' cuts and
// at the end (peak-live-MB), the run's segments and the steps it kept at the end.
func benchMemory(b *testing.B, sc *scenario.Scenario, mode int) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h := &heapSampler{Stream: check.NewStream()}
		opts := RunOptions{Sink: h}
		switch mode {
		case keepJournal:
			h.KeepJournal()
		case keepEverything:
			opts.Sink = nil
		}
		res, err := Run(sc, sc.Seed, opts)
		if err != nil {
			b.Fatal(err)
		}
		h.sample()
		v := h.Judge(res)
		if !v.Pass() {
			b.Fatalf("the run failed its checks: %v", v.Unexpected)
		}
		b.ReportMetric(float64(h.peak)/(1<<20), "peak-live-MB")
		b.ReportMetric(float64(res.Segments), "segments")
		b.ReportMetric(float64(len(res.Steps)), "steps-kept")
		b.ReportMetric(float64(res.StepBase+len(res.Steps)), "steps")
		b.ReportMetric(float64(v.Ops), "ops")
	}
}

// BenchmarkSoakMemory runs the 2-hour soak (bench/scenarios/soak-2h-flapping.yaml, about 580,000
// operations) judged in segments, as respire-sim does, and reports its live heap. Run it with
// -benchtime 1x: one run takes seconds. bench/simmem.sh measures the process's peak RSS.
func BenchmarkSoakMemory(b *testing.B) {
	benchMemory(b, mustLoad(b, "../bench/scenarios/soak-2h-flapping.yaml"), judgedInSegments)
}

// BenchmarkSoakMemoryKeepJournal is BenchmarkSoakMemory keeping the whole engine journal, as
// runs did before the journal was handed over in windows (sim.JournalWindow).
func BenchmarkSoakMemoryKeepJournal(b *testing.B) {
	benchMemory(b, mustLoad(b, "../bench/scenarios/soak-2h-flapping.yaml"), keepJournal)
}

// BenchmarkSoakMemoryWhole is BenchmarkSoakMemory keeping every record, as runs did before
// segments: the comparison shows what segments save.
func BenchmarkSoakMemoryWhole(b *testing.B) {
	benchMemory(b, mustLoad(b, "../bench/scenarios/soak-2h-flapping.yaml"), keepEverything)
}

// BenchmarkIncident19hMemory runs cluster-incident-19h (19 virtual hours, 34,000 operations, a
// node black-holed for good from 1 h) judged in segments, and reports its live heap.
func BenchmarkIncident19hMemory(b *testing.B) {
	benchMemory(b, mustLoad(b, "../scenarios/cluster-incident-19h.yaml"), judgedInSegments)
}

// longSentinel is sentinel-failover run for 20 virtual minutes (about 360,000 operations), its
// failover at 3 s: a Sentinel run long enough for its records to matter.
func longSentinel(b *testing.B) *scenario.Scenario {
	sc := mustLoad(b, "../scenarios/sentinel-failover.yaml")
	sc.Duration = 20 * time.Minute
	sc.Workload.Stop = 0
	return sc
}

// BenchmarkSentinelMemory runs longSentinel judged in segments, as respire-sim now does, and
// reports its live heap; BenchmarkSentinelMemoryWhole keeps every record, as Sentinel runs did
// before they were segmented.
func BenchmarkSentinelMemory(b *testing.B) { benchMemory(b, longSentinel(b), judgedInSegments) }

// BenchmarkSentinelMemoryWhole is BenchmarkSentinelMemory keeping every record.
func BenchmarkSentinelMemoryWhole(b *testing.B) { benchMemory(b, longSentinel(b), keepEverything) }
