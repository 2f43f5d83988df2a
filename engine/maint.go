package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire-go/respire/fsm"
)

// Relax hosts one connection's maintenance relaxation (fsm.Relaxation) for a runtime: the
// connection's reader feeds it the notices it parses (Notice), and a caller whose command timeout
// fires asks it for the command's relaxed deadline (Deadline). Both are off the hot path: a
// command on a healthy connection only carries a pointer to it (Command.Relax).
//
// The machine's own timer is not armed: Deadline evaluates the windows at the time it is given,
// and the next Notice closes the windows that ended before it.
type Relax struct {
	mu sync.Mutex
	m  *fsm.Relaxation
	// relaxed mirrors the machine's state for readers that only want to know (Relaxed).
	relaxed atomic.Bool
	// notices counts the notices applied, for tests and diagnostics.
	notices atomic.Uint64
	// shrunk is closed when a notice ends the relaxation or brings its end forward (Shrunk);
	// nil until a caller asks for it. Guarded by mu.
	shrunk chan struct{}
}

// NewRelax returns the host of a connection's relaxation under cfg.
func NewRelax(cfg fsm.MaintConfig) *Relax { return &Relax{m: fsm.NewRelaxation(cfg)} }

// Notice applies a maintenance notice received at now. It reports whether the notice ended the
// relaxation or brought its end forward (a completion such as MIGRATED): the callers whose
// commands it kept alive must then ask again (Shrunk is closed).
func (r *Relax) Notice(n fsm.MaintNotice, now time.Time) (shrank bool) {
	r.mu.Lock()
	was, wasUntil := r.m.Relaxed()
	r.m.Step(&fsm.MaintEvent{Kind: fsm.MaintNoticeReceived, Now: now, Notice: n}, nil)
	relaxed, until := r.m.Relaxed()
	if shrank = was && (!relaxed || until.Before(wasUntil)); shrank && r.shrunk != nil {
		close(r.shrunk)
		r.shrunk = nil
	}
	r.mu.Unlock()
	r.relaxed.Store(relaxed)
	r.notices.Add(1)
	return shrank
}

// Shrunk returns a channel that is closed when a later notice ends the relaxation or brings its
// end forward. A caller whose command the relaxation keeps past its own timeout waits on it as
// well as on its timer, and asks Extend again when it is closed: a window that a completion
// closes early lets the commands it kept alive time out at once. Take it before Extend.
func (r *Relax) Shrunk() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shrunk == nil {
		r.shrunk = make(chan struct{})
	}
	return r.shrunk
}

// Push applies notice n, which connection id (to ep) received at now, and reports a MOVING
// notice to the connection's sink when it implements MovingSink, an SMIGRATED one when it
// implements SlotMigrationSink. It is what a runtime's reader does with every maintenance notice
// it parsed (netio's reader goroutine, the simulator's connection), so that both runtimes apply
// notices through the same code.
// It returns what Notice does: whether the callers kept alive by the relaxation must ask again.
func (r *Relax) Push(n fsm.MaintNotice, now time.Time, id fsm.ConnID, ep Endpoint, s Sink) (shrank bool) {
	shrank = r.Notice(n, now)
	switch n.Kind {
	case fsm.MaintMoving:
		if ms, ok := s.(MovingSink); ok {
			ms.Moving(id, n.Target, n.Time)
		}
	case fsm.MaintSlotMigrated:
		if ss, ok := s.(SlotMigrationSink); ok && len(n.Moves) > 0 {
			ss.SlotsMigrated(ep, n.Moves)
		}
	}
	return shrank
}

// Extend is what a caller asks when the own timeout of its command fired at now: the command
// started at start with that timeout. If the connection's relaxation keeps the command alive,
// Extend returns when to ask again (the relaxed deadline, or the window's end if that comes
// first) and true; otherwise the command times out now (false). Both runtimes' callers use it
// (client's calls, the simulator's callers).
func (r *Relax) Extend(now, start time.Time, timeout time.Duration) (time.Time, bool) {
	deadline, recheck := r.Deadline(now, start, timeout)
	if !deadline.After(now) {
		return time.Time{}, false
	}
	if recheck.IsZero() || recheck.After(deadline) {
		recheck = deadline
	}
	return recheck, true
}

// Notices returns the number of notices applied.
func (r *Relax) Notices() uint64 { return r.notices.Load() }

// Relaxed reports whether the last notice left the connection relaxed (its window may have ended
// since; Deadline is exact).
func (r *Relax) Relaxed() bool { return r.relaxed.Load() }

// Deadline returns the deadline at now of a command started at start with its own timeout, and
// when to ask again (the zero time: the answer is final). See fsm.Relaxation.DeadlineAt.
func (r *Relax) Deadline(now, start time.Time, timeout time.Duration) (deadline, recheck time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m.DeadlineAt(now, start, timeout)
}

// Relaxer is implemented by a connection that hosts maintenance relaxation: Relax returns its
// host, or nil when the connection did not enable maintenance notifications.
type Relaxer interface {
	Relax() *Relax
}

// relaxOf returns conn's relaxation host, or nil.
func relaxOf(conn Conn) *Relax {
	if r, ok := conn.(Relaxer); ok {
		return r.Relax()
	}
	return nil
}

// Relax returns the relaxation host of the connection the command was handed to, or nil when it
// has none or the command never reached a connection. Read it after the command was submitted.
func (c *Command) Relax() *Relax { return c.relax.Load() }

