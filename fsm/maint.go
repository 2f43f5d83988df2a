package fsm

import (
	"strconv"
	"time"
)

// Maintenance notifications (spec "Maintenance notifications").
//
// A managed Redis service announces maintenance on a connection with RESP3 pushes. netio/wire
// parses them into MaintNotice values; a Relaxation, one per connection, turns them into the
// deadlines of that connection's commands:
//
//   - MIGRATING, FAILING_OVER and SMIGRATING relax the connection until their completion
//     (MIGRATED, FAILED_OVER, SMIGRATED) or until the window's end, WindowTimeout after the
//     notice, whichever comes first;
//   - MOVING relaxes it until its grace or the window's end, whichever is shorter;
//   - while relaxed, a command's deadline is its start plus the greater of its own timeout and
//     RelaxedTimeout; otherwise its start plus its own timeout. A command with no timeout stays
//     unlimited;
//   - a command whose deadline had passed is expired and stays so: relaxation never revives it.
//     When the window ends, old commands fall back to their own deadline and may expire at once;
//   - at most MaxMaintOps overlapping commands are tracked per connection. A command started
//     beyond that bound gets the deadline in force at its start and keeps it.
//
// The machine never reads a clock: every event carries the current time.

// MaintKind is the kind of a maintenance notification.
type MaintKind uint8

// Maintenance notification kinds.
const (
	// MaintMoving: the endpoint is moving; reconnect to the announced endpoint within the grace.
	MaintMoving MaintKind = iota + 1
	// MaintMigrating: a shard migration starts.
	MaintMigrating
	// MaintMigrated: a shard migration finished.
	MaintMigrated
	// MaintFailingOver: a shard failover starts.
	MaintFailingOver
	// MaintFailedOver: a shard failover finished.
	MaintFailedOver
	// MaintSlotMigrating: Cluster slots start moving to another node.
	MaintSlotMigrating
	// MaintSlotMigrated: Cluster slots moved; the notice names their new owners.
	MaintSlotMigrated
)

var maintKindNames = [...]string{"", "MOVING", "MIGRATING", "MIGRATED", "FAILING_OVER", "FAILED_OVER",
	"SMIGRATING", "SMIGRATED"}

// String returns the notification's name on the wire, such as "MIGRATING".
func (k MaintKind) String() string {
	if int(k) < len(maintKindNames) && k != 0 {
		return maintKindNames[k]
	}
	return "maint(" + strconv.Itoa(int(k)) + ")"
}

// Starts reports whether the kind opens a relaxation window (MOVING, MIGRATING, FAILING_OVER,
// SMIGRATING).
func (k MaintKind) Starts() bool {
	return k == MaintMoving || k == MaintMigrating || k == MaintFailingOver || k == MaintSlotMigrating
}

// Completes returns the starting kind that k completes (MIGRATED completes MIGRATING, FAILED_OVER
// completes FAILING_OVER, SMIGRATED completes SMIGRATING), or 0.
func (k MaintKind) Completes() MaintKind {
	switch k {
	case MaintMigrated:
		return MaintMigrating
	case MaintFailedOver:
		return MaintFailingOver
	case MaintSlotMigrated:
		return MaintSlotMigrating
	}
	return 0
}

// SlotMove is one entry of an SMIGRATED notice: slot ranges and the node that now owns them.
type SlotMove struct {
	// Target is the new owner.
	Target Endpoint
	// Ranges are the slots it owns now.
	Ranges []SlotRange
}

// MaintNotice is one parsed maintenance notification.
type MaintNotice struct {
	// Kind is the notification.
	Kind MaintKind
	// Seq is the server's sequence number of the notice.
	Seq int64
	// Time is MOVING's grace, or the expected duration of MIGRATING and FAILING_OVER; zero for
	// the others.
	Time time.Duration
	// Target is MOVING's announced endpoint; the zero Endpoint means "re-resolve the configured
	// host".
	Target Endpoint
	// Shards are the shard identifiers of MIGRATING, MIGRATED, FAILING_OVER and FAILED_OVER.
	Shards []string
	// Slots are the slot ranges of SMIGRATING.
	Slots []SlotRange
	// Moves are the new owners of SMIGRATED.
	Moves []SlotMove
}

