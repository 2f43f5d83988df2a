package sim

import (
	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/wire"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/sim/workload"
)

// pubsubWorld is the world's side of pub/sub: the router (the same engine.Router the client
// uses) with the plants of the pub/sub checkers in front of it, the records, the snapshots of the
// nodes' subscriptions, and the application's subscribers and publisher (sim/workload).
type pubsubWorld struct {
	w      *world
	router *engine.Router
	rec    *record.PubSubRecords
	app    *workload.PubSub

	// current is each episode's connection of its last subscription effect.
	current [fsm.Machines]*simConn
	// connected: the episode's last lifecycle event reported a connection.
	connected [fsm.Machines]bool
	// due: a snapshot is owed once the episode's connection is quiescent.
	due   [fsm.Machines]bool
	armed bool

	plantSkipGap, plantLostUnsubscribe, plantKeepAfterExhaustion bool
}

// newPubSubWorld builds the pub/sub side of w (nil when the scenario has no pub/sub workload).
func newPubSubWorld(w *world) *pubsubWorld {
	spec := w.sc.Workload.PubSub
	if spec == nil {
		return nil
	}
	ps := &pubsubWorld{w: w, router: engine.NewRouter(spec.Buffer), rec: &record.PubSubRecords{Publishes: map[string]int{}}}
	ps.plantSkipGap = w.sc.Planted(scenario.PlantPubSubSkipGap)
	ps.plantLostUnsubscribe = w.sc.Planted(scenario.PlantPubSubLostUnsubscribe)
	ps.plantKeepAfterExhaustion = w.sc.Planted(scenario.PlantPubSubKeepAfterExhaustion)
	w.res.PubSub = ps.rec
	return ps
}

// sink returns the engine's PubSubSink: the router, with the plants in front of it (nil without a
// pub/sub workload).
func (ps *pubsubWorld) sink() engine.PubSubSink {
	if ps == nil {
		return nil
	}
	return pubsubSink{ps}
}

// start attaches the router to the engine and starts the application's subscribers and
// publisher (none without a pub/sub workload).
func (ps *pubsubWorld) start(env *workload.Env) {
	if ps != nil {
		ps.router.Attach(ps.w.eng)
		ps.app = workload.NewPubSub(env, ps.router, ps.rec)
	}
}

// pubsubSink is the engine's PubSubSink in the simulator: the router, with the plants.
type pubsubSink struct{ ps *pubsubWorld }

func (s pubsubSink) Subscriptions(m fsm.Machine, conn engine.Conn, id fsm.ConnID, topics []fsm.Topic, unsubscribe bool) {
	ps := s.ps
	if unsubscribe && ps.plantLostUnsubscribe {
		ps.plantLostUnsubscribe = false
		ps.w.tr.Plant("pubsub-lost-unsubscribe", uint64(id))
		return
	}
	if c, ok := conn.(*simConn); ok && !unsubscribe && m < fsm.Machines {
		ps.current[m] = c
	}
	ps.router.Subscriptions(m, conn, id, topics, unsubscribe)
}

func (s pubsubSink) Gap(m fsm.Machine, topic fsm.Topic) {
	ps := s.ps
	if ps.plantSkipGap && m < fsm.Machines && ps.current[m] != nil {
		ps.plantSkipGap = false
		ps.w.tr.Plant("pubsub-skip-gap", uint64(ps.current[m].id))
		ps.router.Granted(ps.current[m].id, []fsm.Topic{topic})
		return
	}
	ps.router.Gap(m, topic)
}

func (s pubsubSink) End(m fsm.Machine, topic fsm.Topic, reason fsm.EndReason, err error) {
	ps := s.ps
	if reason == fsm.EndReconnectExhausted && ps.plantKeepAfterExhaustion {
		ps.plantKeepAfterExhaustion = false
		ps.w.tr.Plant("pubsub-keep-after-exhaustion", uint64(m))
		return
	}
	ps.router.End(m, topic, reason, err)
}

// onStep watches the pub/sub lifecycle: a completed (re)connection owes a snapshot.
func (ps *pubsubWorld) onStep(effects []fsm.Effect) {
	for i := range effects {
		f := &effects[i]
		if f.Kind != fsm.Emit || f.Lifecycle.Source != fsm.SourcePubSub || f.Machine >= fsm.Machines {
			continue
		}
		if f.Lifecycle.SourceState == fsm.SourceConnected {
			ps.connected[f.Machine] = true
			ps.due[f.Machine] = true
			ps.armCheck()
		} else {
			ps.connected[f.Machine] = false
		}
	}
}

