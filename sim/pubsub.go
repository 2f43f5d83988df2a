package sim

import (
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/wire"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/sim/stream"
)

// maxPublishesInFlight bounds the publisher's commands waiting for their replies; beyond it a
// tick publishes nothing.
const maxPublishesInFlight = 16

// pubsubWorld runs the pub/sub side of a simulation: the router (the same engine.Router the
// client uses), the subscribers and the publisher, the plants of its checkers, and the records.
type pubsubWorld struct {
	w      *world
	router *engine.Router
	rec    *record.PubSubRecords
	subs   []*subscriber
	pub    *publisher

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

// sink returns the engine's PubSubSink: the router, with the plants in front of it.
func (ps *pubsubWorld) sink() engine.PubSubSink { return pubsubSink{ps} }

// start attaches the engine and schedules the subscribers and the publisher.
func (ps *pubsubWorld) start() {
	w := ps.w
	ps.router.Attach(w.eng)
	spec := w.sc.Workload.PubSub
	for i := range spec.Subscribers {
		s := &subscriber{ps: ps, idx: i, spec: &spec.Subscribers[i], op: -1}
		kind, _ := scenario.TopicKind(s.spec.Kind)
		s.machine = machineOfKind(kind)
		for _, name := range s.spec.Topics {
			s.topics = append(s.topics, fsm.Topic{Kind: kind, Name: name})
		}
		sort.Slice(s.topics, func(a, b int) bool { return s.topics[a].Less(s.topics[b]) })
		ps.subs = append(ps.subs, s)
		w.k.schedule(s.spec.At, s, subscriberSubscribe)
		if s.spec.UnsubscribeAt > 0 {
			w.k.schedule(s.spec.UnsubscribeAt, s, subscriberUnsubscribe)
		}
	}
	if p := spec.Publisher; p != nil {
		ps.pub = &publisher{ps: ps, spec: p, rng: rand.New(stream.New(w.seed, stream.PubSub, 0)),
			targets: append(append([]string(nil), p.Channels...), p.ShardChannels...), shardFrom: len(p.Channels)}
		w.k.schedule(p.Start, ps.pub, 0)
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
func (ps *pubsubWorld) run(uint64) bool {
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
	desired := map[fsm.Topic]bool{}
	for _, s := range ps.subs {
		if s.machine == m && s.live() {
			for _, t := range s.topics {
				desired[t] = true
			}
		}
	}
	for t := range desired {
		snap.Desired = append(snap.Desired, t)
	}
	sort.Slice(snap.Desired, func(i, j int) bool { return snap.Desired[i].Less(snap.Desired[j]) })
	ps.rec.Snapshots = append(ps.rec.Snapshots, snap)
	w.tr.End(w.tr.Begin("pubsub snapshot").Str("machine", m.String()).Int("server", len(snap.Server)).
		Int("desired", len(snap.Desired)))
}

// finish takes the end-of-run snapshots (before the client closes) and stops the workload.
func (ps *pubsubWorld) finish() {
	for m := fsm.Machine(0); m < fsm.Machines; m++ {
		if ps.quiescent(m) {
			ps.snapshot(m, true)
		}
	}
	for _, s := range ps.subs {
		s.stopped = true
	}
	if ps.pub != nil {
		ps.pub.stopped = true
	}
}

// drain lets every subscriber take what its subscription delivered (the simulated application
// consumes after every scheduler action).
func (ps *pubsubWorld) drain() {
	for _, s := range ps.subs {
		s.drain()
	}
}

// Subscriber events.
const (
	subscriberSubscribe uint64 = iota + 1
	subscriberUnsubscribe
)

// subscriber is one scripted subscriber: at most one subscription at a time.
type subscriber struct {
	ps      *pubsubWorld
	idx     int
	spec    *scenario.SubscriberSpec
	machine fsm.Machine
	topics  []fsm.Topic
	box     *engine.Mailbox
	op      int
	granted bool
	waiting bool
	done    bool // unsubscribed: no more subscriptions
	stopped bool
}

// live reports whether the subscriber holds a granted subscription that has not ended.
func (s *subscriber) live() bool {
	if s.box == nil || !s.granted {
		return false
	}
	ended, _, _ := s.box.Ended()
	return !ended
}

func (s *subscriber) run(arg uint64) bool {
	switch arg {
	case subscriberSubscribe:
		return s.subscribe()
	case subscriberUnsubscribe:
		return s.unsubscribe()
	}
	return false
}

func (s *subscriber) subscribe() bool {
	ps := s.ps
	w := ps.w
	if s.stopped || s.done || s.box != nil || s.waiting {
		return false
	}
	op := len(ps.rec.Subscribes)
	ps.rec.Subscribes = append(ps.rec.Subscribes, record.SubscribeOp{Subscriber: s.idx, Machine: s.machine,
		Topics: append([]fsm.Topic(nil), s.topics...), Call: w.k.now})
	s.op, s.granted, s.waiting = op, false, true
	s.box = engine.NewMailbox(w.sc.Workload.PubSub.Buffer)
	ps.router.Join(s.machine, s.topics, s.box)
	b := w.tr.Begin("pubsub subscribe")
	b = b.Int("sub", s.idx)
	b = b.Int("op", op)
	for i := range s.topics {
		b = s.topics[i].AppendTo(append(b, ' '))
	}
	w.tr.End(b)
	box := s.box
	w.eng.Subscribe(s.machine, s.topics, func(g engine.Grant) { s.answered(op, box, g) })
	return true
}

// answered receives the machine's answer to subscription op (on the engine's step).
func (s *subscriber) answered(op int, box *engine.Mailbox, g engine.Grant) {
	ps := s.ps
	w := ps.w
	rec := &ps.rec.Subscribes[op]
	rec.Return = w.k.now
	rec.Outcome = g.Outcome.String()
	if g.Outcome == fsm.OutcomeGranted {
		rec.Conn = g.ConnID
	}
	if g.Err != nil {
		rec.Err = g.Err.Error()
	}
	s.waiting = false
	b := w.tr.Begin("pubsub answer")
	b = b.Int("sub", s.idx)
	b = b.Int("op", op)
	b = b.Str("outcome", rec.Outcome)
	if rec.Err != "" {
		b = b.Quoted("err", rec.Err)
	}
	w.tr.End(b)
	if g.Outcome == fsm.OutcomeGranted && box == s.box && !s.done {
		ps.router.Granted(g.ConnID, s.topics)
		s.granted = true
		return
	}
	s.leave(box)
	box.End(fsm.EndUnsubscribed, nil)
	if box == s.box {
		s.box = nil
		s.retry()
	}
}

// leave removes box from the router and unsubscribes the topics nobody wants any more.
func (s *subscriber) leave(box *engine.Mailbox) {
	for _, t := range s.ps.router.Leave(s.machine, s.topics, box) {
		s.ps.w.eng.Unsubscribe(s.machine, t)
	}
}

func (s *subscriber) retry() {
	if s.spec.Retry > 0 && !s.stopped && !s.done {
		s.ps.w.k.after(s.spec.Retry, s, subscriberSubscribe)
	}
}

func (s *subscriber) unsubscribe() bool {
	if s.stopped || s.done {
		return false
	}
	s.done = true
	w := s.ps.w
	w.tr.End(w.tr.Begin("pubsub unsubscribe").Int("sub", s.idx))
	if s.box != nil && s.granted {
		s.leave(s.box)
		s.box.End(fsm.EndUnsubscribed, nil)
	}
	return true
}

// drain takes everything the subscription delivered, recording it; an end releases the
// subscription (and retries when it ended on its own).
func (s *subscriber) drain() {
	if s.box == nil || !s.granted {
		return
	}
	ps := s.ps
	w := ps.w
	for {
		d, ok, ended, reason, _ := s.box.Take()
		if !ok && !ended {
			return
		}
		r := record.Received{Subscriber: s.idx, Op: s.op, At: w.k.now}
		if ok {
			r.Kind, r.Topic, r.Channel, r.Payload, r.Conn, r.Dropped = d.Kind.String(), d.Topic, d.Channel, d.Payload, d.Conn, d.Dropped
		} else {
			r.Kind, r.Reason = record.ReceivedEnd, reason
		}
		ps.rec.Received = append(ps.rec.Received, r)
		b := w.tr.Begin("pubsub recv")
		b = b.Int("sub", s.idx)
		b = b.Str("kind", r.Kind)
		switch {
		case !ok:
			b = b.Str("reason", reason.String())
		case d.Kind == engine.DeliveryMessage:
			b = b.Uint("conn", uint64(d.Conn))
			b = b.Quoted("channel", d.Channel)
			b = b.Quoted("payload", d.Payload)
		case d.Kind == engine.DeliveryGap:
			b = d.Topic.AppendTo(append(b, ' '))
		default:
			b = b.Int("dropped", d.Dropped)
		}
		w.tr.End(b)
		if !ok {
			s.box = nil
			if reason == fsm.EndReconnectExhausted || reason == fsm.EndRejected {
				s.retry()
			}
			return
		}
	}
}

// publisher posts "m<seq>" messages through the client's command connections.
type publisher struct {
	ps        *pubsubWorld
	spec      *scenario.PublisherSpec
	rng       *rand.Rand
	targets   []string
	shardFrom int
	seq       int
	inFlight  int
	stopped   bool
}

func (p *publisher) run(uint64) bool {
	w := p.ps.w
	if p.stopped || w.k.now >= p.spec.Stop {
		return false
	}
	mean := float64(time.Second) / float64(p.spec.Rate)
	w.k.after(time.Duration(p.rng.ExpFloat64()*mean), p, 0)
	if p.inFlight >= maxPublishesInFlight {
		return true
	}
	i := p.seq % len(p.targets)
	p.seq++
	name := "PUBLISH"
	if i >= p.shardFrom {
		name = "SPUBLISH"
	}
	payload := "m" + strconv.Itoa(p.seq)
	cmd := &engine.Command{Name: name, Frame: resp.AppendCommand(nil, name, p.targets[i], payload)}
	cmd.Done = func(c *engine.Command) {
		p.inFlight--
		outcome := "ok"
		if c.Err != nil || c.Reply.IsError() {
			outcome = "failed"
		}
		p.ps.rec.Publishes[outcome]++
	}
	p.inFlight++
	w.eng.Submit(cmd)
	return true
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
		if err = wire.Deliver(f.Cmd, v); err != nil {
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
	if ps := c.w.ps; ps != nil {
		f.ReportTo(ps.router, c.id)
		// An answer to a subscription command may leave the connection quiescent: snapshot.
		if f.Kind == wire.FrameRejected || ((f.Kind == wire.FrameAcked || f.Kind == wire.FrameIgnored) && c.sub.Owed() == 0) {
			ps.armCheck()
		}
	}
	return true
}

// pubsubSink returns the engine's PubSubSink, or nil without a pub/sub workload.
func (w *world) pubsubSink() engine.PubSubSink {
	if w.ps == nil {
		return nil
	}
	return w.ps.sink()
}

// startPubSub starts the pub/sub workload, if any.
func (w *world) startPubSub() {
	if w.ps != nil {
		w.ps.start()
	}
}

// drainPubSub lets the subscribers consume what was delivered during the last action.
func (w *world) drainPubSub() {
	if w.ps != nil {
		w.ps.drain()
	}
}

// finishPubSub takes the end-of-run snapshots and stops the pub/sub workload, before the client
// closes.
func (w *world) finishPubSub() {
	if w.ps != nil {
		w.ps.finish()
	}
}

// machineOfKind returns the pub/sub episode serving topics of kind.
func machineOfKind(kind fsm.TopicKind) fsm.Machine {
	if kind == fsm.TopicShard {
		return fsm.MachineShardedPubSub
	}
	return fsm.MachinePubSub
}
