package fsm

import (
	"errors"
	"strconv"
	"time"
)

// Bounds and schedule of the fence machine.
const (
	// DefaultFenceKills is the default bound on the control connections a fence machine runs at
	// once (FenceConfig.MaxKills). Obligations beyond it wait, in the order they arose.
	DefaultFenceKills = 4
	// MaxFenceKills is the largest FenceConfig.MaxKills.
	MaxFenceKills = 64
	// DefaultFenceForgotten is the default number of unidentified connections a fence machine
	// remembers by id (FenceConfig.MaxForgotten). Older ones are answered by a watermark.
	DefaultFenceForgotten = 4096
	// MaxFenceForgotten is the largest FenceConfig.MaxForgotten.
	MaxFenceForgotten = 1 << 20
	// FenceRetryInitial is the wait before the second attempt to discharge an obligation. Each
	// further failure doubles it, up to FenceRetryMax. There is no attempt limit: the obligation
	// is a correctness debt, not a connection the application waits for.
	FenceRetryInitial = 100 * time.Millisecond
	// FenceRetryMax caps the wait between attempts to discharge an obligation.
	FenceRetryMax = 5 * time.Second
)

// Errors the fence machine answers Settle waiters with; match them with errors.Is.
var (
	// ErrNoIdentity: the connection ended with replies outstanding but its CLIENT ID is not
	// known (identity was not requested, or the server refused CLIENT ID), so no fence is
	// possible for it.
	ErrNoIdentity = errors.New("respire: the connection has no recorded CLIENT ID: no fence is possible")
	// ErrFenceDisposed: the client was disposed before the fence was acknowledged. The
	// obligation stays flagged as undischarged.
	ErrFenceDisposed = errors.New("respire: the client was closed before the fence was acknowledged")
)

// FenceRetryDelay is the wait before attempt n+1 of a fence after n failed attempts (n >= 1):
// FenceRetryInitial doubled per further failure, capped at FenceRetryMax.
func FenceRetryDelay(failures int) time.Duration {
	d := FenceRetryInitial
	for i := 1; i < failures && d < FenceRetryMax; i++ {
		d *= 2
	}
	return min(d, FenceRetryMax)
}

// FenceConfig configures a Fence machine. Its zero value is usable (with IDBase 0).
type FenceConfig struct {
	// IDBase is the first identifier of the machine's control connections and timers; set it to
	// IDBase(MachineFence) when the machine shares a loop with others.
	IDBase uint64
	// MaxKills bounds the control connections open at once: 0 means DefaultFenceKills; at most
	// MaxFenceKills.
	MaxKills int
	// MaxForgotten bounds the unidentified connections remembered by id: 0 means
	// DefaultFenceForgotten; at most MaxFenceForgotten.
	MaxForgotten int
}

// Validate reports whether the configuration is within its documented bounds.
func (c FenceConfig) Validate() error {
	if c.MaxKills < 0 || c.MaxKills > MaxFenceKills {
		return &ConfigError{Field: "MaxKills", Reason: "must be between 0 and " + strconv.Itoa(MaxFenceKills)}
	}
	if c.MaxForgotten < 0 || c.MaxForgotten > MaxFenceForgotten {
		return &ConfigError{Field: "MaxForgotten", Reason: "must be between 0 and " + strconv.Itoa(MaxFenceForgotten)}
	}
	return nil
}

// fencePhase is where one obligation stands.
type fencePhase uint8

const (
	// fenceQueued: waiting for a free control connection.
	fenceQueued fencePhase = iota
	// fenceDialing: the control connection is being opened (and handshaken).
	fenceDialing
	// fenceKilling: CLIENT KILL ID was sent; its answer is awaited.
	fenceKilling
	// fenceResting: the last attempt failed; a timer starts the next.
	fenceResting
)

var fencePhaseNames = [...]string{"queued", "dialing", "killing", "resting"}

// obligation is the debt of one connection that ended with replies outstanding.
type obligation struct {
	data     *FenceData
	phase    fencePhase
	conn     ConnID  // the control connection (dialing, killing)
	timer    TimerID // the retry timer (resting)
	failures int
	lastErr  error
	waiters  []WaiterID
}

