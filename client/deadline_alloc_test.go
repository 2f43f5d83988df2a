//go:build !race

package client

import (
	"testing"
	"time"
)

// TestGroupDeadlineReusesItsTimer: a batch's run that waits (awaitGroup) arms a timer taken from
// the ones earlier waits gave back, not a new timer and channel each time (2 allocations per
// wait before).
func TestGroupDeadlineReusesItsTimer(t *testing.T) {
	var warm groupDeadline
	warm.arm(time.Minute)
	warm.stop()
	if n := testing.AllocsPerRun(100, func() {
		var gd groupDeadline
		gd.arm(time.Minute)
		gd.stop()
	}); n != 0 {
		t.Errorf("arming a batch's deadline: %v allocations, want 0", n)
	}
}
