package fsm

import "time"

// PoolConfig configures a Pool. The caller resolves the options' defaults before building it.
// Validate checks it (sizes, durations and MaxWaiters must not be negative); NewPool refuses an
// invalid one.
type PoolConfig struct {
	// Policy is the reconnect policy, or nil for none. It must be valid.
	Policy *Policy
	// MinimumSize is the floor kept by timed idle retirement (it does not prewarm). A floor above
	// MaximumSize only means that timed retirement never closes anything.
	MinimumSize int
	// MaximumSize bounds connecting, rented and idle connections together; zero is unlimited.
	MaximumSize int
	// MaximumIdle bounds retained idle connections; zero disables idle reuse.
	MaximumIdle int
	// IdleTimeout retires idle connections above MinimumSize; zero disables timed retirement.
	IdleTimeout time.Duration
	// MaxWaiters bounds pending rents (zero: DefaultMaxWaiters).
	MaxWaiters int
	// IDBase offsets the machine's ConnIDs and TimerIDs (use IDBase(MachinePool); it must be
	// some machine's IDBase).
	IDBase uint64
	// EpisodeBase offsets the episode ids the pool allocates, so that ids stay process-local
	// unique across clients.
	EpisodeBase uint64
	// Lifetime, when positive, is the maximum age of a dedicated connection: its deadline is set
	// when its handshake completes, Lifetime plus LifetimeJitter times the event's draw
	// (LifetimeDeadline). A connection recycles only when idle or returned: an idle one is closed
	// when it reaches its deadline (whatever MinimumSize says), and a rented one finishes its work
	// and is closed when it is returned. The next rent creates a replacement. Zero disables it.
	Lifetime time.Duration
	// LifetimeJitter is the largest extra lifetime drawn per connection; it requires Lifetime.
	LifetimeJitter time.Duration
}

// Pool states of a dedicated connection.
type pooledState uint8

const (
	pooledConnecting pooledState = iota
	pooledRented
	pooledIdle
	// pooledClosing: an attempt aborted by its rent's withdrawal or by shutdown. It stays
	// charged against MaximumSize until the transport reports its end (DialFailed or
	// HandshakeDone), as the spec charges a socket until its cleanup finishes.
	pooledClosing
)

type pooled struct {
	id        ConnID
	state     pooledState
	idleSince time.Duration
	broken    bool
	// expires is the connection's lifetime deadline (zero: none); timer is its expiry timer
	// while it is idle.
	expires time.Duration
	timer   TimerID
	// rent is the waiter of the rent that opened a connecting connection.
	rent WaiterID
}

// rent is one pending acquisition.
type rent struct {
	// a is the rent's attempt sub-machine (attempt.go): idle while the rent waits for capacity
	// (a connection returned or closed), dialing while an attempt is in progress, scheduled while
	// a retry waits for its delay (the rent keeps its capacity reservation). Its owner is the
	// rent's waiter, its number the retry number of the current attempt (0 for the first), and
	// its episode the rent's episode id once a retry was scheduled.
	a attempt
}

// waiter returns the rent's waiter.
func (r *rent) waiter() WaiterID { return r.a.owner }

// Pool is the dedicated-connection machine: a pool of exclusive connections rented by blocking
// commands, watched transactions and other operations that need a connection to themselves.
//
// Rules (spec "Dedicated connection acquisitions" and "Dedicated connection pools"):
//   - A healthy idle connection is reused immediately (most recently returned first).
//   - Otherwise a rent makes one immediate attempt. Without a policy its failure is returned at
//     once. With one, a failed attempt starts a retry episode owned by that rent: retry n waits
//     Policy.Delay(n); MaxAttempts counts retries, so a limit of 2 allows 3 attempts. Exhaustion
//     fails the rent with OutcomeExhausted and the last error; the pool stays usable.
//   - Permanent failures (Class Permanent) end the rent at once and never exhaust a budget.
//   - Concurrent rents have independent budgets; a rent keeps its capacity reservation through
//     its backoff.
//   - MaximumSize bounds connecting, rented and idle connections together; rents without
//     capacity wait until a connection is returned or closed. MaximumIdle bounds retained idle
//     connections; IdleTimeout retires idle connections above MinimumSize, scanning at its
//     interval.
//   - Withdrawal stops one rent without a Disconnected event; retirement and disposal stop all
//     pending rents.
type Pool struct {
	cfg PoolConfig
	// ids allocates the machine's ConnIDs, TimerIDs and episode ids.
	ids ids
	// rules are what the rents' attempts share.
	rules   attemptRules
	conns   []pooled
	rents   []rent
	scan    TimerID
	closed  bool
	retired bool
}