// Fence is the machine of identity obligations. A connection whose CLIENT ID is known and that
// ended before draining (commands written, replies never read) owes a fence: the server might
// still execute those commands from its buffers. The machine discharges the obligation by
// opening a control connection straight to the connection's physical peer (a Dial with the
// peer's Endpoint: the transport's own connect timeout applies) and sending CLIENT KILL ID
// there (Kill). Its answer, whatever the count or a "No such client" error, proves the old
// connection is gone on the server, and with it every byte it had not yet executed.
//
// Rules:
//   - an obligation is discharged only by its kill's answer (Killed without Err); nothing else
//     drops it: not a failed attempt, not a timeout, not retirement. It does not use the
//     reconnect policy, its delays or its attempt cap: failed attempts are retried after
//     FenceRetryDelay, without limit;
//   - disposal stops the attempts and answers the waiters with ErrFenceDisposed, but leaves the
//     obligations flagged (Undischarged);
//   - a Settle waiter (Demanded with Machine MachineFence, Conn the owed connection) is granted
//     once the connection's obligation is discharged, at once when the connection owes nothing,
//     and failed with ErrNoIdentity when the connection ended unidentified. A permanent failure
//     of an attempt (a permission refusal) is reported to the waiters (OutcomeFailed), while the
//     obligation stays and its attempts go on.
//
// Bounds: control connections at most MaxKills at once; obligations are bounded by the
// connections that ended with replies outstanding and are kept until discharged (they cannot
// be dropped); unidentified connections are remembered up to MaxForgotten, older ones through a
// per-machine watermark (any id at or below it that owes nothing is answered ErrNoIdentity).
type Fence struct {
	cfg FenceConfig
	ids uint64

	// owed are the undischarged obligations, by the owed connection, and order the order they
	// arose in (the queue for free control connections).
	owed  map[ConnID]*obligation
	order []ConnID
	// byConn and byTimer find an obligation by its control connection or retry timer.
	byConn  map[ConnID]*obligation
	byTimer map[TimerID]*obligation
	killing int
	// waiters maps each Settle waiter to the owed connection it waits for.
	waiters map[WaiterID]ConnID

	// unidentified are recent connections that ended without an id, oldest first in forgotten;
	// watermark is the highest forgotten id per identifier prefix (machine and node).
	unidentified map[ConnID]bool
	forgotten    []ConnID
	watermark    map[uint64]ConnID

	disposed bool
}

var _ Stepper = (*Fence)(nil)

// NewFence returns a fence machine. It panics on an invalid configuration (see Validate).
func NewFence(cfg FenceConfig) *Fence {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if cfg.MaxKills == 0 {
		cfg.MaxKills = DefaultFenceKills
	}
	if cfg.MaxForgotten == 0 {
		cfg.MaxForgotten = DefaultFenceForgotten
	}
	return &Fence{cfg: cfg, owed: map[ConnID]*obligation{}, byConn: map[ConnID]*obligation{},
		byTimer: map[TimerID]*obligation{}, waiters: map[WaiterID]ConnID{},
		unidentified: map[ConnID]bool{}, watermark: map[uint64]ConnID{}}
}

// Undischarged returns the identities still owed a fence, in the order they arose. After
// disposal these are the flagged obligations.
func (f *Fence) Undischarged() []FenceData {
	out := make([]FenceData, 0, len(f.order))
	for _, c := range f.order {
		out = append(out, *f.owed[c].data)
	}
	return out
}

// Owes reports whether connection c has an undischarged obligation.
func (f *Fence) Owes(c ConnID) bool { return f.owed[c] != nil }

// Describe returns a deterministic description of the machine's state.
func (f *Fence) Describe() string {
	var b []byte
	b = append(b, "fence"...)
	if f.disposed {
		b = append(b, " disposed"...)
	}
	for _, c := range f.order {
		o := f.owed[c]
		b = c.AppendTo(append(b, " owed="...))
		b = append(b, ':')
		b = append(b, fencePhaseNames[o.phase]...)
		b = strconv.AppendInt(append(b, "/failures="...), int64(o.failures), 10)
	}
	return string(b)
}

