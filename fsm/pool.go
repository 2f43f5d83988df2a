package fsm

import "time"

// PoolConfig configures a Pool. The caller resolves the options' defaults before building it.
type PoolConfig struct {
	// Policy is the reconnect policy, or nil for none. It must be valid.
	Policy *Policy
	// MinimumSize is the floor kept by timed idle retirement (it does not prewarm).
	MinimumSize int
	// MaximumSize bounds connecting, rented and idle connections together; zero is unlimited.
	MaximumSize int
	// MaximumIdle bounds retained idle connections; zero disables idle reuse.
	MaximumIdle int
	// IdleTimeout retires idle connections above MinimumSize; zero disables timed retirement.
	IdleTimeout time.Duration
	// MaxWaiters bounds pending rents (zero: DefaultMaxWaiters).
	MaxWaiters int
	// IDBase offsets the machine's ConnIDs and TimerIDs (use IDBase(MachinePool)).
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

// Rent phases.
type rentPhase uint8

const (
	rentWaiting   rentPhase = iota // no capacity: waits for a connection to be returned or closed
	rentDialing                    // an attempt is in progress (rent.conn)
	rentScheduled                  // a retry waits for its delay (rent.timer); the reservation is kept
)

type rent struct {
	waiter  WaiterID
	phase   rentPhase
	conn    ConnID
	timer   TimerID
	failed  int // failed attempts so far in this rent
	episode uint64
	attempt int // retry number of the current attempt (0 for the first)
}

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
	cfg     PoolConfig
	conns   []pooled
	rents   []rent
	nextID  uint64
	episode uint64
	scan    TimerID
	closed  bool
	retired bool
}