// String describes the notice deterministically, without shard names or host names of user
// data (endpoints are infrastructure and are shown).
func (n MaintNotice) String() string {
	b := []byte(n.Kind.String())
	b = append(b, " seq="...)
	b = strconv.AppendInt(b, n.Seq, 10)
	if n.Time != 0 {
		b = append(b, " time="...)
		b = append(b, n.Time.String()...)
	}
	if n.Kind == MaintMoving {
		b = append(b, " to="...)
		if n.Target == (Endpoint{}) {
			b = append(b, "(re-resolve)"...)
		} else {
			b = append(b, n.Target.Host...)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(n.Target.Port), 10)
		}
	}
	if len(n.Shards) > 0 {
		b = append(b, " shards="...)
		b = strconv.AppendInt(b, int64(len(n.Shards)), 10)
	}
	if len(n.Slots) > 0 {
		b = append(b, " slots="...)
		b = appendRanges(b, n.Slots)
	}
	for _, m := range n.Moves {
		b = append(b, ' ')
		b = appendRanges(b, m.Ranges)
		b = append(b, "->"...)
		b = append(b, m.Target.Host...)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(m.Target.Port), 10)
	}
	return string(b)
}

// MaxMaintOps bounds the commands a Relaxation tracks at once per connection.
const MaxMaintOps = 256

// Bounds and defaults of the maintenance options.
const (
	// DefaultMaintRelaxedTimeout is MaintConfig.RelaxedTimeout's default.
	DefaultMaintRelaxedTimeout = 30 * time.Second
	// DefaultMaintWindowTimeout is MaintConfig.WindowTimeout's default.
	DefaultMaintWindowTimeout = 60 * time.Second
	// MinMaintTimeout and MaxMaintTimeout bound both timeouts.
	MinMaintTimeout = time.Millisecond
	// MaxMaintTimeout is the upper bound of both timeouts: one day.
	MaxMaintTimeout = 24 * time.Hour
)

// MaintConfig configures a Relaxation.
type MaintConfig struct {
	// RelaxedTimeout is the least timeout of a command while its connection is relaxed.
	RelaxedTimeout time.Duration
	// WindowTimeout is the longest a notice relaxes a connection.
	WindowTimeout time.Duration
}

// MaintEventKind is the kind of a MaintEvent.
type MaintEventKind uint8

// Relaxation events.
const (
	// MaintNoticeReceived: Notice arrived on the connection.
	MaintNoticeReceived MaintEventKind = iota + 1
	// MaintOpStarted: command Op started at Start with its own Timeout (0: unlimited).
	MaintOpStarted
	// MaintOpEnded: command Op completed, failed or expired; it is no longer tracked.
	MaintOpEnded
	// MaintTimerFired: the timer of the last MaintArmTimer effect fired.
	MaintTimerFired
)

// MaintEvent is one input of a Relaxation. Now is the current time of every event.
type MaintEvent struct {
	Kind    MaintEventKind
	Now     time.Time
	Notice  MaintNotice
	Op      uint64
	Start   time.Time
	Timeout time.Duration
}

// String describes the event with times relative to the Unix epoch origin used by tests; it is
// deterministic.
func (e MaintEvent) String() string {
	at := strconv.FormatInt(e.Now.UnixMilli(), 10) + "ms "
	switch e.Kind {
	case MaintNoticeReceived:
		return at + "notice " + e.Notice.String()
	case MaintOpStarted:
		return at + "start op=" + strconv.FormatUint(e.Op, 10) + " at=" + strconv.FormatInt(e.Start.UnixMilli(), 10) +
			"ms timeout=" + e.Timeout.String()
	case MaintOpEnded:
		return at + "end op=" + strconv.FormatUint(e.Op, 10)
	case MaintTimerFired:
		return at + "timer"
	}
	return at + "event(" + strconv.Itoa(int(e.Kind)) + ")"
}

// MaintEffectKind is the kind of a MaintEffect.
type MaintEffectKind uint8

// Relaxation effects.
const (
	// MaintSetDeadline: command Op's deadline is now At (the zero time: none). An At not after
	// the event's time means the command expires at once.
	MaintSetDeadline MaintEffectKind = iota + 1
	// MaintArmTimer: (re)arm the machine's single timer for At; the zero At cancels it.
	MaintArmTimer
	// MaintRelaxed: the connection became relaxed until At (or its end moved to At).
	MaintRelaxed
	// MaintRestored: the connection is no longer relaxed.
	MaintRestored
	// MaintUntracked: command Op started beyond MaxMaintOps: it keeps the deadline it got.
	MaintUntracked
	// MaintIgnored: the notice completes a window that is not open; nothing changed.
	MaintIgnored
)