func (f *Fence) nextConn() ConnID {
	f.ids++
	return ConnID(f.cfg.IDBase + f.ids)
}

func (f *Fence) nextTimer() TimerID {
	f.ids++
	return TimerID(f.cfg.IDBase + f.ids)
}

// Step applies one event.
func (f *Fence) Step(ev *Event, out *Outbox) {
	switch ev.Kind {
	case Owed:
		f.owe(ev, out)
	case Demanded:
		f.demand(ev, out)
	case Withdrew:
		f.withdraw(ev.Waiter, out)
	case HandshakeDone:
		f.connected(ev.Conn, out)
	case DialFailed, ConnLost:
		f.attemptFailed(ev.Conn, ev.Err, ev.Class, out)
	case Killed:
		f.killed(ev, out)
	case TimerFired:
		if o := f.byTimer[ev.Timer]; o != nil && o.phase == fenceResting && !f.disposed {
			delete(f.byTimer, ev.Timer)
			o.timer = 0
			o.phase = fenceQueued
			f.startQueued(out)
		}
	case Disposed:
		f.dispose(out)
	}
	// Retired: obligations outlive the generation that created them. Other events are not ours.
}

// owe records the obligation of a connection that ended with replies outstanding.
func (f *Fence) owe(ev *Event, out *Outbox) {
	d := ev.Fence
	if d == nil || f.owed[ev.Conn] != nil || f.unidentified[ev.Conn] {
		return
	}
	if d.ClientID == 0 {
		f.forget(ev.Conn)
		return
	}
	o := &obligation{data: d}
	f.owed[ev.Conn] = o
	f.order = append(f.order, ev.Conn)
	if !f.disposed {
		f.startQueued(out)
	}
}

// forget remembers an unidentified connection, evicting the oldest beyond the bound into the
// watermark of its identifier prefix.
func (f *Fence) forget(c ConnID) {
	f.unidentified[c] = true
	f.forgotten = append(f.forgotten, c)
	if len(f.forgotten) <= f.cfg.MaxForgotten {
		return
	}
	old := f.forgotten[0]
	f.forgotten = f.forgotten[1:]
	delete(f.unidentified, old)
	if p := prefixOf(old); old > f.watermark[p] {
		f.watermark[p] = old
	}
}

// prefixOf is an identifier's machine and Cluster node bits: identifiers below one prefix grow
// monotonically.
func prefixOf(c ConnID) uint64 { return uint64(c) >> nodeShift }

// isUnidentified reports whether c ended without an id, or may have (at or below the watermark).
func (f *Fence) isUnidentified(c ConnID) bool {
	if f.unidentified[c] {
		return true
	}
	w, ok := f.watermark[prefixOf(c)]
	return ok && c <= w
}

// startQueued opens control connections for queued obligations, oldest first, up to MaxKills.
func (f *Fence) startQueued(out *Outbox) {
	for _, c := range f.order {
		if f.killing >= f.cfg.MaxKills {
			return
		}
		o := f.owed[c]
		if o.phase != fenceQueued {
			continue
		}
		o.phase = fenceDialing
		o.conn = f.nextConn()
		f.byConn[o.conn] = o
		f.killing++
		d := out.push(Dial)
		d.Slot = -1
		d.Conn = o.conn
		d.Attempt = o.failures + 1
		d.Endpoint = o.data.Peer
	}
}

// connected sends the kill on a control connection whose handshake finished.
func (f *Fence) connected(c ConnID, out *Outbox) {
	o := f.byConn[c]
	if o == nil || o.phase != fenceDialing {
		out.push(Close).Conn = c
		return
	}
	o.phase = fenceKilling
	k := out.push(Kill)
	k.Conn = c
	k.Fence = o.data
}

// attemptFailed handles a control connection that failed to open or was lost before the answer.
func (f *Fence) attemptFailed(c ConnID, err error, class FailureClass, out *Outbox) {
	o := f.byConn[c]
	if o == nil {
		return
	}
	if o.phase == fenceKilling {
		out.push(Close).Conn = c
	}
	f.retry(o, err, class, out)
}

