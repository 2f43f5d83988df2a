package client

import (
	"testing"
	"time"
)

// TestGroupDeadlineStaleFireNeverReachesTheNextWait: a wait whose timer fired unread (the run
// completed at its deadline) gives the timer back; the next wait reusing it sees only its own
// deadline, never the old fire.
func TestGroupDeadlineStaleFireNeverReachesTheNextWait(t *testing.T) {
	reused := 0
	for range 20 {
		var first groupDeadline
		first.arm(time.Millisecond)
		time.Sleep(3 * time.Millisecond) // fired, not received
		used := first.t
		first.stop()

		var next groupDeadline
		next.arm(time.Minute)
		if next.t == used {
			reused++
			select {
			case <-next.fired():
				t.Fatal("the reused timer delivered the previous wait's fire")
			case <-time.After(5 * time.Millisecond):
			}
		}
		next.stop()
	}
	if reused == 0 {
		t.Fatal("no wait reused the timer of the one before: the check above never ran")
	}
}
