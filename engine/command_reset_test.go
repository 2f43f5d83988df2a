package engine

import (
	"errors"
	"testing"
)

// TestResetClearsAUsedCommand checks that Reset, which writes only the fields that were set,
// leaves a command that went through every state a use can leave behind (a failure, a waiter id,
// a relaxation, Cluster routing, a caller that left, a final stage) as good as new: queued, its
// caller waiting, no error, and Answered true exactly once.
func TestResetClearsAUsedCommand(t *testing.T) {
	var c Command
	c.Done = func(*Command) {}
	c.waiter = 7
	c.relax.Store(&Relax{})
	c.cl = clusterCmd{eng: &Engine{}, routed: true, slot: 5, redirects: 2}
	c.stage.Store(uint32(StageWriting))
	if !c.Leave() {
		t.Fatal("Leave on a waiting command reported false")
	}
	c.cl.eng = nil // complete without the Cluster redirect handling
	c.Complete(errors.New("lost"))
	if c.Err == nil || c.FinalStage() != StageWriting || c.Stage() != StageDone {
		t.Fatalf("before Reset: err %v, final %v, stage %v", c.Err, c.FinalStage(), c.Stage())
	}
	c.cl.eng = &Engine{}

	c.Reset()
	switch {
	case c.Stage() != StageQueued:
		t.Errorf("stage %v, want queued", c.Stage())
	case c.FinalStage() != StageQueued:
		t.Errorf("final stage %v, want queued", c.FinalStage())
	case c.Err != nil:
		t.Errorf("Err %v, want nil", c.Err)
	case c.waiter != 0:
		t.Errorf("waiter %d, want 0", c.waiter)
	case c.Relax() != nil:
		t.Error("relaxation kept")
	case c.cl != (clusterCmd{}):
		t.Errorf("Cluster state kept: %+v", c.cl)
	case c.Left():
		t.Error("caller still marked as left")
	}
	if !c.Answered() || c.Answered() {
		t.Error("Answered after Reset: want true once")
	}
	if !c.Enqueued() {
		t.Error("Enqueued after Reset reported false")
	}
}