// NewPool returns a pool machine for cfg. It panics with cfg.Validate's *ConfigError when cfg is
// invalid.
func NewPool(cfg PoolConfig) *Pool {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if cfg.MaxWaiters <= 0 {
		cfg.MaxWaiters = DefaultMaxWaiters
	}
	p := &Pool{cfg: cfg, ids: newIDs(cfg.IDBase, cfg.EpisodeBase)}
	p.rules = attemptRules{policy: cfg.Policy, source: SourceDedicated, episodes: true, ids: &p.ids}
	return p
}

// Counts returns the numbers of connecting (including aborted attempts not yet ended), rented
// and idle connections and pending rents.
func (p *Pool) Counts() (connecting, rented, idle, pending int) {
	for i := range p.conns {
		switch p.conns[i].state {
		case pooledConnecting, pooledClosing:
			connecting++
		case pooledRented:
			rented++
		case pooledIdle:
			idle++
		}
	}
	return connecting, rented, idle, len(p.rents)
}

// charged is the capacity in use: every connection, plus rents holding a reservation in backoff.
func (p *Pool) charged() int {
	n := len(p.conns)
	for i := range p.rents {
		if p.rents[i].a.phase == attemptScheduled {
			n++
		}
	}
	return n
}

func (p *Pool) hasCapacity() bool {
	return p.cfg.MaximumSize == 0 || p.charged() < p.cfg.MaximumSize
}

// Step applies ev and appends the resulting effects to out.
func (p *Pool) Step(ev *Event, out *Outbox) {
	switch ev.Kind {
	case Demanded:
		p.demanded(ev, out)
	case Withdrew:
		p.withdrew(ev.Waiter, out)
	case HandshakeDone:
		p.ready(ev, out)
	case DialFailed:
		p.dialFailed(ev, ev.Err, ev.Class, out)
	case ConnLost:
		p.lost(ev, out)
	case Returned:
		p.returned(ev, out)
	case TimerFired:
		p.timerFired(ev, out)
	case Retired:
		p.retire(out)
	case Disposed:
		p.dispose(out)
	}
}

func (p *Pool) demanded(ev *Event, out *Outbox) {
	if p.closed || p.retired {
		out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeClosed, Slot: -1})
		return
	}
	if len(p.rents) >= p.cfg.MaxWaiters {
		out.add(Effect{Kind: Complete, Waiter: ev.Waiter, Outcome: OutcomeOverflow, Slot: -1})
		return
	}
	if p.grantIdle(ev.Waiter, ev.At, out) {
		return
	}
	p.rents = append(p.rents, rent{a: newAttempt(&p.rules, -1, ev.Waiter)})
	p.admit(len(p.rents)-1, out)
}

// grantIdle hands the most recently returned idle connection to w. A connection at its lifetime
// deadline is never granted (its expiry timer closes it).
func (p *Pool) grantIdle(w WaiterID, now time.Duration, out *Outbox) bool {
	best := -1
	for i := range p.conns {
		c := &p.conns[i]
		if c.state == pooledIdle && !c.broken && !c.expired(now) && (best < 0 || c.idleSince >= p.conns[best].idleSince) {
			best = i
		}
	}
	if best < 0 {
		return false
	}
	c := &p.conns[best]
	c.state = pooledRented
	if c.timer != 0 {
		out.add(Effect{Kind: CancelTimer, Timer: c.timer})
		c.timer = 0
	}
	out.add(Effect{Kind: Complete, Waiter: w, Outcome: OutcomeGranted, Slot: -1, Conn: c.id})
	return true
}

// expired reports whether the connection reached its lifetime deadline.
func (c *pooled) expired(now time.Duration) bool { return c.expires != 0 && now >= c.expires }