// MaintEffect is one output of a Relaxation.
type MaintEffect struct {
	Kind MaintEffectKind
	Op   uint64
	At   time.Time
}

// String describes the effect deterministically.
func (f MaintEffect) String() string {
	at := "none"
	if !f.At.IsZero() {
		at = strconv.FormatInt(f.At.UnixMilli(), 10) + "ms"
	}
	switch f.Kind {
	case MaintSetDeadline:
		return "deadline op=" + strconv.FormatUint(f.Op, 10) + " at=" + at
	case MaintArmTimer:
		return "timer at=" + at
	case MaintRelaxed:
		return "relaxed until=" + at
	case MaintRestored:
		return "restored"
	case MaintUntracked:
		return "untracked op=" + strconv.FormatUint(f.Op, 10)
	case MaintIgnored:
		return "ignored"
	}
	return "effect(" + strconv.Itoa(int(f.Kind)) + ")"
}

// maintOp is a tracked command.
type maintOp struct {
	id       uint64
	start    time.Time
	timeout  time.Duration
	deadline time.Time // current deadline; zero: unlimited
}

// Relaxation is the pure per-connection machine of maintenance relaxation. The zero value is not
// usable; build one with NewRelaxation.
type Relaxation struct {
	cfg MaintConfig
	// windows holds, per starting kind, when its window ends (zero: closed).
	windows [MaintSlotMigrating + 1]time.Time
	relaxed bool
	since   time.Time // when the current relaxation began
	until   time.Time
	timer   time.Time
	ops     []maintOp
}

// NewRelaxation returns the machine for cfg. Non-positive timeouts take their defaults.
func NewRelaxation(cfg MaintConfig) *Relaxation {
	if cfg.RelaxedTimeout <= 0 {
		cfg.RelaxedTimeout = DefaultMaintRelaxedTimeout
	}
	if cfg.WindowTimeout <= 0 {
		cfg.WindowTimeout = DefaultMaintWindowTimeout
	}
	return &Relaxation{cfg: cfg}
}

// Relaxed reports whether the connection is relaxed, and until when.
func (r *Relaxation) Relaxed() (bool, time.Time) { return r.relaxed, r.until }

// Tracked returns the number of tracked commands.
func (r *Relaxation) Tracked() int { return len(r.ops) }

// Deadline returns the current deadline of tracked command id (zero: unlimited) and whether it is
// tracked.
func (r *Relaxation) Deadline(id uint64) (time.Time, bool) {
	for i := range r.ops {
		if r.ops[i].id == id {
			return r.ops[i].deadline, true
		}
	}
	return time.Time{}, false
}

// Step applies ev and appends its effects to out, returning it.
func (r *Relaxation) Step(ev *MaintEvent, out []MaintEffect) []MaintEffect {
	if ev.Kind == MaintTimerFired && !r.timer.IsZero() && !ev.Now.Before(r.timer) {
		r.timer = time.Time{} // it fired: nothing to cancel
	}
	// Windows that ended by now close first, whatever the event: a late timer never leaves a
	// command relaxed past its window.
	out = r.settle(ev.Now, out)
	switch ev.Kind {
	case MaintNoticeReceived:
		out = r.noticed(ev, out)
	case MaintOpStarted:
		out = r.started(ev, out)
	case MaintOpEnded:
		for i := range r.ops {
			if r.ops[i].id == ev.Op {
				r.ops = append(r.ops[:i], r.ops[i+1:]...)
				break
			}
		}
	case MaintTimerFired:
		// settle above closed what ended and rearmed the timer.
	}
	return out
}

func (r *Relaxation) noticed(ev *MaintEvent, out []MaintEffect) []MaintEffect {
	n := &ev.Notice
	switch {
	case n.Kind.Starts():
		end := ev.Now.Add(r.cfg.WindowTimeout)
		if n.Kind == MaintMoving && n.Time >= 0 && n.Time < r.cfg.WindowTimeout {
			end = ev.Now.Add(n.Time)
		}
		r.windows[n.Kind] = end
	case n.Kind.Completes() != 0:
		start := n.Kind.Completes()
		if r.windows[start].IsZero() {
			return append(out, MaintEffect{Kind: MaintIgnored})
		}
		r.windows[start] = time.Time{}
	default:
		return append(out, MaintEffect{Kind: MaintIgnored})
	}
	return r.settle(ev.Now, out)
}

