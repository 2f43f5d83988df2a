package client

import (
	"context"
	"iter"
	"sort"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/simbind"
	"github.com/respire-go/respire/netio"
)

// DefaultSubscriptionBuffer is the capacity of a subscription's buffer when
// Options.SubscriptionBuffer is zero.
const DefaultSubscriptionBuffer = engine.DefaultMailboxSize

// MessageKind says what a Subscription delivered.
type MessageKind uint8

// Message kinds.
const (
	// MessagePublished is a message published to a subscribed channel (or to a channel matching
	// a subscribed pattern, or to a subscribed shard channel).
	MessagePublished MessageKind = iota + 1
	// MessageGap marks an interruption of the subscription to Channel (or Pattern): its connection
	// was lost and messages published until the server acknowledged the resubscription are lost,
	// because Redis cannot replay them. It comes before every message received after that
	// acknowledgement.
	MessageGap
	// MessageOverflow reports that the subscription's buffer was full: Dropped older entries
	// (messages and gap markers) were discarded to make room. It comes exactly where they were.
	MessageOverflow
)

var messageKindNames = [...]string{"none", "published", "gap", "overflow"}

// String returns "published", "gap" or "overflow".
func (k MessageKind) String() string {
	if int(k) < len(messageKindNames) {
		return messageKindNames[k]
	}
	return "message-kind(" + itoa(int(k)) + ")"
}

// Message is one item a Subscription delivers: a published message, a gap marker or an
// overflow marker.
type Message struct {
	// Kind says which.
	Kind MessageKind
	// Channel is the channel a published message was sent to, or the channel (shard channel) a
	// gap concerns; empty for a pattern's gap and for overflow markers.
	Channel string
	// Pattern is the subscribed pattern that matched (PSubscribe), or whose gap this is.
	Pattern string
	// Payload is a published message's content.
	Payload string
	// Dropped is the number of entries an overflow marker stands for.
	Dropped int
}

// ErrSubscriptionEnded is matched (errors.Is) by every *SubscriptionEndedError.
var ErrSubscriptionEnded = sentinel("respire: subscription ended")

// SubscriptionEndedError is what Next returns once a subscription has ended and its buffer is
// drained.
type SubscriptionEndedError struct {
	// Reason says why it ended.
	Reason SubscriptionEndReason
	// Err is the final connection or resubscription error for EndReconnectExhausted (a
	// *ConnectionError), the server's refusal for EndRejected (a *ServerError), nil otherwise.
	Err error
}

// Error implements error.
func (e *SubscriptionEndedError) Error() string {
	msg := "respire: subscription ended: " + e.Reason.String()
	if e.Err != nil {
		msg += ": " + plainText(e.Err)
	}
	return msg
}

// Unwrap returns the cause.
func (e *SubscriptionEndedError) Unwrap() error { return e.Err }

// Is matches ErrSubscriptionEnded, and ErrReconnectLimit when recovery was exhausted.
func (e *SubscriptionEndedError) Is(target error) bool {
	return target == ErrSubscriptionEnded || (target == ErrReconnectLimit && e.Reason == EndReconnectExhausted)
}

// Subscription receives the messages of one or more channels, patterns or shard channels.
//
// Messages are delivered in order through Next or All, each honouring its context. They are
// buffered (Options.SubscriptionBuffer entries) so that the connection's reader never waits for
// the application; when the buffer is full the oldest entries are dropped and a MessageOverflow
// marker says how many, in their place (see Message). Nothing is lost silently.
//
// When the connection is lost, respire's pub/sub recovery resubscribes (see Client.Subscribe);
// each topic then delivers a MessageGap before the messages received after its resubscription
// was acknowledged. A subscription ends when it is unsubscribed, when the client is closed, when
// recovery exhausts the reconnect policy, or when the server refuses it: Next returns what was
// already buffered, then a *SubscriptionEndedError with the reason.
//
// A Subscription is safe for concurrent use.
type Subscription struct {
	c       *Client
	machine fsm.Machine
	kind    fsm.TopicKind
	box     *engine.Mailbox

	mu     sync.Mutex
	topics []fsm.Topic
}

