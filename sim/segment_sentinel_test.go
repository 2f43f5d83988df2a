package sim

import (
	"slices"
	"testing"

	"github.com/respire-go/respire/sim/check"
)

// TestSegmentedSentinelRuns: a Sentinel run hands its records over in segments. The positive
// control of replica-writes still fails that checker when every quiescent moment is a cut (its
// write to the replica and the connection's handshake fall in segments of their own), and the
// split-brain scenarios keep their trace: the rejoin's count of discarded commands includes
// those of segments already handed over (before, it counted the current segment's applies
// only, and the trace changed).
func TestSegmentedSentinelRuns(t *testing.T) {
	for _, path := range []string{"testdata/plant_replica_write_after_quiet_failover.yaml",
		"../scenarios/sentinel-split-brain.yaml", "../scenarios/sentinel-leader-window.yaml"} {
		sc := mustLoad(t, path)
		whole, err := Run(sc, sc.Seed, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := check.Judge(whole)
		st := check.NewStream()
		res, err := Run(sc, sc.Seed, RunOptions{Sink: st, SegmentOps: 1, JournalSteps: 10})
		if err != nil {
			t.Fatal(err)
		}
		if res.Segments < 3 {
			t.Fatalf("%s: %d segments: the run was not cut", path, res.Segments)
		}
		if res.TraceHash != whole.TraceHash {
			t.Fatalf("%s: the trace changed when the records were segmented", path)
		}
		got := st.Judge(res)
		if !want.Pass() || !got.Pass() || !slices.Equal(failedCheckers(got), failedCheckers(want)) {
			t.Fatalf("%s: whole run pass=%v failed=%v; segmented pass=%v failed=%v %v", path,
				want.Pass(), failedCheckers(want), got.Pass(), failedCheckers(got), got.Unexpected)
		}
		if sc.Name == "plant-replica-write-after-quiet-failover" && !slices.Contains(failedCheckers(got), check.CheckReplicaWrites) {
			t.Fatalf("%s: the planted write to a replica went unseen in segments: %v", path, failedCheckers(got))
		}
	}
}