// admit starts the first attempt of waiting rent i if there is capacity; otherwise the rent
// waits, idle.
func (p *Pool) admit(i int, out *Outbox) {
	// At the cap, an idle connection can make room.
	if p.hasCapacity() || p.closeOneIdle(out) {
		p.dial(i, out)
	}
}

// dial starts rent i's current attempt, charged against MaximumSize as a connecting connection.
func (p *Pool) dial(i int, out *Outbox) {
	r := &p.rents[i]
	r.a.becomeDialing(out)
	p.conns = append(p.conns, pooled{id: r.a.conn, state: pooledConnecting, rent: r.waiter()})
}

func (p *Pool) rentOf(c ConnID) int {
	for i := range p.rents {
		if a := &p.rents[i].a; a.conn == c && a.phase == attemptDialing {
			return i
		}
	}
	return -1
}

func (p *Pool) connOf(c ConnID) int {
	for i := range p.conns {
		if p.conns[i].id == c {
			return i
		}
	}
	return -1
}

func (p *Pool) ready(ev *Event, out *Outbox) {
	ri := p.rentOf(ev.Conn)
	ci := p.connOf(ev.Conn)
	if ri < 0 || ci < 0 {
		if ev.Conn != 0 {
			out.add(Effect{Kind: Close, Conn: ev.Conn})
		}
		if ci >= 0 && p.conns[ci].state == pooledClosing {
			// An aborted attempt finished after all: its capacity is free now.
			p.removeConn(ci)
			p.admitWaiting(out)
		}
		return
	}
	r := &p.rents[ri]
	p.conns[ci].state = pooledRented
	if p.cfg.Lifetime > 0 {
		p.conns[ci].expires = ev.At + LifetimeDeadline(p.cfg.Lifetime, p.cfg.LifetimeJitter, ev.Draw)
	}
	attempt := r.a.n
	r.a.becomeReady()
	if r.a.episode != 0 {
		r.a.emit(Lifecycle{SourceState: SourceConnected, Attempt: attempt}, out)
	}
	out.add(Effect{Kind: Complete, Waiter: r.waiter(), Outcome: OutcomeGranted, Slot: -1, Conn: ev.Conn})
	p.removeRent(ri)
}

func (p *Pool) dialFailed(ev *Event, err error, class FailureClass, out *Outbox) {
	ri := p.rentOf(ev.Conn)
	if ci := p.connOf(ev.Conn); ci >= 0 {
		p.removeConn(ci)
	}
	if ri < 0 {
		p.admitWaiting(out)
		return
	}
	r := &p.rents[ri]
	r.a.fail(err)
	failed := r.a.n
	ruling := r.a.decide(true)
	switch {
	case ruling == rulingUngoverned || class == Permanent:
		// No policy, or a permanent rejection: the failure is the rent's answer. A permanent
		// failure after a retry started ends the episode without exhausting it.
		if r.a.episode != 0 {
			r.a.emit(Lifecycle{SourceState: SourceDisconnected, Attempt: failed, Err: err}, out)
		}
		out.add(Effect{Kind: Complete, Waiter: r.waiter(), Outcome: OutcomeFailed, Slot: -1, Err: err})
		p.removeRent(ri)
	case ruling == rulingExhausted:
		r.a.becomeExhausted(out)
		r.a.emit(Lifecycle{SourceState: SourceDisconnected, Attempt: failed, Exhausted: true, Err: err}, out)
		out.add(Effect{Kind: Complete, Waiter: r.waiter(), Outcome: OutcomeExhausted, Slot: -1, Err: err})
		p.removeRent(ri)
	default:
		delay := r.a.plan(ev.Draw, out)
		r.a.emit(Lifecycle{SourceState: SourceDisconnected, Attempt: failed, Err: err}, out)
		scheduled := Lifecycle{SourceState: SourceConnecting, Attempt: r.a.n, NextDelay: delay, Scheduled: true}
		if delay <= 0 {
			r.a.emit(scheduled, out)
			p.dial(ri, out)
			break
		}
		r.a.becomeScheduled(delay, out)
		r.a.emit(scheduled, out)
	}
	p.admitWaiting(out)
}

