package sim

import (
	"fmt"

	"github.com/respire-go/respire/sim/check"
	"testing"
	"time"

	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/sim/record"
)

// TestRequestLen: the simulator finds each command's frame in a pipeline's frame; a frame that
// does not start with a whole request is taken whole.
func TestRequestLen(t *testing.T) {
	one := resp.AppendCommand(nil, "INCR", "b0")
	two := resp.AppendCommand(nil, "SET", "k", "a value\r\nwith a line break")
	both := append(append([]byte(nil), two...), one...)
	for _, tc := range []struct {
		f    []byte
		want int
	}{
		{both, len(two)},
		{one, len(one)},
		{both[:len(two)-1], len(two) - 1},
		{[]byte("*2\r\n$4\r\nINCR\r\n"), 14},
		{[]byte("PING\r\n"), 6},
		{nil, 0},
	} {
		var args [][]byte
		if got := requestLen(tc.f, &args); got != tc.want {
			t.Errorf("requestLen(%q) = %d, want %d", tc.f, got, tc.want)
		}
	}
}

// TestBatchPipelineEntriesAttributed: in maint-batch-migrating a pipeline goes to its connection
// as one command (engine.Multi), and the simulator still records each INCR on its own: one send
// under each id, the node applies each under its id, and each ok pipeline's replies are paired
// under their own ids with the replies the node sent for them.
func TestBatchPipelineEntriesAttributed(t *testing.T) {
	sc := mustLoad(t, "../scenarios/maint-batch-migrating.yaml")
	res := run(t, sc, sc.Seed, false)
	sends, applies := map[uint64]int{}, map[uint64]int{}
	for _, s := range res.Sends {
		sends[s.CmdID]++
	}
	for _, a := range res.Applies {
		applies[a.CmdID]++
	}
	served := map[uint64]uint64{}
	for _, s := range res.Served {
		served[s.CmdID] = s.Digest
	}
	paired := map[uint64]uint64{}
	for _, p := range res.Paired {
		paired[p.CmdID] = p.Digest
	}
	checked := 0
	for i := range res.Batches {
		b := &res.Batches[i]
		if b.Atomic || b.Outcome != record.BatchOK {
			continue
		}
		if b.Replied != len(b.Cmds) || len(b.Cmds) != sc.Workload.Batches.Size {
			t.Fatalf("pipeline %d: %d replies of %d commands", b.ID, b.Replied, len(b.Cmds))
		}
		for _, id := range b.Cmds {
			if sends[id] != 1 || applies[id] != 1 {
				t.Fatalf("pipeline %d: command %d sent %d times, applied %d times", b.ID, id, sends[id], applies[id])
			}
			if d, ok := paired[id]; !ok || d != served[id] {
				t.Fatalf("pipeline %d: command %d paired %v with a reply the node sent for it: %v", b.ID, id, ok, d == served[id])
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no pipeline ended ok")
	}
}

// TestBatchPipelineLostMidReplies: in batch-pipeline-lost-mid-replies the connection is cut in
// the middle of a pipeline's replies, three times. Each such pipeline keeps the replies that
// arrived before the cut, paired with its first commands; the others have an unknown outcome;
// none is written again on the next connection, and batch-entries and no-replay pass.
func TestBatchPipelineLostMidReplies(t *testing.T) {
	sc := mustLoad(t, "../scenarios/batch-pipeline-lost-mid-replies.yaml")
	res := run(t, sc, sc.Seed, false)
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations: %v", v.Unexpected)
	}
	sends := map[uint64]int{}
	for _, s := range res.Sends {
		sends[s.CmdID]++
	}
	paired := map[uint64]bool{}
	for _, p := range res.Paired {
		paired[p.CmdID] = true
	}
	cut := 0
	for i := range res.Batches {
		b := &res.Batches[i]
		for _, id := range b.Cmds {
			if sends[id] > 1 {
				t.Fatalf("batch %d: command %d written %d times", b.ID, id, sends[id])
			}
		}
		if b.Outcome != record.BatchFailed || b.Replied == 0 || b.Replied == len(b.Cmds) {
			continue
		}
		if !b.Unknown {
			t.Fatalf("batch %d lost its connection after %d replies with a definite failure", b.ID, b.Replied)
		}
		for j, id := range b.Cmds {
			if sends[id] != 1 || paired[id] != (j < b.Replied) {
				t.Fatalf("batch %d command %d: written %d times, paired %v; %d replies kept", b.ID, j, sends[id], paired[id], b.Replied)
			}
		}
		t.Logf("batch %d cut after %d of %d replies at %v: %s", b.ID, b.Replied, len(b.Cmds), b.Return, b.Err)
		cut++
	}
	if cut != 3 {
		var got []string
		for _, b := range res.Batches {
			if b.Outcome != record.BatchOK {
				got = append(got, fmt.Sprintf("%d %s %d/%d %v", b.ID, b.Outcome, b.Replied, len(b.Cmds), b.Call))
			}
		}
		t.Fatalf("want 3 pipelines cut in the middle of their replies, got %d: %v", cut, got)
	}
}

// TestPlantReplayAcceptedPipeline: with replay-accepted, the INCRs of a pipeline cut in the
// middle of its replies that had no reply yet are written again on the next connection, and
// applied twice: no-replay catches it (TestPositiveControlsThroughJudge); the replies kept
// before the cut are not written again.
func TestPlantReplayAcceptedPipeline(t *testing.T) {
	sc := mustLoad(t, "testdata/plant_replay_accepted_pipeline.yaml")
	res := run(t, sc, sc.Seed, false)
	sends, applies := map[uint64]int{}, map[uint64]int{}
	for _, s := range res.Sends {
		sends[s.CmdID]++
	}
	for _, a := range res.Applies {
		applies[a.CmdID]++
	}
	replayed := 0
	for i := range res.Batches {
		b := &res.Batches[i]
		if b.Outcome != record.BatchFailed || b.Replied == 0 || b.Replied == len(b.Cmds) {
			continue
		}
		for j, id := range b.Cmds {
			again := sends[id] == 2 && applies[id] == 2
			if again != (j >= b.Replied) {
				t.Fatalf("batch %d command %d (%d replies kept): written %d times, applied %d times", b.ID, j, b.Replied, sends[id], applies[id])
			}
		}
		replayed++
	}
	if replayed == 0 {
		t.Fatal("no pipeline cut in the middle of its replies was written again")
	}
	if n := countViolations(res, check.CheckNoReplay); n == 0 {
		t.Fatal("no-replay missed the replayed pipeline")
	}
}

// TestBatchPipelineTimeoutMidReplies: in batch-pipeline-timeout-mid-replies a slow node answers a
// pipeline's INCRs one by one, and the pipeline's budget runs out after some of its replies: the
// batch keeps those (read before the batcher leaves) and reports the others unknown; the
// connection, which still holds the pipeline, pairs the late replies with it (each under its own
// INCR's id), and nothing is written twice.
func TestBatchPipelineTimeoutMidReplies(t *testing.T) {
	sc := mustLoad(t, "../scenarios/batch-pipeline-timeout-mid-replies.yaml")
	res := run(t, sc, sc.Seed, false)
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations: %v", v.Unexpected)
	}
	sends, applies := map[uint64]int{}, map[uint64]int{}
	for _, s := range res.Sends {
		sends[s.CmdID]++
	}
	for _, a := range res.Applies {
		applies[a.CmdID]++
	}
	paired := map[uint64]time.Duration{}
	for _, p := range res.Paired {
		paired[p.CmdID] = p.At
	}
	left := 0
	for i := range res.Batches {
		b := &res.Batches[i]
		if b.Outcome != record.BatchTimeout || b.Replied == 0 || b.Replied == len(b.Cmds) {
			continue
		}
		if !b.Unknown {
			t.Fatalf("batch %d timed out after %d replies without unknown outcomes", b.ID, b.Replied)
		}
		for j, id := range b.Cmds {
			at, ok := paired[id]
			if sends[id] != 1 || applies[id] != 1 || !ok || (at <= b.Return) != (j < b.Replied) {
				t.Fatalf("batch %d command %d (%d replies kept at %v): written %d times, applied %d times, paired %v at %v",
					b.ID, j, b.Replied, b.Return, sends[id], applies[id], ok, at)
			}
		}
		left++
	}
	if left == 0 {
		t.Fatal("no pipeline timed out in the middle of its replies")
	}
	t.Logf("%d pipelines timed out in the middle of their replies", left)
}
