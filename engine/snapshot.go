package engine

import (
	"github.com/cockroachdb/errors"
	"github.com/respire-go/respire/fsm"
)

// Replayer steps recorded events into a client's machines outside any engine, exactly as the
// engine routes them, and can snapshot the machines' state and restore it. Replay from the first
// event starts from NewReplayer; replay of a journal's tail starts from a snapshot taken before
// the tail's first event (RestoreReplayer), so that a bounded capture replays.
type Replayer struct {
	m   *machines
	out fsm.Outbox
}

// NewReplayer returns a Replayer whose machines are fresh, built from cfg, which must be valid
// (see Config.Validate).
func NewReplayer(cfg Config) (*Replayer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Replayer{m: newMachines(cfg)}, nil
}

// RestoreReplayer returns a Replayer whose machines are in the state a snapshot recorded (see
// Snapshot). The snapshot carries the machines' configurations too, so it alone defines them.
func RestoreReplayer(snapshot []byte) (*Replayer, error) {
	m := &machines{}
	if err := decodeState(snapshot, m); err != nil {
		return nil, errors.Wrap(err, "respire: restore snapshot")
	}
	if m.cluster == nil && (m.mux == nil || m.pool == nil) || m.eps[0] == nil || m.eps[1] == nil {
		return nil, errors.New("respire: restore snapshot: the snapshot lacks machines")
	}
	return &Replayer{m: m}, nil
}

// Step steps ev into the machines and returns its effects, each marked with the machine that
// produced it. The slice is reused by the next Step.
func (r *Replayer) Step(ev *fsm.Event) []fsm.Effect {
	r.out.Reset()
	r.m.step(ev, &r.out)
	return r.out.Effects
}

// Snapshot appends the machines' state, as JSON, to dst. Restoring it gives machines that
// answer every later event as these do.
func (r *Replayer) Snapshot(dst []byte) ([]byte, error) {
	return encodeState(dst, r.m, nil, nil)
}

// Recorder steps events into a client's machines, as Replayer does, and records them in a
// capture ring as an engine with Config.Capture does: the simulator writes a run as a capture
// with it, and tests check captures against whole runs.
type Recorder struct {
	cfg Config
	r   *Replayer
	c   *capture
}

// NewRecorder returns a Recorder of fresh machines built from cfg, whose Capture.Size must be
// set.
func NewRecorder(cfg Config) (*Recorder, error) {
	r, err := NewReplayer(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Capture.Size == 0 {
		return nil, &ConfigError{Field: "Capture.Size", Reason: "must be set for a Recorder"}
	}
	return &Recorder{cfg: cfg, r: r, c: newCapture(cfg.Capture)}, nil
}

// Step steps ev, records it, and returns its effects (reused by the next Step) and the trigger
// it fired, if any.
func (r *Recorder) Step(ev *fsm.Event) ([]fsm.Effect, CaptureReason) {
	effects := r.r.Step(ev)
	return effects, r.c.record(ev, effects, r.r.m)
}

// Dump returns the capture as DumpCapture writes it.
func (r *Recorder) Dump(reason CaptureReason) ([]byte, error) { return r.c.dump(r.cfg, reason) }
