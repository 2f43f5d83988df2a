package engine

import (
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
)

// TestRelaxShrunk: a completion that closes the window, or a notice that brings its end
// forward, reports the shrink and closes the channel a kept-alive caller waits on; a notice
// that opens or extends the window does neither.
func TestRelaxShrunk(t *testing.T) {
	r := NewRelax(fsm.MaintConfig{RelaxedTimeout: 5 * time.Second, WindowTimeout: 10 * time.Second})
	t0 := time.Unix(100, 0)
	ch := r.Shrunk()
	if r.Notice(fsm.MaintNotice{Kind: fsm.MaintMigrating}, t0) {
		t.Fatal("opening a window reported a shrink")
	}
	start := t0.Add(-500 * time.Millisecond)
	wake, ok := r.Extend(t0.Add(500*time.Millisecond), start, time.Second)
	if !ok || !wake.Equal(start.Add(5*time.Second)) {
		t.Fatalf("Extend = %v, %v; want the relaxed deadline", wake, ok)
	}
	// A MOVING with a 1s grace ends before the MIGRATING window: the end does not move.
	if r.Notice(fsm.MaintNotice{Kind: fsm.MaintMoving, Time: time.Second}, t0.Add(time.Second)) {
		t.Fatal("a shorter overlapping window reported a shrink")
	}
	select {
	case <-ch:
		t.Fatal("closed before any shrink")
	default:
	}
	if !r.Notice(fsm.MaintNotice{Kind: fsm.MaintMigrated}, t0.Add(1500*time.Millisecond)) {
		t.Fatal("MIGRATED did not report the shrink")
	}
	select {
	case <-ch:
	default:
		t.Fatal("Shrunk's channel not closed by the shrink")
	}
	if _, ok := r.Extend(t0.Add(3*time.Second), start, time.Second); ok {
		t.Fatal("still relaxed after the windows closed")
	}
}
