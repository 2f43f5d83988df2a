package engine_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"pgregory.net/rapid"
)

// recordCapture steps the first n steps of a simulator run of name into a Recorder with a ring
// of size events and returns the dump.
func recordCapture(t testing.TB, name string, seed uint64, size, n int) ([]byte, int) {
	t.Helper()
	sc, res := simRun(t, name, seed)
	cfg := sc.EngineConfig()
	cfg.Capture = engine.CaptureConfig{Size: size}
	rec, err := engine.NewRecorder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n > len(res.Steps) || n < 0 {
		n = len(res.Steps)
	}
	for i := 0; i < n; i++ {
		ev := res.Steps[i].Event
		rec.Step(&ev)
	}
	dump, err := rec.Dump(engine.CaptureOnDemand)
	if err != nil {
		t.Fatal(err)
	}
	return dump, n
}

// TestCaptureTailReplays: a capture of any run, ring size and length reads back and replays
// with every effect matching, from a snapshot once the ring has wrapped.
func TestCaptureTailReplays(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		name := rapid.SampledFrom(snapshotScenarios).Draw(rt, "scenario")
		size := rapid.IntRange(engine.MinCaptureSize, 512).Draw(rt, "size")
		n := rapid.IntRange(1, 4000).Draw(rt, "steps")
		dump, n := recordCapture(t, name, 1, size, n)
		f, err := engine.ReadCapture(bytes.NewReader(dump))
		if err != nil {
			rt.Fatal(err)
		}
		if len(f.Steps) == 0 || len(f.Steps) > size || f.Header.Total != uint64(n) {
			rt.Fatalf("capture of %d events with a ring of %d holds %d (total %d)", n, size, len(f.Steps), f.Header.Total)
		}
		effects := 0
		for _, st := range f.Steps {
			effects += len(st.Effects)
		}
		if n >= size && len(f.Steps) < size/2 && effects < size*engine.CaptureEffectsPerEvent/2 {
			rt.Fatalf("a wrapped ring of %d dumped only %d events (%d effects)", size, len(f.Steps), effects)
		}
		if f.Header.Snapshot != (f.Header.First > 0) {
			rt.Fatalf("snapshot %v with first event %d", f.Header.Snapshot, f.Header.First)
		}
		checked := 0
		d, err := f.Replay(func(int, *fsm.Event, []fsm.Effect) { checked++ })
		if err != nil {
			rt.Fatal(err)
		}
		if d != nil {
			rt.Fatal(d)
		}
		if checked != len(f.Steps) {
			rt.Fatalf("replayed %d of %d steps", checked, len(f.Steps))
		}
	})
}

// TestCaptureTamperNamesFirstDivergence: changing one recorded effect, or one event, makes
// replay name that very event.
func TestCaptureTamperNamesFirstDivergence(t *testing.T) {
	dump, _ := recordCapture(t, "slot-exhaustion-keeps-healthy-slots", 1, 16, -1)
	lines := strings.Split(strings.TrimSuffix(string(dump), "\n"), "\n")
	f, err := engine.ReadCapture(strings.NewReader(string(dump)))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Header.Snapshot {
		t.Fatal("the capture did not wrap: the test needs a tail")
	}
	if d, err := f.Replay(nil); err != nil || d != nil {
		t.Fatalf("untampered capture: %v %v", d, err)
	}
	// The first step with an armed timer: change its delay.
	target := -1
	for i, st := range f.Steps {
		for _, e := range st.Effects {
			if strings.HasPrefix(e.Text, "arm-timer") && target < 0 && i > 3 {
				target = i
			}
		}
	}
	if target < 0 {
		t.Fatal("no timer armed in the capture")
	}
	line := 2 + target // header, snapshot, then the steps
	tampered := append([]string(nil), lines...)
	tampered[line] = strings.Replace(tampered[line], "after=", "after=9", 1)
	if tampered[line] == lines[line] {
		t.Fatal("the tamper changed nothing")
	}
	tf, err := engine.ReadCapture(strings.NewReader(strings.Join(tampered, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	d, err := tf.Replay(nil)
	if err != nil {
		t.Fatal(err)
	}
	if d == nil || d.Index != target || !strings.Contains(d.Detail, "arm-timer") {
		t.Fatalf("tamper at step %d reported as %v", target, d)
	}
	if d.Machine == "" || len(d.Expected) == 0 || len(d.Got) == 0 {
		t.Fatalf("divergence lacks its machine or effects: %+v", d)
	}

	// Change an event: a random draw moves the jitter, or a time moves a timer; a kind change
	// always shows. Take the first connection loss or dial failure and make it a handshake.
	target = -1
	for i, st := range f.Steps {
		if (st.Event.Kind == fsm.DialFailed || st.Event.Kind == fsm.ConnLost) && i > 3 {
			target = i
			break
		}
	}
	if target < 0 {
		t.Fatal("no failure in the capture")
	}
	tampered = append([]string(nil), lines...)
	kind := `"Kind":` + itoa(int(f.Steps[target].Event.Kind))
	tampered[2+target] = strings.Replace(tampered[2+target], kind, `"Kind":`+itoa(int(fsm.Withdrew)), 1)
	tf, err = engine.ReadCapture(strings.NewReader(strings.Join(tampered, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	d, _ = tf.Replay(nil)
	if d == nil || d.Index != target {
		t.Fatalf("tampered event %d reported as %v", target, d)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestCaptureRejectsOthers: a file that is not a capture is refused with ErrCaptureFormat.
func TestCaptureRejectsOthers(t *testing.T) {
	for _, in := range []string{"", "{}", `{"format":"other"}`, "name: x\n"} {
		if _, err := engine.ReadCapture(strings.NewReader(in)); !errors.Is(err, engine.ErrCaptureFormat) {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// TestCaptureConfigBounds: sizes and thresholds outside their bounds are refused.
func TestCaptureConfigBounds(t *testing.T) {
	for _, c := range []engine.CaptureConfig{{Size: 1}, {Size: engine.MaxCaptureSize + 1}, {Size: -1},
		{Size: 64, BurstFailures: engine.MaxCaptureBurstFailures + 1}, {Size: 64, BurstWindow: -1}} {
		var ce *engine.ConfigError
		if err := c.Validate(); !errors.As(err, &ce) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for _, c := range []engine.CaptureConfig{{}, {Size: 16}, {Size: engine.MaxCaptureSize, BurstFailures: -1}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}
