package engine

import "github.com/respire-go/respire/fsm"

// Journal is a bounded in-memory event journal: the last Cap events stepped into the machines,
// stamped with their time and random draw. Replaying a journal that starts at the first event into
// fresh machines reproduces every effect (see Replay). A production client keeps the tail of its
// journal so that an incident can be recorded and replayed in the simulator.
type Journal struct {
	events []fsm.Event
	next   int
	total  uint64
}

// NewJournal returns a journal retaining the last size events; size < 0 retains none.
func NewJournal(size int) *Journal {
	if size < 0 {
		size = 0
	}
	return &Journal{events: make([]fsm.Event, 0, size)}
}

// Append records ev.
func (j *Journal) Append(ev *fsm.Event) {
	j.total++
	if cap(j.events) == 0 {
		return
	}
	if len(j.events) < cap(j.events) {
		j.events = append(j.events, *ev)
		return
	}
	j.events[j.next] = *ev
	j.next = (j.next + 1) % len(j.events)
}

// Total returns the number of events ever appended.
func (j *Journal) Total() uint64 { return j.total }

// Complete reports whether the journal still holds every event since the first.
func (j *Journal) Complete() bool { return j.total == uint64(len(j.events)) }

// Events returns the retained events, oldest first, as a new slice.
func (j *Journal) Events() []fsm.Event {
	out := make([]fsm.Event, 0, len(j.events))
	out = append(out, j.events[j.next:]...)
	return append(out, j.events[:j.next]...)
}

// Replay steps events into a fresh machine built from cfg and calls onStep with each event and
// its effects, exactly as the engine did. It is how a recorded journal reproduces a run.
func Replay(cfg Config, events []fsm.Event, onStep func(ev *fsm.Event, effects []fsm.Effect)) {
	m := newMachines(cfg)
	var out fsm.Outbox
	for i := range events {
		ev := events[i]
		out.Reset()
		m.step(&ev, &out)
		onStep(&ev, out.Effects)
	}
}