// Subscribe subscribes to channels (SUBSCRIBE) and returns once the server acknowledged every
// one of them.
//
// Channels and patterns share one pub/sub connection and one recovery episode; shard channels
// (SSubscribe) have their own, so that the exhaustion of one leaves the other usable. The first
// subscription opens the connection: a single attempt, bounded by ctx and by ConnectTimeout plus
// CommandTimeout, never retried by the reconnect policy. Once established, a lost connection is
// recovered: without a ReconnectPolicy at once and then after 250 ms, doubling up to 5 s; with
// one, after InitialDelay and so on, every failed connection or failed resubscription counting
// against MaxAttempts.
//
// Errors:
//   - while recovery is in progress: a *ConnectionError, without opening a competing
//     connection; retry after an OnConnectionStateChange event with Source SourcePubSub and
//     SourceState SourceConnected;
//   - after recovery exhausted the policy: a *ReconnectLimitError, until the client is
//     recreated (command connections stay usable);
//   - a refusal by the server (an ACL denial): a *ServerError;
//   - ErrClosed after Close, ctx's error when ctx ends first.
func (c *Client) Subscribe(ctx context.Context, channels ...string) (*Subscription, error) {
	return c.subscribe(ctx, fsm.MachinePubSub, fsm.TopicChannel, channels)
}

// PSubscribe subscribes to glob-style patterns (PSUBSCRIBE); see Subscribe. Messages carry the
// matching Pattern and the Channel they were published to.
func (c *Client) PSubscribe(ctx context.Context, patterns ...string) (*Subscription, error) {
	return c.subscribe(ctx, fsm.MachinePubSub, fsm.TopicPattern, patterns)
}

// SSubscribe subscribes to shard channels (SSUBSCRIBE, Redis 7.0 and later); see Subscribe.
// Shard channels have their own connection and recovery episode, independent of Subscribe's
// and PSubscribe's.
//
// On a Cluster client the connection goes to the node serving the channels' slot, and follows
// the slot when it moves (a gap marker precedes the messages after the move). Every shard
// channel of one client must share one slot: give them one hash tag ({orders}:created,
// {orders}:paid); another slot fails with a *CrossSlotError.
func (c *Client) SSubscribe(ctx context.Context, shardChannels ...string) (*Subscription, error) {
	if c.opts.UseCluster {
		if err := c.claimShardSlot(shardChannels); err != nil {
			return nil, err
		}
	}
	return c.subscribe(ctx, fsm.MachineShardedPubSub, fsm.TopicShard, shardChannels)
}