// armCheck schedules a snapshot check at the current instant, after the action in progress.
func (ps *pubsubWorld) armCheck() {
	if !ps.armed {
		ps.armed = true
		ps.w.k.after(0, ps, 0)
	}
}

// run is the snapshot check.
func (ps *pubsubWorld) Run(uint64) bool {
	ps.armed = false
	took := false
	for m := fsm.Machine(0); m < fsm.Machines; m++ {
		if ps.due[m] && ps.quiescent(m) {
			ps.due[m] = false
			ps.snapshot(m, false)
			took = true
		}
	}
	return took
}

// quiescent reports whether episode m is connected and its connection has no subscription
// command in flight.
func (ps *pubsubWorld) quiescent(m fsm.Machine) bool {
	c := ps.current[m]
	return ps.connected[m] && c != nil && !c.clientClosed && c.sub != nil && c.sub.Owed() == 0
}

// snapshot records the nodes' subscriptions of m's connections and the desired topics.
func (ps *pubsubWorld) snapshot(m fsm.Machine, end bool) {
	w := ps.w
	snap := record.SubscriptionSnapshot{At: w.k.now, Machine: m, End: end}
	for _, n := range w.nodes {
		for _, c := range n.conns() {
			if c.machine != m || c.clientClosed {
				continue
			}
			for _, t := range n.Subscriptions(&c.srv) {
				snap.Server = append(snap.Server, record.ServerSub{Conn: c.id, Topic: t})
			}
		}
	}
	if ps.app != nil {
		snap.Desired = ps.app.Desired(m)
	}
	ps.rec.Snapshots = append(ps.rec.Snapshots, snap)
	w.tr.End(w.tr.Begin("pubsub snapshot").Str("machine", m.String()).Int("server", len(snap.Server)).
		Int("desired", len(snap.Desired)))
}

// finish takes the end-of-run snapshots (before the client closes) and stops the application.
func (ps *pubsubWorld) finish() {
	if ps == nil {
		return
	}
	for m := fsm.Machine(0); m < fsm.Machines; m++ {
		if ps.quiescent(m) {
			ps.snapshot(m, true)
		}
	}
	if ps.app != nil {
		ps.app.Stop()
	}
}

// drain lets the subscribers consume what was delivered during the last action.
func (ps *pubsubWorld) drain() {
	if ps != nil && ps.app != nil {
		ps.app.Drain()
	}
}

// Subscribe implements engine.SubscriberConn for pub/sub connections: one command per topic kind
// (one SSUBSCRIBE per shard channel), written at once. The subscriber protocol is netio's
// (wire.Subscriber).
func (c *simConn) Subscribe(topics []fsm.Topic, unsubscribe bool) {
	if c.sub == nil || c.clientClosed || c.phase != phaseReady {
		return
	}
	c.up.append(c.sub.Subscribe(nil, topics, unsubscribe))
	c.up.commit(ctlData)
}

// subscriberFrame hands a frame read by a ready pub/sub connection to the subscriber protocol and
// delivers what it means to the router, as netio's SubConn does. It reports false when the frame
// failed the connection.
func (c *simConn) subscriberFrame(v *resp.Value) bool {
	f, err := c.sub.Read(v)
	if err == nil && f.Kind == wire.FrameReply {
		if _, err = wire.Deliver(f.Cmd, v); err != nil {
			f.Cmd.Complete(err)
			c.protocolFailure(err)
			return false
		}
	}
	if err != nil {
		c.protocolFailure(err)
		return false
	}
	if f.Kind == wire.FrameReply && c.drained() {
		c.closeClient(c.p.ClosedError())
	}
	if f.Kind == wire.FramePush && c.machine != fsm.MachineSentinelMonitor && c.maintSubscriberPush(v) {
		return true // the maint-notice-as-message plant delivered it (maint.go)
	}
	c.reportFrame(&f)
	return true
}

// reportFrame delivers what a frame read by a pub/sub connection means to its receiver: the
// Sentinel client's, a bound client's router, or the scenario's.
func (c *simConn) reportFrame(f *wire.Frame) {
	if c.machine == fsm.MachineSentinelMonitor {
		f.ReportTo(c.w.sentinel.recv, c.id)
	} else if r := c.w.tp.pubsub; r != nil {
		f.ReportTo(r, c.id) // a client bound to a Host (host.go)
	} else if ps := c.w.ps; ps != nil {
		f.ReportTo(ps.router, c.id)
		// An answer to a subscription command may leave the connection quiescent: snapshot.
		if f.Kind == wire.FrameRejected || ((f.Kind == wire.FrameAcked || f.Kind == wire.FrameIgnored) && c.sub.Owed() == 0) {
			ps.armCheck()
		}
	}
}
