package fsm

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// relaxModel is a naive oracle of the relaxation rules, computed from the events alone: one
// window end per starting kind, the connection relaxed while any is open, and each command's
// deadline frozen once it was reached.
type relaxModel struct {
	cfg     MaintConfig
	windows map[MaintKind]time.Time
	ops     map[uint64]*modelOp
}

type modelOp struct {
	start    time.Time
	timeout  time.Duration
	deadline time.Time
}

func (m *relaxModel) relaxedAt(now time.Time) bool {
	for k, w := range m.windows {
		if !now.Before(w) {
			delete(m.windows, k)
		}
	}
	return len(m.windows) > 0
}

// update recomputes the deadline of every command not expired by now.
func (m *relaxModel) update(now time.Time, relaxed bool) {
	for _, op := range m.ops {
		if !op.deadline.IsZero() && !now.Before(op.deadline) {
			continue // reached: frozen
		}
		to := op.timeout
		if relaxed {
			to = max(to, m.cfg.RelaxedTimeout)
		}
		op.deadline = op.start.Add(to)
	}
}

// TestRelaxationProperties drives a Relaxation with random notices, commands and timer fires and
// checks, after every event:
//   - every deadline equals the oracle's: start plus the own timeout, or plus the greater of the
//     own and relaxed timeouts while relaxed; a deadline reached is never moved (not revived);
//   - no deadline is before start+own or after start+max(own, relaxed); unlimited stays unlimited;
//   - the relaxation never outlives WindowTimeout after the last starting notice;
//   - DeadlineAt, the untracked evaluation, agrees with every tracked deadline;
//   - at most MaxMaintOps commands are tracked;
//   - replaying the journal of events into a fresh machine gives the same effects (event
//     sourcing).
func TestRelaxationProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := MaintConfig{
			RelaxedTimeout: time.Duration(rapid.IntRange(1, 40).Draw(t, "relaxed")) * time.Second,
			WindowTimeout:  time.Duration(rapid.IntRange(1, 90).Draw(t, "window")) * time.Second,
		}
		r := NewRelaxation(cfg)
		m := &relaxModel{cfg: cfg, windows: map[MaintKind]time.Time{}, ops: map[uint64]*modelOp{}}
		now := maintOrigin
		var journal []MaintEvent
		var effects []MaintEffect
		var lastStart time.Time
		var nextOp uint64
		steps := rapid.IntRange(1, 300).Draw(t, "steps")
		for range steps {
			now = now.Add(time.Duration(rapid.IntRange(0, 5000).Draw(t, "advance")) * time.Millisecond)
			var ev MaintEvent
			ev.Now = now
			switch rapid.IntRange(0, 4).Draw(t, "kind") {
			case 0:
				ev.Kind = MaintNoticeReceived
				ev.Notice.Kind = MaintKind(rapid.IntRange(int(MaintMoving), int(MaintSlotMigrated)).Draw(t, "notice"))
				ev.Notice.Time = time.Duration(rapid.IntRange(0, 120).Draw(t, "time")) * time.Second
			case 1, 2:
				nextOp++
				ev.Kind, ev.Op = MaintOpStarted, nextOp
				ev.Start = now.Add(-time.Duration(rapid.IntRange(0, 3000).Draw(t, "age")) * time.Millisecond)
				ev.Timeout = time.Duration(rapid.IntRange(0, 50).Draw(t, "timeout")) * time.Second
			case 3:
				if nextOp == 0 {
					continue
				}
				ev.Kind, ev.Op = MaintOpEnded, uint64(rapid.Uint64Range(1, nextOp).Draw(t, "op"))
			case 4:
				ev.Kind = MaintTimerFired
			}
			journal = append(journal, ev)
			out := r.Step(&ev, nil)
			effects = append(effects, out...)

			// The oracle: windows that ended by now close before the event applies, and the
			// commands whose restored deadline passed by then are expired.
			m.update(now, m.relaxedAt(now))
			switch ev.Kind {
			case MaintNoticeReceived:
				k := ev.Notice.Kind
				if k.Starts() {
					end := now.Add(cfg.WindowTimeout)
					if k == MaintMoving && ev.Notice.Time < cfg.WindowTimeout {
						end = now.Add(ev.Notice.Time)
					}
					m.windows[k] = end
					lastStart = now
				} else {
					delete(m.windows, k.Completes())
				}
			case MaintOpStarted:
				if ev.Timeout > 0 && now.Before(ev.Start.Add(ev.Timeout)) && len(m.ops) < MaxMaintOps {
					m.ops[ev.Op] = &modelOp{start: ev.Start, timeout: ev.Timeout}
				}
			case MaintOpEnded:
				delete(m.ops, ev.Op)
			}
			relaxed := m.relaxedAt(now)
			m.update(now, relaxed)
			for id, op := range m.ops {
				got, ok := r.Deadline(id)
				if !ok {
					t.Fatalf("op %d not tracked", id)
				}
				if !got.Equal(op.deadline) {
					t.Fatalf("op %d: deadline %v, oracle %v (relaxed %v)", id, got.Sub(maintOrigin), op.deadline.Sub(maintOrigin), relaxed)
				}
				// The untracked evaluation the socket runtime uses agrees with the tracked one.
				// Both may name different past instants for a command whose timer was late:
				// expired either way.
				if at, _ := r.DeadlineAt(now, op.start, op.timeout); !at.Equal(got) && (at.After(now) || got.After(now)) {
					for _, e := range journal {
						t.Log(e.String())
					}
					t.Fatalf("op %d: DeadlineAt %v, tracked %v", id, at.Sub(maintOrigin), got.Sub(maintOrigin))
				}
			}
			if r.Tracked() != len(m.ops) || r.Tracked() > MaxMaintOps {
				t.Fatalf("tracked %d, oracle %d", r.Tracked(), len(m.ops))
			}
			gotRelaxed, until := r.Relaxed()
			if gotRelaxed != relaxed {
				t.Fatalf("relaxed %v, oracle %v", gotRelaxed, relaxed)
			}
			if gotRelaxed && until.After(lastStart.Add(cfg.WindowTimeout)) {
				t.Fatalf("relaxed until %v, beyond the window after %v", until, lastStart)
			}
			for _, f := range out {
				if f.Kind != MaintSetDeadline || f.At.IsZero() {
					continue
				}
				if op, ok := m.ops[f.Op]; ok {
					if f.At.Before(op.start.Add(op.timeout)) || f.At.After(op.start.Add(max(op.timeout, cfg.RelaxedTimeout))) {
						t.Fatalf("op %d: deadline %v out of bounds", f.Op, f.At)
					}
				}
			}
		}
		// Replay the journal into a fresh machine.
		fresh := NewRelaxation(cfg)
		var replayed []MaintEffect
		for i := range journal {
			replayed = fresh.Step(&journal[i], replayed)
		}
		if len(replayed) != len(effects) {
			t.Fatalf("replay: %d effects, want %d", len(replayed), len(effects))
		}
		for i := range effects {
			if replayed[i].String() != effects[i].String() {
				t.Fatalf("replay effect %d: %s, want %s", i, replayed[i], effects[i])
			}
		}
	})
}