// settle closes the windows that ended by now, recomputes the relaxation and every tracked
// deadline, and rearms the timer.
func (r *Relaxation) settle(now time.Time, out []MaintEffect) []MaintEffect {
	var until time.Time
	for k := range r.windows {
		w := r.windows[k]
		if w.IsZero() {
			continue
		}
		if !now.Before(w) {
			r.windows[k] = time.Time{}
			continue
		}
		if w.After(until) {
			until = w
		}
	}
	relaxed := !until.IsZero()
	changed := relaxed != r.relaxed || !until.Equal(r.until)
	if relaxed && !r.relaxed {
		r.since = now
	}
	r.relaxed, r.until = relaxed, until
	if changed {
		if relaxed {
			out = append(out, MaintEffect{Kind: MaintRelaxed, At: until})
		} else {
			out = append(out, MaintEffect{Kind: MaintRestored})
		}
		for i := range r.ops {
			op := &r.ops[i]
			if op.deadline.IsZero() || !now.Before(op.deadline) {
				continue // unlimited, or already expired: never revived
			}
			d := r.deadlineOf(op.start, op.timeout)
			if !d.Equal(op.deadline) {
				op.deadline = d
				out = append(out, MaintEffect{Kind: MaintSetDeadline, Op: op.id, At: d})
			}
		}
	}
	// The timer fires at the earliest window end.
	var next time.Time
	for _, w := range r.windows {
		if !w.IsZero() && (next.IsZero() || w.Before(next)) {
			next = w
		}
	}
	if !next.Equal(r.timer) {
		r.timer = next
		out = append(out, MaintEffect{Kind: MaintArmTimer, At: next})
	}
	return out
}

// deadlineOf is the deadline of a command started at start with its own timeout, in the
// current relaxation.
func (r *Relaxation) deadlineOf(start time.Time, timeout time.Duration) time.Time {
	if timeout <= 0 {
		return time.Time{}
	}
	if r.relaxed {
		timeout = max(timeout, r.cfg.RelaxedTimeout)
	}
	return start.Add(timeout)
}

func (r *Relaxation) started(ev *MaintEvent, out []MaintEffect) []MaintEffect {
	d := r.deadlineOf(ev.Start, ev.Timeout)
	if ev.Timeout > 0 && !ev.Now.Before(ev.Start.Add(ev.Timeout)) {
		// Its own deadline passed before it was registered: expired, and never revived.
		return append(out, MaintEffect{Kind: MaintSetDeadline, Op: ev.Op, At: ev.Start.Add(ev.Timeout)})
	}
	out = append(out, MaintEffect{Kind: MaintSetDeadline, Op: ev.Op, At: d})
	if ev.Timeout <= 0 {
		return out // unlimited: nothing to adjust later
	}
	if len(r.ops) >= MaxMaintOps {
		return append(out, MaintEffect{Kind: MaintUntracked, Op: ev.Op})
	}
	r.ops = append(r.ops, maintOp{id: ev.Op, start: ev.Start, timeout: ev.Timeout, deadline: d})
	return out
}

// DeadlineAt evaluates, without tracking it, the deadline at now of a command started at start
// with its own timeout (0: unlimited, the zero deadline), for a runtime that checks deadlines
// when they fire rather than registering every command. recheck is when to ask again: the
// earlier of the deadline and the window's end, or the zero time when the answer is final. A
// command whose own deadline passed before the relaxation began stays expired. DeadlineAt does
// not change the machine: the windows that ended by now count as closed.
func (r *Relaxation) DeadlineAt(now, start time.Time, timeout time.Duration) (deadline, recheck time.Time) {
	if timeout <= 0 {
		return time.Time{}, time.Time{}
	}
	own := start.Add(timeout)
	relaxed := r.relaxed && now.Before(r.until)
	if !relaxed || !r.since.Before(own) {
		return own, time.Time{}
	}
	deadline = start.Add(max(timeout, r.cfg.RelaxedTimeout))
	if deadline.Before(r.until) {
		return deadline, deadline
	}
	return deadline, r.until
}