func (p *Pool) lost(ev *Event, out *Outbox) {
	ci := p.connOf(ev.Conn)
	if ci < 0 {
		return
	}
	switch p.conns[ci].state {
	case pooledIdle:
		if t := p.conns[ci].timer; t != 0 {
			out.add(Effect{Kind: CancelTimer, Timer: t})
		}
		p.removeConn(ci)
		p.admitWaiting(out)
	case pooledRented:
		// The renter learns through its command; the connection is discarded on return.
		p.conns[ci].broken = true
	case pooledConnecting, pooledClosing:
		p.dialFailed(ev, ev.Err, Transient, out)
	}
}

func (p *Pool) returned(ev *Event, out *Outbox) {
	ci := p.connOf(ev.Conn)
	if ci < 0 || p.conns[ci].state != pooledRented {
		return
	}
	c := &p.conns[ci]
	expired := c.expired(ev.At)
	if !ev.Healthy || c.broken || expired || p.closed || p.retired || p.idleCount() >= p.cfg.MaximumIdle {
		if expired && ev.Healthy && !c.broken {
			// Recycled: it outlived its lifetime while it was rented.
			out.add(Effect{Kind: Record, Metric: Metric{Instrument: InstrumentRecycled, Source: SourceDedicated, Value: 1}})
		}
		out.add(Effect{Kind: Close, Conn: c.id})
		p.removeConn(ci)
		p.admitWaiting(out)
		if p.retired && len(p.conns) == 0 {
			p.cancelScan(out)
		}
		return
	}
	c.state = pooledIdle
	c.idleSince = ev.At
	// A waiting rent takes it at once.
	for i := range p.rents {
		if p.rents[i].a.phase == attemptIdle {
			w := p.rents[i].waiter()
			p.removeRent(i)
			p.grantIdle(w, ev.At, out)
			return
		}
	}
	if c.expires != 0 {
		c.timer = p.ids.timer()
		out.add(Effect{Kind: ArmTimer, Timer: c.timer, After: c.expires - ev.At, Conn: c.id})
	}
	p.armScan(out)
}

func (p *Pool) timerFired(ev *Event, out *Outbox) {
	if p.scan != 0 && ev.Timer == p.scan {
		p.scan = 0
		p.retireIdle(ev.At, out)
		p.armScan(out)
		return
	}
	for i := range p.rents {
		if a := &p.rents[i].a; a.phase == attemptScheduled && a.timer == ev.Timer {
			p.dial(i, out)
			return
		}
	}
	for i := range p.conns {
		if c := &p.conns[i]; c.state == pooledIdle && c.timer == ev.Timer {
			// An idle connection reached its lifetime: recycled (the next rent replaces it).
			c.timer = 0
			out.add(Effect{Kind: Record, Metric: Metric{Instrument: InstrumentRecycled, Source: SourceDedicated, Value: 1}})
			p.closeIdle(i, out)
			p.admitWaiting(out)
			return
		}
	}
}

// closeIdle closes idle connection i, cancelling its expiry timer.
func (p *Pool) closeIdle(i int, out *Outbox) {
	if t := p.conns[i].timer; t != 0 {
		out.add(Effect{Kind: CancelTimer, Timer: t})
	}
	out.add(Effect{Kind: Close, Conn: p.conns[i].id})
	p.removeConn(i)
}

// retireIdle closes idle connections that have been idle for IdleTimeout, above MinimumSize,
// oldest first.
func (p *Pool) retireIdle(now time.Duration, out *Outbox) {
	for p.total() > p.cfg.MinimumSize {
		oldest := -1
		for i := range p.conns {
			c := &p.conns[i]
			if c.state == pooledIdle && now-c.idleSince >= p.cfg.IdleTimeout && (oldest < 0 || c.idleSince < p.conns[oldest].idleSince) {
				oldest = i
			}
		}
		if oldest < 0 {
			return
		}
		p.closeIdle(oldest, out)
	}
}