// TestRelaxationTracksAtMost256 checks the tracking bound: the 257th overlapping command is
// reported untracked and keeps its deadline when the connection is relaxed later, while the
// first 256 are relaxed.
func TestRelaxationTracksAtMost256(t *testing.T) {
	r := NewRelaxation(MaintConfig{RelaxedTimeout: 30 * time.Second, WindowTimeout: time.Minute})
	for i := uint64(1); i <= MaxMaintOps+1; i++ {
		out := r.Step(&MaintEvent{Kind: MaintOpStarted, Now: maintOrigin, Op: i, Start: maintOrigin, Timeout: time.Second}, nil)
		untracked := len(out) == 2 && out[1].Kind == MaintUntracked
		if untracked != (i > MaxMaintOps) {
			t.Fatalf("op %d: effects %v", i, out)
		}
	}
	if r.Tracked() != MaxMaintOps {
		t.Fatalf("tracked %d", r.Tracked())
	}
	out := r.Step(&MaintEvent{Kind: MaintNoticeReceived, Now: maintOrigin, Notice: MaintNotice{Kind: MaintMigrating}}, nil)
	moved := 0
	for _, f := range out {
		if f.Kind == MaintSetDeadline {
			if f.Op > MaxMaintOps {
				t.Fatalf("untracked op %d moved", f.Op)
			}
			moved++
		}
	}
	if moved != MaxMaintOps {
		t.Fatalf("%d deadlines relaxed, want %d", moved, MaxMaintOps)
	}
}