// sentOn records the relaxation host of the connection that takes the command.
func (c *Command) sentOn(r *Relax) {
	if r != nil {
		c.relax.Store(r)
	}
}

// groupSentOn records the relaxation host of conn, which takes the group cmds, on the group's
// lead: a batch's caller waits for the whole group under one deadline and asks the lead
// (Command.Relax), as a single command's caller asks its command.
func groupSentOn(cmds []*Command, conn Conn) { cmds[0].sentOn(relaxOf(conn)) }

// MovingSink is implemented by the engine's Sink: a connection that parsed a MOVING notice
// reports it, and the connection's machine hands its slot off (fsm.MovingNoticed): target is the
// announced endpoint (zero: the configured one, resolved again), grace how long the old socket
// may still serve.
type MovingSink interface {
	Moving(id fsm.ConnID, target fsm.Endpoint, grace time.Duration)
}

// Moving implements MovingSink. On a Cluster engine the Cluster machine hands the notice to the
// node machine that owns the connection (fsm.Cluster).
func (s sink) Moving(id fsm.ConnID, target fsm.Endpoint, grace time.Duration) {
	s.e.post(item{ev: fsm.Event{Kind: fsm.MovingNoticed, Conn: id, Endpoint: target, Grace: grace}})
}

var _ MovingSink = sink{}

// SlotMigrationSink is implemented by the engine's Sink: a Cluster node's connection (to source)
// that parsed an SMIGRATED notice reports its moves, and the Cluster machine updates the slot
// map where the source still owns the slots (fsm.SlotsMigrated).
type SlotMigrationSink interface {
	SlotsMigrated(source Endpoint, moves []fsm.SlotMove)
}

// SlotsMigrated implements SlotMigrationSink. A standalone engine ignores it.
func (s sink) SlotsMigrated(source Endpoint, moves []fsm.SlotMove) {
	if s.e.cl == nil {
		return
	}
	r := &fsm.TopologyReply{Query: fsm.QueryMoved, Shards: make([]fsm.ReplyShard, 0, len(moves))}
	for _, m := range moves {
		target := fsm.MakeEndpoint(m.Target.Host, m.Target.Port)
		r.Shards = append(r.Shards, fsm.ReplyShard{Ranges: m.Ranges, Nodes: []fsm.Node{{Addr: target, Role: fsm.RolePrimary}}})
	}
	s.e.post(item{ev: fsm.Event{Kind: fsm.SlotsMigrated, Machine: fsm.MachineCluster,
		Endpoint: fsm.MakeEndpoint(source.Host, source.Port), Reply: r}})
}

var _ SlotMigrationSink = sink{}

// graceEnded warns (Deps.MaintWarn) when the connection a MOVING grace closes has not finished
// draining: the commands it still owes fail with an unknown outcome.
func (e *Engine) graceEnded(id fsm.ConnID, c Conn) {
	if e.deps.MaintWarn == nil {
		return
	}
	if s, ok := c.(Stopper); ok && s.Stopped() {
		return
	}
	e.deps.MaintWarn(id)
}

// MoveDrainer is an optional interface of a Conn, for the MOVING handoff (spec "Maintenance
// notifications": new and unaccepted commands move to the new connection, accepted ones drain on
// the old one). DrainMove drains the connection as Drain does, and hands back the commands it
// had accepted but provably never began to write, oldest first, still at StageBuffered and
// removed from the connection, which no longer owes them. A command that may have been written
// never comes back, nor CLIENT ID or a credential-renewal AUTH. A Conn without it drains
// everything it accepted.
type MoveDrainer interface {
	DrainMove() []*Command
}

// drain executes a draining Close of c. For a MOVING handoff's (Effect.Move), the commands c
// hands back move to the slot's current connection, the replacement that was routed just before.
func (e *Engine) drain(f *fsm.Effect, c Conn) {
	md, ok := c.(MoveDrainer)
	if !f.Move || !ok {
		c.Drain()
		return
	}
	if cmds := md.DrainMove(); len(cmds) > 0 {
		e.moveCmds(f, c, cmds)
	}
}

// moveCmds sends cmds, which the draining connection from handed back, on the current connection
// of the slot f names. They keep their callers' deadlines (the callers time them from their own
// start) and take the relaxation of the connection that will write them. They go as one group,
// so that a transaction among them stays whole. If that connection is gone or refuses them, they
// go back to from, which rejects them: a definite failure, since they were never written.
func (e *Engine) moveCmds(f *fsm.Effect, from Conn, cmds []*Command) {
	to := e.slotConn(f.Node, f.Slot)
	if to != nil {
		r := relaxOf(to)
		for _, cmd := range cmds {
			cmd.relax.Store(r)
		}
		switch o := to.(type) {
		case GroupOfferer:
			if o.OfferGroup(cmds) {
				return
			}
		case Offerer:
			for len(cmds) > 0 && o.Offer(cmds[0]) {
				cmds = cmds[1:]
			}
		default:
			for _, cmd := range cmds {
				to.Send(cmd)
			}
			return
		}
	}
	for _, cmd := range cmds {
		from.Send(cmd)
	}
}

// slotConn returns the ready connection the loop routes slot i of a Cluster node (node != 0) or
// of the standalone slots to, or nil.
func (e *Engine) slotConn(node uint32, i int) Conn {
	routes := e.routes
	if node != 0 {
		if e.cl == nil || e.cl.nodes[node] == nil {
			return nil
		}
		routes = e.cl.nodes[node].routes
	}
	if i < 0 || i >= len(routes) {
		return nil
	}
	return routes[i].conn
}