// armScan arms the idle-retirement scan when it is configured and there is something to scan.
func (p *Pool) armScan(out *Outbox) {
	if p.cfg.IdleTimeout <= 0 || p.scan != 0 || p.idleCount() == 0 || p.closed || p.retired {
		return
	}
	p.scan = p.ids.timer()
	out.add(Effect{Kind: ArmTimer, Timer: p.scan, After: p.cfg.IdleTimeout})
}

func (p *Pool) cancelScan(out *Outbox) {
	if p.scan != 0 {
		out.add(Effect{Kind: CancelTimer, Timer: p.scan})
		p.scan = 0
	}
}

// admitWaiting lets waiting rents use freed capacity. Waiters are broadcast to: no FIFO
// fairness is promised.
func (p *Pool) admitWaiting(out *Outbox) {
	for i := 0; i < len(p.rents); i++ {
		if p.rents[i].a.phase != attemptIdle {
			continue
		}
		if !p.hasCapacity() {
			return
		}
		p.dial(i, out)
	}
}

func (p *Pool) withdrew(w WaiterID, out *Outbox) {
	for i := range p.rents {
		r := &p.rents[i]
		if r.waiter() != w {
			continue
		}
		if r.a.phase == attemptDialing {
			// The attempt is aborted; its socket stays charged until the transport reports
			// the attempt's end.
			if ci := p.connOf(r.a.conn); ci >= 0 {
				p.conns[ci].state = pooledClosing
			}
		}
		r.a.stop(false, out)
		p.removeRent(i)
		out.add(Effect{Kind: Complete, Waiter: w, Outcome: OutcomeCancelled, Slot: -1})
		p.admitWaiting(out)
		return
	}
}

// retire stops every pending rent (without a Disconnected event) and closes idle and connecting
// connections; rented connections finish their work and close when returned. New rents are
// refused.
func (p *Pool) retire(out *Outbox) {
	if p.retired {
		return
	}
	p.retired = true
	p.stopRents(out)
	p.closeConns(false, out)
}

// dispose is retire, except that rented connections close now too (their operations abort).
func (p *Pool) dispose(out *Outbox) {
	if p.closed {
		return
	}
	p.closed, p.retired = true, true
	p.stopRents(out)
	p.closeConns(true, out)
}

// stopRents answers every pending rent with OutcomeClosed, cancelling its retry delay or
// aborting its attempt.
func (p *Pool) stopRents(out *Outbox) {
	for i := range p.rents {
		r := &p.rents[i]
		r.a.stop(false, out)
		out.add(Effect{Kind: Complete, Waiter: r.waiter(), Outcome: OutcomeClosed, Slot: -1})
	}
	p.rents = p.rents[:0]
}

// closeConns closes idle connections, and rented ones when rented is set; connecting ones
// (aborted with their rents) are forgotten when their end is reported. It stops the idle scan.
func (p *Pool) closeConns(rented bool, out *Outbox) {
	kept := p.conns[:0]
	for _, c := range p.conns {
		switch {
		case c.state == pooledRented && !rented:
			kept = append(kept, c)
		case c.state == pooledConnecting || c.state == pooledClosing:
			c.state = pooledClosing
			kept = append(kept, c)
		default:
			if c.timer != 0 {
				out.add(Effect{Kind: CancelTimer, Timer: c.timer})
			}
			out.add(Effect{Kind: Close, Conn: c.id})
		}
	}
	p.conns = kept
	p.cancelScan(out)
}

func (p *Pool) closeOneIdle(out *Outbox) bool {
	oldest := -1
	for i := range p.conns {
		if p.conns[i].state == pooledIdle && (oldest < 0 || p.conns[i].idleSince < p.conns[oldest].idleSince) {
			oldest = i
		}
	}
	if oldest < 0 {
		return false
	}
	p.closeIdle(oldest, out)
	return true
}

func (p *Pool) idleCount() int {
	n := 0
	for i := range p.conns {
		if p.conns[i].state == pooledIdle {
			n++
		}
	}
	return n
}

func (p *Pool) total() int { return len(p.conns) }

func (p *Pool) removeConn(i int) { p.conns = append(p.conns[:i], p.conns[i+1:]...) }

func (p *Pool) removeRent(i int) { p.rents = append(p.rents[:i], p.rents[i+1:]...) }
