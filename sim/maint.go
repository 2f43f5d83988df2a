package sim

import (
	"strconv"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/wire"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// Maintenance notifications in the simulator. The world owns only the server's side: the nodes
// acknowledge the opt-in when the scenario has a maintenance timeline (MaintNotifications), and
// each step of the timeline writes its notice, as a RESP3 push, on every connection of its node
// that opted in. Everything the client does with a notice is production code: netio/wire parses
// it (ParseMaintNotice), engine.Relax applies it and reports a MOVING to the engine's sink
// (Relax.Push), and the command slots hand off (fsm). The simulated callers ask the same
// relaxation for more time when their timeout fires (engine.Relax.Extend), as client's calls do.

// MaintNotifications implements node.MaintEnv: the nodes of a scenario with a maintenance
// timeline acknowledge CLIENT MAINT_NOTIFICATIONS ON.
func (s *server) MaintNotifications() bool { return len(s.w.sc.Maintenance) > 0 }

// maintWorld is the world's maintenance state.
type maintWorld struct {
	// relax maps each open connection whose handshake enabled notifications to its relaxation
	// (kept out of simConn, whose size is budgeted).
	relax map[fsm.ConnID]*engine.Relax
}

// maintStep is the scheduler action of one step of the maintenance timeline.
type maintStep struct {
	w   *world
	idx int
}

// buildMaint schedules the maintenance timeline. Outside a Cluster, the target of a MOVING
// notice serves the dataset of the node that announced it, and shares its pub/sub channels: the
// endpoint moves, the database stays.
func (w *world) buildMaint() {
	for i := range w.sc.Maintenance {
		if s := &w.sc.Maintenance[i]; s.Kind == scenario.MaintMoving && s.To != "" && s.To != s.Node && w.cluster == nil {
			if from, to := w.serverByHost(s.Node), w.serverByHost(s.To); from != nil && to != nil {
				to.ShareData(from.Node)
				to.ShareChannels(from.Node)
			}
		}
	}
	for i := range w.sc.Maintenance {
		if at := w.sc.Maintenance[i].At; at >= w.k.now {
			w.k.schedule(at, maintStep{w: w, idx: i}, 0)
		}
	}
}

// Run sends the step's notice on every open connection of its node that opted in, pub/sub
// connections included (see maintSubscriberPush). A node that is down or paused sends nothing.
func (m maintStep) Run(uint64) bool {
	w := m.w
	step := &w.sc.Maintenance[m.idx]
	s := w.serverByHost(step.Node)
	b := w.tr.Begin("maint send").Int("step", m.idx).Word(step.Kind).Str("node", step.Node)
	if s == nil || s.Down() || s.Paused() {
		w.tr.End(b.Word("skipped"))
		return true
	}
	frame := appendMaintPush(nil, step, step.SeqOf(m.idx))
	sent, subs := 0, 0
	for _, c := range s.conns() {
		if !c.srv.Open() || !c.srv.Session.Maint || c.srv.Session.Proto != 3 {
			continue
		}
		c.down.write(frame)
		if c.sub != nil {
			subs++
			continue
		}
		sent++
	}
	b = b.Int("conns", sent)
	if subs > 0 {
		b = b.Int("subs", subs)
	}
	w.tr.End(b)
	return true
}

// appendMaintPush encodes a step's notice as the push a managed Redis service sends (see
// wire.ParseMaintNotice for the shapes).
func appendMaintPush(dst []byte, s *scenario.MaintStep, seq int64) []byte {
	var args []string
	timed := s.Kind == scenario.MaintMoving || s.Kind == scenario.MaintMigrating || s.Kind == scenario.MaintFailingOver
	args = append(args, s.Kind, strconv.FormatInt(seq, 10))
	if timed {
		args = append(args, strconv.FormatInt(int64(s.Time.Seconds()), 10))
	}
	switch s.Kind {
	case scenario.MaintMoving:
		dst = appendPushHeader(dst, 4)
		for _, a := range args {
			dst = resp.AppendBulkString(dst, a)
		}
		if s.To == "" {
			return append(dst, "_\r\n"...)
		}
		return resp.AppendBulkString(dst, s.To+":"+strconv.Itoa(scenario.NodePort))
	case scenario.MaintSMigrating:
		args = append(args, s.Slots)
	case scenario.MaintSMigrated:
		dst = appendPushHeader(dst, len(args)+len(s.Moves))
		for _, a := range args {
			dst = resp.AppendBulkString(dst, a)
		}
		for _, mv := range s.Moves {
			dst = resp.AppendArrayHeader(dst, 2)
			dst = resp.AppendBulkString(dst, mv.To+":"+strconv.Itoa(scenario.NodePort))
			dst = resp.AppendBulkString(dst, mv.Slots)
		}
		return dst
	default:
		args = append(args, s.Shards...)
	}
	dst = appendPushHeader(dst, len(args))
	for _, a := range args {
		dst = resp.AppendBulkString(dst, a)
	}
	return dst
}

func appendPushHeader(dst []byte, n int) []byte {
	dst = append(dst, '>')
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}

// maintReady gives a connection whose handshake enabled maintenance notifications its
// relaxation, before the engine learns it is ready (the engine reads it then: engine.Relaxer).
func (w *world) maintReady(c *simConn) {
	if c.hs == nil || !c.hs.MaintEnabled() || c.sub != nil {
		return
	}
	if w.maint.relax == nil {
		w.maint.relax = map[fsm.ConnID]*engine.Relax{}
	}
	w.maint.relax[c.id] = engine.NewRelax(w.cfg.Relaxation)
	w.res.Maint = append(w.res.Maint, record.MaintEvent{Kind: record.MaintReady, Conn: c.id, Slot: c.slot, At: w.k.now})
}

// Relax implements engine.Relaxer: the connection's maintenance relaxation, or nil.
func (c *simConn) Relax() *engine.Relax {
	if c.w.maint.relax == nil {
		return nil
	}
	return c.w.maint.relax[c.id]
}

var _ engine.Relaxer = (*simConn)(nil)

// maintPush applies a push the connection received, if it is a maintenance notice and the
// connection opted in, as netio's reader does: parsed by wire, applied by engine.Relax.Push.
func (c *simConn) maintPush(v *resp.Value) {
	r := c.Relax()
	if r == nil || !wire.IsMaintNotice(v) {
		return
	}
	w := c.w
	n, err := wire.ParseMaintNotice(v)
	if err != nil {
		w.tr.End(w.tr.Begin("maint malformed").Uint("conn", uint64(c.id)).Quoted("err", err.Error()))
		return
	}
	w.tr.End(w.tr.Begin("maint notice").Uint("conn", uint64(c.id)).Str("notice", n.String()))
	w.res.Maint = append(w.res.Maint, record.MaintEvent{Kind: record.MaintNotice, Conn: c.id, Slot: c.slot, At: w.k.now,
		Notice: n.Kind, Time: n.Time})
	if r.Push(n, record.MaintEpoch.Add(w.k.now), c.eid(), c.ep, c.sink) {
		// The window shrank: the callers it kept alive ask again now, as the client's calls do
		// when Relax.Shrunk is closed.
		w.wl.Recheck(r)
		w.dw.Recheck(r)
		w.bw.Recheck(r)
	}
}

// maintClosed records that a connection that opted in closed on the client's side, and
// forgets its relaxation.
func (w *world) maintClosed(c *simConn, unanswered int) {
	if c.Relax() == nil {
		return
	}
	delete(w.maint.relax, c.id)
	w.res.Maint = append(w.res.Maint, record.MaintEvent{Kind: record.MaintClosed, Conn: c.id, Slot: c.slot, At: w.k.now,
		Unanswered: unanswered})
}

// movedConn reports whether a MOVING notice reached the connection (the maint plants act on
// those only).
func (w *world) movedConn(c *simConn) bool {
	for i := len(w.res.Maint) - 1; i >= 0; i-- {
		if e := &w.res.Maint[i]; e.Conn == c.id && e.Kind == record.MaintNotice && e.Notice == fsm.MaintMoving {
			return true
		}
	}
	return false
}

// maintLateClose implements the plants that act when the engine closes a connection that
// received MOVING (at its grace's end): maint-resend-moving writes its oldest unanswered command
// again on the slot's newest ready connection (its reply is swallowed, as replay-accepted's);
// maint-late-close ignores the close, so the connection keeps draining. It reports whether the
// close is ignored.
func (w *world) maintLateClose(c *simConn) bool {
	if len(w.sc.Plant) == 0 || c.Relax() == nil || !w.movedConn(c) {
		return false
	}
	if w.sc.Planted(scenario.PlantMaintResendMoving) && c.slot >= 0 && c.slot < len(w.tp.slotConn) {
		if nc := w.tp.slotConn[c.slot]; nc != nil && nc != c && nc.phase == phaseReady && !nc.clientClosed {
			for i := 0; i < c.p.InFlight(); i++ {
				cmd := c.p.At(i)
				if cmd.ID == 0 {
					continue
				}
				if r := unanswered(cmd); r != nil {
					w.tr.Plant(string(scenario.PlantMaintResendMoving), cmd.ID)
					nc.writeAgain(r)
					nc.up.commit(ctlData)
					break
				}
			}
		}
	}
	if w.sc.Planted(scenario.PlantMaintLateClose) && c.p.Draining() {
		w.tr.Plant(string(scenario.PlantMaintLateClose), uint64(c.id))
		return true
	}
	return false
}

// maintSubscriberPush handles a push that a pub/sub connection read and the subscriber protocol
// judged no pub/sub event (wire.FramePush), as netio's subscriber connection does: a maintenance
// notice there is never a message, relaxes nothing (a subscriber connection has no command
// deadline to extend) and moves nothing (the MOVING handoff is the command slots'; subscriptions
// stay on their connection until it closes, and the episode's recovery then resubscribes, with a
// gap marker). The simulator records the notice (record.MaintSubscriberNotice) so that the
// scenarios can show it arrived. The maint-notice-as-message plant hands it to the subscribers
// as a message instead; it reports whether it did.
func (c *simConn) maintSubscriberPush(v *resp.Value) bool {
	if !wire.IsMaintNotice(v) {
		return false
	}
	w := c.w
	n, err := wire.ParseMaintNotice(v)
	if err != nil {
		w.tr.End(w.tr.Begin("maint malformed").Uint("conn", uint64(c.id)).Quoted("err", err.Error()))
		return false
	}
	w.tr.End(w.tr.Begin("maint notice").Uint("conn", uint64(c.id)).Word("subscriber").Str("notice", n.String()))
	w.res.Maint = append(w.res.Maint, record.MaintEvent{Kind: record.MaintSubscriberNotice, Conn: c.id, Slot: -1, At: w.k.now,
		Notice: n.Kind, Time: n.Time})
	if len(w.sc.Plant) == 0 || !w.sc.Planted(scenario.PlantMaintNoticeAsMessage) {
		return false
	}
	return c.plantNoticeAsMessage(n)
}

// plantNoticeAsMessage is the maint-notice-as-message plant: the notice is delivered to the
// subscribers of the connection's first topic as a message whose payload is the notice's kind,
// as a subscriber protocol that took every push for a message would (caught by pubsub-gaps: no
// node delivered it).
func (c *simConn) plantNoticeAsMessage(n fsm.MaintNotice) bool {
	w := c.w
	if c.node == nil {
		return false
	}
	topics := c.node.Subscriptions(&c.srv)
	if len(topics) == 0 {
		return false
	}
	t := topics[0]
	w.tr.Plant(string(scenario.PlantMaintNoticeAsMessage), uint64(c.id))
	f := wire.Frame{Kind: wire.FrameMessage, Message: engine.PubSubMessage{Topic: t, Channel: t.Name, Payload: n.Kind.String()}}
	c.reportFrame(&f)
	return true
}