func (c *Client) subscribe(ctx context.Context, m fsm.Machine, kind fsm.TopicKind, names []string) (*Subscription, error) {
	topics, err := topicsOf(kind, names, c.ns)
	if err != nil {
		return nil, err
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	ps := c.pubsub
	s := &Subscription{c: c, machine: m, kind: kind, box: engine.NewMailbox(ps.capacity), topics: topics}
	ps.router.Join(m, topics, s.box)
	answer := make(chan engine.Grant, 1)
	id := c.eng.Subscribe(m, topics, func(g engine.Grant) {
		if g.Outcome == fsm.OutcomeGranted {
			// On the event loop, before any later gap or end of these topics.
			ps.router.Granted(g.ConnID, topics)
		}
		answer <- g
	})
	var timeout <-chan time.Time
	if c.opts.CommandTimeout != NoTimeout && c.sim == nil {
		timer := time.NewTimer(c.opts.ConnectTimeout + c.opts.CommandTimeout)
		defer timer.Stop()
		timeout = timer.C
	}
	var g engine.Grant
	var waitErr error
	var expired bool
	if c.sim != nil {
		// A simulated client waits through the host, in virtual time (simseam.go).
		g, waitErr, expired = c.subscribeWaitSim(ctx, answer)
	} else {
		select {
		case g = <-answer:
		case <-ctx.Done():
			waitErr = ctx.Err()
		case <-timeout:
			expired = true
		}
	}
	if expired {
		waitErr = &TimeoutError{CommandName: subscribeCommand(kind), Budget: c.opts.ConnectTimeout + c.opts.CommandTimeout,
			Diagnostics: Diagnostics{Stage: StageAwaitingReply, Endpoint: c.ep, SinceLastRead: -1, SinceLastWrite: -1,
				Hint: "the subscription was not acknowledged in time; check the server's reachability"}}
	}
	if waitErr != nil {
		// Withdraw the demand; the machine answers it exactly once (cancelled, or what came first).
		c.eng.Cancel(m, id)
		if c.sim != nil {
			c.sim.Wait(context.Background(), func() bool { return len(answer) > 0 }, 0)
		}
		g = <-answer
		if g.Outcome == fsm.OutcomeGranted {
			s.leave(topics)
		}
	}
	if g.Outcome == fsm.OutcomeGranted && waitErr == nil {
		return s, nil
	}
	if g.Outcome != fsm.OutcomeGranted {
		s.leave(topics)
	}
	s.box.End(fsm.EndUnsubscribed, nil)
	if waitErr != nil {
		return nil, waitErr
	}
	return nil, c.subscribeFailure(kind, g)
}

// subscribeFailure maps the machine's answer to a subscription that was not granted.
func (c *Client) subscribeFailure(kind fsm.TopicKind, g engine.Grant) error {
	switch g.Outcome {
	case fsm.OutcomeClosed:
		return ErrClosed
	case fsm.OutcomeCancelled:
		return context.Canceled
	case fsm.OutcomeOverflow:
		return &ConnectionError{Endpoint: c.ep, Err: ErrTooManyWaiters}
	case fsm.OutcomeExhausted:
		return &ReconnectLimitError{ConnectionError{Endpoint: c.ep, Err: c.pubsubCause(g.Err)}}
	}
	var se *netio.SubscribeError
	if errors.As(g.Err, &se) {
		return &ServerError{Code: se.Code, Message: se.Message, CommandName: se.Command, Endpoint: c.ep}
	}
	if g.Err == nil {
		return &ConnectionError{Endpoint: c.ep, Err: errors.New("respire: " + subscribeCommand(kind) + " failed")}
	}
	return c.pubsubCause(g.Err)
}

// pubsubCause maps a pub/sub connection failure to a *ConnectionError (a timeout stays reachable
// with errors.As), or a refusal to a *ServerError.
func (c *Client) pubsubCause(err error) error {
	if err == nil {
		return nil
	}
	var se *netio.SubscribeError
	if errors.As(err, &se) {
		return &ServerError{Code: se.Code, Message: se.Message, CommandName: se.Command, Endpoint: c.ep}
	}
	mapped := connectFailure(c.ep, c.opts.ConnectTimeout, err)
	if ce, ok := mapped.(*ConnectionError); ok {
		return ce
	}
	return &ConnectionError{Endpoint: c.ep, Err: mapped}
}

func subscribeCommand(kind fsm.TopicKind) string {
	return [...]string{"SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE"}[kind]
}

// topicsOf validates names and returns their topics, sorted and without duplicates, with their
// physical names in the namespace ns (Options.PubSubPrefix).
func topicsOf(kind fsm.TopicKind, names []string, ns *namespace) ([]fsm.Topic, error) {
	if len(names) == 0 {
		return nil, configErr(subscribeCommand(kind), "needs at least one name")
	}
	topics := make([]fsm.Topic, 0, len(names))
	for _, n := range names {
		if n == "" {
			return nil, configErr(subscribeCommand(kind), "names must not be empty")
		}
		topics = append(topics, fsm.Topic{Kind: kind, Name: ns.topic(kind, n)})
	}
	sort.Slice(topics, func(i, j int) bool { return topics[i].Less(topics[j]) })
	out := topics[:1]
	for _, t := range topics[1:] {
		if t != out[len(out)-1] {
			out = append(out, t)
		}
	}
	return out, nil
}

// leave removes topics from the router and unsubscribes those no other subscription wants.
func (s *Subscription) leave(topics []fsm.Topic) {
	c := s.c
	for _, t := range c.pubsub.router.Leave(s.machine, topics, s.box) {
		c.eng.Unsubscribe(s.machine, t)
	}
}

// Next returns the next message, gap marker or overflow marker, waiting for one until ctx ends.
// Once the subscription has ended and its buffer is drained it returns a
// *SubscriptionEndedError (errors.Is ErrSubscriptionEnded), again and again.
func (s *Subscription) Next(ctx context.Context) (Message, error) {
	if h := s.c.hooks; h != nil && h.delivery != nil {
		return s.c.hookDelivery(ctx, s)
	}
	return s.next(ctx)
}

// next is Next without the hooks.
func (s *Subscription) next(ctx context.Context) (Message, error) {
	for {
		d, ok, ended, reason, err := s.box.Take()
		if ok {
			return messageOf(&d, s.c.ns), nil
		}
		if ended {
			return Message{}, s.endError(reason, err)
		}
		if s.c.sim != nil {
			// A simulated client waits through the host (simseam.go).
			if s.c.sim.Wait(ctx, func() bool { return len(s.box.Ready()) > 0 }, 0) != simbind.Ready {
				return Message{}, ctx.Err()
			}
			<-s.box.Ready()
			continue
		}
		select {
		case <-s.box.Ready():
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
	}
}

// All returns an iterator over the subscription's messages, markers included, until it ends
// (the last pair then carries its *SubscriptionEndedError) or ctx ends (ctx's error). Breaking
// out of the loop leaves the subscription as it is. An iteration already running drains what was
// buffered before the end; an iteration started after the subscription ended yields only the
// end.
func (s *Subscription) All(ctx context.Context) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		if ended, reason, err := s.box.Ended(); ended {
			yield(Message{}, s.endError(reason, err))
			return
		}
		for {
			m, err := s.Next(ctx)
			if !yield(m, err) || err != nil {
				return
			}
		}
	}
}