// NewPool returns a pool machine for cfg. It panics on an invalid policy.
func NewPool(cfg PoolConfig) *Pool {
	if err := cfg.Policy.Validate(); err != nil {
		panic("fsm: " + err.Error())
	}
	if cfg.Lifetime < 0 || cfg.LifetimeJitter < 0 || (cfg.LifetimeJitter > 0 && cfg.Lifetime == 0) {
		panic("fsm: PoolConfig.Lifetime and LifetimeJitter must not be negative, and jitter requires a lifetime")
	}
	if cfg.MaxWaiters <= 0 {
		cfg.MaxWaiters = DefaultMaxWaiters
	}
	return &Pool{cfg: cfg}
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
		if p.rents[i].phase == rentScheduled {
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
		p.shutdown(false, out)
	case Disposed:
		p.shutdown(true, out)
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
	p.rents = append(p.rents, rent{waiter: ev.Waiter})
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

// admit starts the first attempt of waiting rent i if there is capacity.
func (p *Pool) admit(i int, out *Outbox) {
	r := &p.rents[i]
	if !p.hasCapacity() {
		// At the cap, an idle connection can make room.
		if !p.closeOneIdle(out) {
			r.phase = rentWaiting
			return
		}
	}
	p.dial(i, out)
}

func (p *Pool) dial(i int, out *Outbox) {
	r := &p.rents[i]
	p.nextID++
	r.conn = ConnID(p.cfg.IDBase + p.nextID)
	r.phase = rentDialing
	p.conns = append(p.conns, pooled{id: r.conn, state: pooledConnecting, rent: r.waiter})
	out.add(Effect{Kind: Dial, Slot: -1, Conn: r.conn, Attempt: r.attempt, Waiter: r.waiter})
}

func (p *Pool) rentOf(c ConnID) int {
	for i := range p.rents {
		if p.rents[i].conn == c && p.rents[i].phase == rentDialing {
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
	r := p.rents[ri]
	p.conns[ci].state = pooledRented
	if p.cfg.Lifetime > 0 {
		p.conns[ci].expires = ev.At + LifetimeDeadline(p.cfg.Lifetime, p.cfg.LifetimeJitter, ev.Draw)
	}
	p.removeRent(ri)
	if r.episode != 0 {
		p.emit(SourceConnected, r.attempt, 0, false, false, r.episode, nil, out)
	}
	out.add(Effect{Kind: Complete, Waiter: r.waiter, Outcome: OutcomeGranted, Slot: -1, Conn: ev.Conn})
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
	r.failed++
	pol := p.cfg.Policy
	switch {
	case pol == nil || class == Permanent:
		// No policy, or a permanent rejection: the failure is the rent's answer. A permanent
		// failure after a retry started ends the episode without exhausting it.
		if r.episode != 0 {
			p.emit(SourceDisconnected, r.attempt, 0, false, false, r.episode, err, out)
		}
		out.add(Effect{Kind: Complete, Waiter: r.waiter, Outcome: OutcomeFailed, Slot: -1, Err: err})
		p.removeRent(ri)
	case pol.MaxAttempts > 0 && r.failed > pol.MaxAttempts:
		if r.episode == 0 {
			r.episode = p.newEpisode()
		}
		out.add(Effect{Kind: Record, Metric: Metric{Instrument: InstrumentExhausted, Source: SourceDedicated, Value: 1}})
		p.emit(SourceDisconnected, r.attempt, 0, false, true, r.episode, err, out)
		out.add(Effect{Kind: Complete, Waiter: r.waiter, Outcome: OutcomeExhausted, Slot: -1, Err: err})
		p.removeRent(ri)
	default:
		if r.episode == 0 {
			r.episode = p.newEpisode()
		}
		n := r.failed
		delay := pol.Delay(n, ev.Draw)
		r.attempt = n
		r.conn = 0
		out.add(Effect{Kind: Record, Metric: Metric{Instrument: InstrumentAttempt, Source: SourceDedicated, Value: float64(n)}})
		out.add(Effect{Kind: Record, Metric: Metric{Instrument: InstrumentDelay, Source: SourceDedicated, Value: delay.Seconds()}})
		p.emit(SourceDisconnected, n-1, 0, false, false, r.episode, err, out)
		if delay <= 0 {
			p.emit(SourceConnecting, n, 0, true, false, r.episode, nil, out)
			p.dial(ri, out)
			break
		}
		p.nextID++
		r.timer = TimerID(p.cfg.IDBase + p.nextID)
		r.phase = rentScheduled
		out.add(Effect{Kind: ArmTimer, Timer: r.timer, After: delay, Waiter: r.waiter})
		p.emit(SourceConnecting, n, delay, true, false, r.episode, nil, out)
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
		if p.rents[i].phase == rentWaiting {
			w := p.rents[i].waiter
			p.removeRent(i)
			p.grantIdle(w, ev.At, out)
			return
		}
	}
	if c.expires != 0 {
		p.nextID++
		c.timer = TimerID(p.cfg.IDBase + p.nextID)
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
		r := &p.rents[i]
		if r.phase == rentScheduled && r.timer == ev.Timer {
			r.timer = 0
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
	p.nextID++
	p.scan = TimerID(p.cfg.IDBase + p.nextID)
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
		if p.rents[i].phase != rentWaiting {
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
		if r.waiter != w {
			continue
		}
		switch r.phase {
		case rentScheduled:
			out.add(Effect{Kind: CancelTimer, Timer: r.timer})
		case rentDialing:
			// The attempt is aborted; its socket stays charged until the transport reports
			// the attempt's end.
			out.add(Effect{Kind: Close, Conn: r.conn})
			if ci := p.connOf(r.conn); ci >= 0 {
				p.conns[ci].state = pooledClosing
			}
		}
		p.removeRent(i)
		out.add(Effect{Kind: Complete, Waiter: w, Outcome: OutcomeCancelled, Slot: -1})
		p.admitWaiting(out)
		return
	}
}

// shutdown stops every pending rent (without a Disconnected event), closes idle and connecting
// connections and, on disposal, rented ones; on retirement rented connections close when
// returned.
func (p *Pool) shutdown(dispose bool, out *Outbox) {
	if p.closed {
		return
	}
	if dispose {
		p.closed = true
	}
	p.retired = true
	for i := range p.rents {
		r := &p.rents[i]
		switch r.phase {
		case rentScheduled:
			out.add(Effect{Kind: CancelTimer, Timer: r.timer})
		case rentDialing:
			out.add(Effect{Kind: Close, Conn: r.conn})
		}
		out.add(Effect{Kind: Complete, Waiter: r.waiter, Outcome: OutcomeClosed, Slot: -1})
	}
	p.rents = p.rents[:0]
	kept := p.conns[:0]
	for _, c := range p.conns {
		switch {
		case c.state == pooledRented && !dispose:
			kept = append(kept, c)
		case c.state == pooledConnecting || c.state == pooledClosing:
			// Aborted with its rent above (or earlier): it is forgotten when its end is
			// reported.
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

func (p *Pool) newEpisode() uint64 {
	p.episode++
	return p.cfg.EpisodeBase + p.episode
}

func (p *Pool) emit(state SourceState, attempt int, delay time.Duration, scheduled, exhausted bool, episode uint64, err error, out *Outbox) {
	out.add(Effect{Kind: Emit, Lifecycle: Lifecycle{
		Source: SourceDedicated, SourceState: state, Slot: -1, Attempt: attempt,
		NextDelay: delay, Scheduled: scheduled, Exhausted: exhausted, Episode: episode, Err: err,
	}})
}
