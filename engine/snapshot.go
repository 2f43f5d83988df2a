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
	return encodeState(dst, r.m, nil)
}
