package workload

import (
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
	"github.com/respire-go/respire/sim/stream"
)

// maxPublishesInFlight bounds the publisher's commands waiting for their replies; beyond it a
// tick publishes nothing.
const maxPublishesInFlight = 16

// PubSub runs the subscribers and the publisher of pub/sub (workload.pubsub) over the router
// (the same engine.Router the client uses), recording what they saw.
type PubSub struct {
	w      *Env
	router *engine.Router
	rec    *record.PubSubRecords
	subs   []*subscriber
	pub    *publisher
}

// NewPubSub schedules the subscribers and the publisher of w's scenario, which must have a
// pub/sub workload; router is attached to the engine already, and rec receives the records.
func NewPubSub(w *Env, router *engine.Router, rec *record.PubSubRecords) *PubSub {
	ps := &PubSub{w: w, router: router, rec: rec}
	spec := w.Scenario.Workload.PubSub
	for i := range spec.Subscribers {
		s := &subscriber{ps: ps, idx: i, spec: &spec.Subscribers[i], op: -1}
		kind, _ := scenario.TopicKind(s.spec.Kind)
		s.machine = machineOfKind(kind)
		for _, name := range s.spec.Topics {
			s.topics = append(s.topics, fsm.Topic{Kind: kind, Name: name})
		}
		sort.Slice(s.topics, func(a, b int) bool { return s.topics[a].Less(s.topics[b]) })
		ps.subs = append(ps.subs, s)
		w.Sched.Schedule(s.spec.At, s, subscriberSubscribe)
		if s.spec.UnsubscribeAt > 0 {
			w.Sched.Schedule(s.spec.UnsubscribeAt, s, subscriberUnsubscribe)
		}
	}
	if p := spec.Publisher; p != nil {
		ps.pub = &publisher{ps: ps, spec: p, rng: rand.New(stream.New(w.Seed, stream.PubSub, 0)),
			targets: append(append([]string(nil), p.Channels...), p.ShardChannels...), shardFrom: len(p.Channels)}
		w.Sched.Schedule(p.Start, ps.pub, 0)
	}
	return ps
}

// Desired returns the topics the live subscriptions of episode m want, sorted.
func (ps *PubSub) Desired(m fsm.Machine) []fsm.Topic {
	desired := map[fsm.Topic]bool{}
	for _, s := range ps.subs {
		if s.machine == m && s.live() {
			for _, t := range s.topics {
				desired[t] = true
			}
		}
	}
	return slices.SortedFunc(maps.Keys(desired), func(a, b fsm.Topic) int {
		switch {
		case a.Less(b):
			return -1
		case b.Less(a):
			return 1
		}
		return 0
	})
}

// Drain lets every subscriber take what its subscription delivered (the simulated application
// consumes after every scheduler action).
func (ps *PubSub) Drain() {
	for _, s := range ps.subs {
		s.drain()
	}
}

// Stop stops the subscribers and the publisher.
func (ps *PubSub) Stop() {
	for _, s := range ps.subs {
		s.stopped = true
	}
	if ps.pub != nil {
		ps.pub.stopped = true
	}
}

// Subscriber events.
const (
	subscriberSubscribe uint64 = iota + 1
	subscriberUnsubscribe
)

// subscriber is one scripted subscriber: at most one subscription at a time.
type subscriber struct {
	ps      *PubSub
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

func (s *subscriber) Run(arg uint64) bool {
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
		Topics: append([]fsm.Topic(nil), s.topics...), Call: w.Sched.Now()})
	s.op, s.granted, s.waiting = op, false, true
	s.box = engine.NewMailbox(w.Scenario.Workload.PubSub.Buffer)
	ps.router.Join(s.machine, s.topics, s.box)
	b := w.Trace.Begin("pubsub subscribe")
	b = b.Int("sub", s.idx)
	b = b.Int("op", op)
	for i := range s.topics {
		b = s.topics[i].AppendTo(append(b, ' '))
	}
	w.Trace.End(b)
	box := s.box
	w.Engine.Subscribe(s.machine, s.topics, func(g engine.Grant) { s.answered(op, box, g) })
	return true
}

// answered receives the machine's answer to subscription op (on the engine's step).
func (s *subscriber) answered(op int, box *engine.Mailbox, g engine.Grant) {
	ps := s.ps
	w := ps.w
	rec := &ps.rec.Subscribes[op]
	rec.Return = w.Sched.Now()
	rec.Outcome = g.Outcome.String()
	if g.Outcome == fsm.OutcomeGranted {
		rec.Conn = g.ConnID
	}
	if g.Err != nil {
		rec.Err = g.Err.Error()
	}
	s.waiting = false
	b := w.Trace.Begin("pubsub answer")
	b = b.Int("sub", s.idx)
	b = b.Int("op", op)
	b = b.Str("outcome", rec.Outcome)
	if rec.Err != "" {
		b = b.Quoted("err", rec.Err)
	}
	w.Trace.End(b)
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
		s.ps.w.Engine.Unsubscribe(s.machine, t)
	}
}

func (s *subscriber) retry() {
	if s.spec.Retry > 0 && !s.stopped && !s.done {
		s.ps.w.Sched.After(s.spec.Retry, s, subscriberSubscribe)
	}
}

func (s *subscriber) unsubscribe() bool {
	if s.stopped || s.done {
		return false
	}
	s.done = true
	w := s.ps.w
	w.Trace.End(w.Trace.Begin("pubsub unsubscribe").Int("sub", s.idx))
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
		r := record.Received{Subscriber: s.idx, Op: s.op, At: w.Sched.Now()}
		if ok {
			r.Kind, r.Topic, r.Channel, r.Payload, r.Conn, r.Dropped = d.Kind.String(), d.Topic, d.Channel, d.Payload, d.Conn, d.Dropped
		} else {
			r.Kind, r.Reason = record.ReceivedEnd, reason
		}
		ps.rec.Received = append(ps.rec.Received, r)
		b := w.Trace.Begin("pubsub recv")
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
		w.Trace.End(b)
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
	ps        *PubSub
	spec      *scenario.PublisherSpec
	rng       *rand.Rand
	targets   []string
	shardFrom int
	seq       int
	inFlight  int
	stopped   bool
}

func (p *publisher) Run(uint64) bool {
	w := p.ps.w
	if p.stopped || w.Sched.Now() >= p.spec.Stop {
		return false
	}
	mean := float64(time.Second) / float64(p.spec.Rate)
	w.Sched.After(time.Duration(p.rng.ExpFloat64()*mean), p, 0)
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
	w.Engine.Submit(cmd)
	return true
}

// machineOfKind returns the pub/sub episode serving topics of kind.
func machineOfKind(kind fsm.TopicKind) fsm.Machine {
	if kind == fsm.TopicShard {
		return fsm.MachineShardedPubSub
	}
	return fsm.MachinePubSub
}
