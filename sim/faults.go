package sim

import (
	"slices"
	"time"

	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// faultState is one fault of the timeline while the run executes.
type faultState struct {
	w    *world
	idx  int
	f    *scenario.Fault
	kind string
	// node is the target node, or nil for a slot target.
	node *server
	// slot is the target slot, or -1 for a node target.
	slot int
	// extra is a delay fault's added latency; after an accept-then-drop fault's delay.
	extra time.Duration
	// reply is a handshake-error fault's reply.
	reply string
	// armed counts the connections a triggered fault is armed on.
	armed int
	// pending: a triggered fault waits for its target's next connection.
	pending bool

	// stopAt is when a windowed fault ends, if stops.
	stopAt time.Duration
	stops  bool

	started, ended bool
	window         record.Window
}

// Fault events.
const (
	faultStart uint64 = iota + 1
	faultStop
)

func (w *world) buildFaults() {
	for i := range w.sc.Faults {
		f := &w.sc.Faults[i]
		fs := &faultState{w: w, idx: i, f: f, kind: f.Kind(), slot: -1}
		var t scenario.Target
		var span *scenario.TimeRange
		switch {
		case f.Refuse != nil:
			t, span = f.Refuse.Target, f.Refuse.For
		case f.Blackhole != nil:
			t, span = f.Blackhole.Target, f.Blackhole.For
		case f.AcceptThenDrop != nil:
			t, span = f.AcceptThenDrop.Target, f.AcceptThenDrop.For
			if f.AcceptThenDrop.After != nil {
				fs.extra = f.AcceptThenDrop.After.Value()
			}
		case f.Drop != nil:
			t = *f.Drop
		case f.DropAfterBytes != nil:
			t = f.DropAfterBytes.Target
		case f.LoseReply != nil:
			t = *f.LoseReply
		case f.Delay != nil:
			t, span = f.Delay.Target, f.Delay.For
			fs.extra = f.Delay.Extra.Value()
		case f.Kill != nil:
			t, span = scenario.Target{Node: f.Kill.Node}, f.Kill.RestartAfter
		case f.HandshakeError != nil:
			t, span = scenario.Target{Node: f.HandshakeError.Node}, f.HandshakeError.For
			fs.reply = f.HandshakeError.Reply
		case f.Pause != nil:
			t, span = scenario.Target{Node: f.Pause.Node}, f.Pause.For
		case f.SubscribeError != nil:
			t, span = scenario.Target{Node: f.SubscribeError.Node}, f.SubscribeError.For
			fs.reply = f.SubscribeError.Reply
		case f.CommandError != nil:
			t, span = scenario.Target{Node: f.CommandError.Node}, f.CommandError.For
		case f.SlowReply != nil:
			t, span = scenario.Target{Node: f.SlowReply.Node}, f.SlowReply.For
			fs.extra = f.SlowReply.Extra.Value()
		case f.MalformedReply != nil:
			t, span = scenario.Target{Node: f.MalformedReply.Node}, f.MalformedReply.For
		case f.Push != nil:
			t, span = f.Push.Target, f.Push.For
			fs.extra = f.Push.Every.Value()
		case f.Cluster != nil:
			if d := f.Cluster.Span(); d > 0 {
				r := scenario.At(d)
				span = &r
			}
		}
		if t.ClientSlot != nil {
			fs.slot = *t.ClientSlot
		} else {
			fs.node = w.serverByHost(t.Node)
		}
		w.faults = append(w.faults, fs)
		w.k.schedule(f.At.Value(), fs, faultStart)
		if span != nil {
			fs.stopAt, fs.stops = f.At.Value()+span.Value(), true
		}
	}
	// Stops are scheduled after every start, so that at one instant the windows starting run
	// before the windows ending: touching windows on one target compose without a gap.
	for _, fs := range w.faults {
		if fs.stops {
			w.k.schedule(fs.stopAt, fs, faultStop)
		}
	}
}

// matches reports whether c is in the fault's target.
func (fs *faultState) matches(c *simConn) bool {
	if fs.node != nil {
		return c.node == fs.node
	}
	return c.slot == fs.slot
}

func (fs *faultState) Run(arg uint64) bool {
	switch arg {
	case faultStart:
		fs.start()
	case faultStop:
		if !fs.started || fs.ended {
			return false
		}
		fs.stop()
	case faultTick:
		return fs.pushTick()
	}
	return true
}

func (fs *faultState) traceLine(what string) {
	w := fs.w
	b := w.tr.Begin("fault").Word(what)
	b = b.Uint("fault", uint64(fs.idx))
	b = b.Str("kind", fs.kind)
	if fs.node != nil {
		b = b.Str("node", fs.node.ID())
	} else {
		b = b.Int("slot", fs.slot)
	}
	w.tr.End(b)
}

func (fs *faultState) start() {
	w := fs.w
	fs.started = true
	fs.window.From = w.k.now
	w.openFaults++
	fs.traceLine("start")
	switch fs.kind {
	case "refuse", "blackhole", "accept_then_drop", "delay", "handshake_error", "subscribe_error", "command_error",
		"slow_reply", "malformed_reply":
		w.active = append(w.active, fs)
	case "pause":
		fs.node.holdPause(+1)
	case "push":
		fs.pushTick()
	case "kill":
		fs.node.holdKill(+1)
		fs.node.newRunID = fs.node.newRunID || fs.f.Kill.NewRunID
		if fs.f.Kill.MoveTo != "" {
			fs.node.moveTo = fs.f.Kill.MoveTo
			fs.node.holeOld = fs.f.Kill.OldAddress == scenario.OldAddressBlackhole
		}
		if fs.f.Kill.LoseData {
			fs.node.Wipe()
			w.tr.End(w.tr.Begin("fault data-lost").Uint("fault", uint64(fs.idx)).Str("node", fs.node.ID()))
		}
	case "cluster":
		fs.clusterStart()
	case "sentinel":
		fs.sentinelStart()
	case "drop":
		for _, c := range fs.targets() {
			c.Reset("drop")
		}
		fs.finish()
	case "drop_after_bytes":
		for _, c := range fs.targets() {
			fs.arm(c)
		}
		if fs.armed == 0 {
			fs.setPending(true)
		}
	case "lose_reply":
		if fs.node != nil {
			fs.node.loseFault = fs
			fs.armed = 1
		} else if cs := fs.targets(); len(cs) > 0 {
			fs.arm(cs[0])
		} else {
			fs.setPending(true)
		}
	}
}

// stop ends a windowed fault at its planned time.
func (fs *faultState) stop() {
	w := fs.w
	for i, x := range w.active {
		if x == fs {
			w.active = append(w.active[:i], w.active[i+1:]...)
			break
		}
	}
	fs.finish()
	switch fs.kind {
	case "blackhole":
		for _, c := range append([]*simConn(nil), w.conns...) {
			if !fs.matches(c) {
				continue
			}
			if !w.holds(c, true) {
				c.up.heal()
			}
			if !w.holds(c, false) {
				c.down.heal()
			}
		}
	case "pause":
		fs.node.holdPause(-1)
	case "kill":
		fs.node.holdKill(-1)
	case "cluster":
		fs.clusterStop()
	}
}

// holdKill takes (+1) or releases (-1) one kill window on s. The first kill resets every
// connection; the node restarts only when the last kill window ends, and is paused again then if
// a pause window still holds it.
func (s *server) holdKill(d int) {
	s.kills += d
	switch {
	case d > 0 && s.kills == 1:
		s.Kill()
	case d < 0 && s.kills == 0:
		s.Restart()
		if s.newRunID {
			s.newRunID = false
			s.NewRunID()
			s.w.tr.End(s.w.tr.Begin("fault run-id").Str("node", s.ID()).Str("run_id", s.RunID()))
		}
		if s.moveTo != "" {
			s.move()
		}
		if s.pauses > 0 {
			s.Pause()
		}
	}
}

// holdPause takes (+1) or releases (-1) one pause window on s. The node is paused while any
// pause window holds it and resumes when the last one ends, unless a kill still holds it down
// (a dead node has nothing to resume; it comes back paused if a pause outlives the kill).
func (s *server) holdPause(d int) {
	s.pauses += d
	switch {
	case s.kills > 0:
	case d > 0 && s.pauses == 1:
		s.Pause()
	case d < 0 && s.pauses == 0:
		s.Resume()
	}
}

// finish closes the fault's window now.
func (fs *faultState) finish() {
	if fs.ended {
		return
	}
	w := fs.w
	fs.ended = true
	fs.setPending(false)
	fs.window.To = w.k.now
	w.openFaults--
	w.endedFaults++
	fs.traceLine("end")
	if w.endedFaults == len(w.faults) {
		w.healed = true
	}
}

// targets returns the target's live connections, in open order: every connection open at the
// target node, or the target slot's current connection.
func (fs *faultState) targets() []*simConn {
	w := fs.w
	if fs.node != nil {
		return fs.node.conns()
	}
	if fs.slot < len(w.tp.slotConn) {
		if c := w.tp.slotConn[fs.slot]; c != nil && c.srv.Open() && !c.clientClosed {
			return []*simConn{c}
		}
	}
	return nil
}

// arm attaches a triggered fault to c.
func (fs *faultState) arm(c *simConn) {
	switch fs.kind {
	case "drop_after_bytes":
		if c.dropFault != nil {
			return
		}
		c.dropFault = fs
		c.crossed = 0
		c.dropLimit = fs.f.DropAfterBytes.Bytes.Value()
	case "lose_reply":
		if c.loseFault != nil {
			return
		}
		c.loseFault = fs
	}
	fs.armed++
	fs.setPending(false)
	fs.w.tr.End(fs.w.tr.Begin("fault armed").Uint("fault", uint64(fs.idx)).Uint("conn", uint64(c.id)))
}

// armPending arms the triggered faults waiting for a connection of c's target (c was just
// accepted by its node).
func (w *world) armPending(c *simConn) {
	for i := 0; i < len(w.pendingFaults); i++ {
		fs := w.pendingFaults[i]
		if fs.pending && !fs.ended && fs.matches(c) {
			fs.arm(c) // removes fs from the list
			if i < len(w.pendingFaults) && w.pendingFaults[i] != fs {
				i--
			}
		}
	}
}

// setPending marks whether the triggered fault waits for its target's next connection. The
// waiting faults are also kept in w.pendingFaults, in scenario order, so that an accept visits
// only them instead of the whole timeline.
func (fs *faultState) setPending(p bool) {
	if fs.pending == p {
		return
	}
	fs.pending = p
	w := fs.w
	i, found := slices.BinarySearchFunc(w.pendingFaults, fs.idx, func(x *faultState, idx int) int { return x.idx - idx })
	switch {
	case p && !found:
		w.pendingFaults = slices.Insert(w.pendingFaults, i, fs)
	case !p && found:
		w.pendingFaults = slices.Delete(w.pendingFaults, i, i+1)
	}
}

// releaseArms handles the close of a connection carrying armed faults that did not trigger: they
// wait for their target's next connection.
func (w *world) releaseArms(c *simConn) {
	for _, fs := range []*faultState{c.dropFault, c.loseFault} {
		if fs == nil {
			continue
		}
		fs.armed--
		if fs.armed <= 0 && !fs.ended {
			fs.armed = 0
			fs.setPending(true)
		}
	}
	c.dropFault, c.loseFault = nil, nil
	c.dropLimit = 0
}

// refusing reports whether a connect of c is refused: a refuse fault on its target, or the
// dead-after-heal plant once every fault healed.
func (w *world) refusing(c *simConn) bool {
	if w.plants.deadAfterHeal && w.healed {
		return true
	}
	for _, fs := range w.active {
		if fs.kind == "refuse" && fs.matches(c) {
			return true
		}
	}
	return false
}

// holds reports whether a black-hole holds c's packets going to the node (toNode) or to the
// client.
func (w *world) holds(c *simConn, toNode bool) bool {
	for _, fs := range w.active {
		if fs.kind == "blackhole" && fs.matches(c) && fs.f.Blackhole.Holds(toNode) {
			return true
		}
	}
	return false
}

// extraDelay returns the added latency of the delay faults on c.
func (w *world) extraDelay(c *simConn) time.Duration {
	var d time.Duration
	for _, fs := range w.active {
		if fs.kind == "delay" && fs.matches(c) {
			d += fs.extra
		}
	}
	return d
}

// acceptThenDrop returns how long after its handshake c is dropped, when an accept-then-drop
// fault covers it.
func (w *world) acceptThenDrop(c *simConn) (time.Duration, bool) {
	for _, fs := range w.active {
		if fs.kind == "accept_then_drop" && fs.matches(c) {
			return fs.extra, true
		}
	}
	return 0, false
}

// faultWindows returns the fault windows in scenario order; faults still open at the end of the
// run close at end.
func (w *world) faultWindows(end time.Duration) ([]record.Window, time.Duration) {
	var out []record.Window
	healed := time.Duration(0)
	for _, fs := range w.faults {
		win := fs.window
		switch {
		case !fs.started:
			win = record.Window{From: end, To: end}
		case !fs.ended:
			win.To = end
		}
		out = append(out, win)
		healed = max(healed, win.To)
	}
	return out, healed
}

// pushFrame is the push a push fault sends: a client-side caching invalidation of key "k0".
var pushFrame = []byte(">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nk0\r\n")

// faultTick is the event of a push fault's next pushes.
const faultTick uint64 = 3

// pushTick sends one push on every RESP3 connection of the fault's target whose handshake is
// done, then schedules the next tick while the fault lasts. A paused or dead node sends nothing.
func (fs *faultState) pushTick() bool {
	if fs.ended {
		return false
	}
	w := fs.w
	sent := 0
	for _, c := range fs.targets() {
		n := c.node
		if n == nil || n.Paused() || n.Down() || !c.srv.Open() || !c.srv.Session.Authed || c.srv.Session.Proto != 3 {
			continue
		}
		c.down.write(pushFrame)
		sent++
	}
	if sent > 0 {
		w.tr.End(w.tr.Begin("fault push").Uint("fault", uint64(fs.idx)).Int("conns", sent))
	}
	w.k.after(fs.extra, fs, faultTick)
	return sent > 0
}
