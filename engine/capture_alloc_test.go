package engine

import (
	"errors"
	"testing"

	"github.com/respire-go/respire/fsm"
)

// captureFixture is a capture with machines and a recorded event with a few effects to append.
func captureFixture(t testing.TB, size int) (*capture, *machines, fsm.Event, []fsm.Effect) {
	t.Helper()
	cfg := Config{Slots: 2, Policy: &fsm.Policy{InitialDelay: 1, BackoffMultiplier: 2, MaxDelay: 10, MaxAttempts: 3},
		Capture: CaptureConfig{Size: size}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	m := newMachines(cfg)
	ev := fsm.Event{Kind: fsm.ConnLost, Conn: 3, Err: errors.New("reset"), At: 5}
	effects := []fsm.Effect{{Kind: fsm.Route, Slot: 0}, {Kind: fsm.ArmTimer, Timer: 4, After: 10}, {Kind: fsm.Emit}}
	return newCapture(cfg.Capture), m, ev, effects
}

// TestCaptureAppendAllocatesNothing: recording an event and its effects allocates nothing
// between snapshots (the ring is preallocated).
func TestCaptureAppendAllocatesNothing(t *testing.T) {
	c, m, ev, effects := captureFixture(t, MaxCaptureSize)
	allocs := testing.AllocsPerRun(1000, func() { c.record(&ev, effects, m) })
	if allocs != 0 {
		t.Fatalf("record allocated %.1f times per event", allocs)
	}
	if c.seq < 1000 || c.snaps[0].ok {
		t.Fatalf("recorded %d events, snapshot taken: %v (the test must stay between snapshots)", c.seq, c.snaps[0].ok)
	}
}

// BenchmarkCaptureRecord measures an append with the snapshots amortised: a ring of 1024 events
// takes one every 512.
func BenchmarkCaptureRecord(b *testing.B) {
	c, m, ev, effects := captureFixture(b, 1024)
	b.ReportAllocs()
	for b.Loop() {
		c.record(&ev, effects, m)
	}
}