func (s *Subscription) endError(reason fsm.EndReason, err error) error {
	if err != nil {
		err = s.c.pubsubCause(err)
	}
	return &SubscriptionEndedError{Reason: SubscriptionEndReason(reason), Err: err}
}

// messageOf returns the message of a delivery, its names without the namespace's channel
// prefix.
func messageOf(d *engine.Delivery, ns *namespace) Message {
	m := Message{Payload: d.Payload, Dropped: d.Dropped}
	switch d.Kind {
	case engine.DeliveryMessage:
		m.Kind = MessagePublished
		m.Channel = ns.untopic(fsm.TopicChannel, d.Channel)
	case engine.DeliveryGap:
		m.Kind = MessageGap
		if d.Topic.Kind != fsm.TopicPattern {
			m.Channel = ns.untopic(d.Topic.Kind, d.Topic.Name)
		}
	case engine.DeliveryOverflow:
		m.Kind = MessageOverflow
	}
	if d.Topic.Kind == fsm.TopicPattern {
		m.Pattern = ns.untopic(fsm.TopicPattern, d.Topic.Name)
	}
	return m
}

// Topics returns the names the subscription is subscribed to, sorted.
func (s *Subscription) Topics() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.topics))
	for i, t := range s.topics {
		out[i] = s.c.ns.untopic(t.Kind, t.Name)
	}
	return out
}

// Ended reports whether the subscription has ended (its buffer may still hold messages for
// Next), and why.
func (s *Subscription) Ended() (bool, SubscriptionEndReason) {
	ended, reason, _ := s.box.Ended()
	return ended, SubscriptionEndReason(reason)
}

// Buffered returns the number of entries waiting in the buffer.
func (s *Subscription) Buffered() int { return s.box.Len() }

// Unsubscribe removes names from the subscription (all of them when none is given). It does not
// wait for the server: the unsubscription is sent when the connection is up, and recovery
// restores only what remains, so it may be called during a reconnect's backoff. When no name
// remains the subscription ends with EndUnsubscribed after what it buffered. Unsubscribing a
// name the subscription does not have does nothing.
func (s *Subscription) Unsubscribe(names ...string) error {
	s.mu.Lock()
	var removed, kept []fsm.Topic
	for _, t := range s.topics {
		drop := len(names) == 0
		for _, n := range names {
			drop = drop || s.c.ns.topic(t.Kind, n) == t.Name
		}
		if drop {
			removed = append(removed, t)
		} else {
			kept = append(kept, t)
		}
	}
	s.topics = kept
	s.mu.Unlock()
	if len(removed) > 0 {
		s.leave(removed)
	}
	if len(kept) == 0 {
		s.box.End(fsm.EndUnsubscribed, nil)
	}
	return nil
}

// Close unsubscribes from everything: Unsubscribe with no names.
func (s *Subscription) Close() error { return s.Unsubscribe() }

// pubsubState is a client's pub/sub plumbing: the router that delivers messages to
// subscriptions and executes the pub/sub effects of the engine.
type pubsubState struct {
	router   *engine.Router
	capacity int
}

func newPubSubState(o *Options) *pubsubState {
	capacity := o.SubscriptionBuffer
	if capacity == 0 {
		capacity = DefaultSubscriptionBuffer
	}
	return &pubsubState{router: engine.NewRouter(capacity), capacity: capacity}
}