// killed handles the answer of a kill.
func (f *Fence) killed(ev *Event, out *Outbox) {
	o := f.byConn[ev.Conn]
	if o == nil || o.phase != fenceKilling {
		return
	}
	out.push(Close).Conn = ev.Conn
	if ev.Err != nil {
		f.retry(o, ev.Err, ev.Class, out)
		return
	}
	delete(f.byConn, ev.Conn)
	f.killing--
	owed := o.data.Owed
	delete(f.owed, owed)
	f.order = removeConn(f.order, owed)
	for _, w := range o.waiters {
		delete(f.waiters, w)
		c := out.push(Complete)
		c.Waiter = w
		c.Outcome = OutcomeGranted
		c.Slot = -1
		c.Conn = owed
	}
	f.startQueued(out)
}

// retry schedules the next attempt of o after a failed one. A permanent failure is reported to
// the waiters, who learn that the fence cannot be acknowledged now; the obligation stays.
func (f *Fence) retry(o *obligation, err error, class FailureClass, out *Outbox) {
	delete(f.byConn, o.conn)
	o.conn = 0
	f.killing--
	o.failures++
	o.lastErr = err
	o.phase = fenceResting
	o.timer = f.nextTimer()
	f.byTimer[o.timer] = o
	t := out.push(ArmTimer)
	t.Timer = o.timer
	t.After = FenceRetryDelay(o.failures)
	if class == Permanent {
		for _, w := range o.waiters {
			delete(f.waiters, w)
			c := out.push(Complete)
			c.Waiter = w
			c.Outcome = OutcomeFailed
			c.Slot = -1
			c.Conn = o.data.Owed
			c.Err = err
		}
		o.waiters = nil
	}
	f.startQueued(out)
}

// demand answers or registers a Settle waiter for connection ev.Conn.
func (f *Fence) demand(ev *Event, out *Outbox) {
	answer := func(outcome Outcome, err error) {
		c := out.push(Complete)
		c.Waiter = ev.Waiter
		c.Outcome = outcome
		c.Slot = -1
		c.Conn = ev.Conn
		c.Err = err
	}
	switch o := f.owed[ev.Conn]; {
	case f.disposed:
		answer(OutcomeClosed, ErrFenceDisposed)
	case o != nil:
		o.waiters = append(o.waiters, ev.Waiter)
		f.waiters[ev.Waiter] = ev.Conn
	case f.isUnidentified(ev.Conn):
		answer(OutcomeFailed, ErrNoIdentity)
	default:
		// Nothing is owed: the connection drained, or its fence was acknowledged.
		answer(OutcomeGranted, nil)
	}
}

// withdraw removes a Settle waiter.
func (f *Fence) withdraw(w WaiterID, out *Outbox) {
	owed, ok := f.waiters[w]
	if !ok {
		return
	}
	delete(f.waiters, w)
	if o := f.owed[owed]; o != nil {
		o.waiters = removeWaiter(o.waiters, w)
	}
	c := out.push(Complete)
	c.Waiter = w
	c.Outcome = OutcomeCancelled
	c.Slot = -1
	c.Conn = owed
}

// dispose stops every attempt and answers every waiter; the obligations stay flagged.
func (f *Fence) dispose(out *Outbox) {
	if f.disposed {
		return
	}
	f.disposed = true
	for _, owed := range f.order {
		o := f.owed[owed]
		switch o.phase {
		case fenceDialing, fenceKilling:
			out.push(Close).Conn = o.conn
			delete(f.byConn, o.conn)
			o.conn = 0
			f.killing--
		case fenceResting:
			out.push(CancelTimer).Timer = o.timer
			delete(f.byTimer, o.timer)
			o.timer = 0
		}
		o.phase = fenceQueued
		for _, w := range o.waiters {
			delete(f.waiters, w)
			c := out.push(Complete)
			c.Waiter = w
			c.Outcome = OutcomeClosed
			c.Slot = -1
			c.Conn = owed
			c.Err = ErrFenceDisposed
		}
		o.waiters = nil
	}
}

func removeConn(s []ConnID, c ConnID) []ConnID {
	for i, x := range s {
		if x == c {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

func removeWaiter(s []WaiterID, w WaiterID) []WaiterID {
	for i, x := range s {
		if x == w {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}
