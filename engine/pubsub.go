package engine

import (
	"sort"
	"sync"

	"github.com/respire-go/respire/fsm"
)

// DefaultMailboxSize is the capacity of a subscription's mailbox when none is given.
const DefaultMailboxSize = 1024

// SubscriberConn is a pub/sub connection (netio's and the simulator's): a Conn that also sends
// subscription commands. Subscribe must not block: the frames are queued for the connection's
// writer. The server's acknowledgements and rejections come back through a PubSubReceiver.
type SubscriberConn interface {
	Conn
	// Subscribe sends SUBSCRIBE, PSUBSCRIBE and SSUBSCRIBE (or their unsubscribes) for topics.
	Subscribe(topics []fsm.Topic, unsubscribe bool)
}

// PubSubMessage is one message read from a subscriber connection.
type PubSubMessage struct {
	// Topic is the subscription that matched: the channel, the pattern or the shard channel.
	Topic fsm.Topic
	// Channel is the channel the message was published to (for a pattern, the matching channel).
	Channel string
	// Payload is the message.
	Payload string
}

// PubSubReceiver receives what subscriber connections read, from their reader. Its methods
// must not block. Conn identifies the connection (and, through fsm.MachineOf, its episode).
type PubSubReceiver interface {
	// Acked reports the server's acknowledgement of topic's subscription on conn.
	Acked(conn fsm.ConnID, topic fsm.Topic)
	// Rejected reports that the server refused topic's subscription on conn with err.
	Rejected(conn fsm.ConnID, topic fsm.Topic, err error)
	// Message delivers a message that arrived on conn.
	Message(conn fsm.ConnID, msg PubSubMessage)
}

// DeliveryKind says what a subscription receives.
type DeliveryKind uint8

// Delivery kinds.
const (
	// DeliveryMessage is a published message.
	DeliveryMessage DeliveryKind = iota + 1
	// DeliveryGap marks an interruption: messages published while the topic was not subscribed
	// (between the loss of a connection and the acknowledgement of its resubscription) are lost.
	// It precedes every message received after that acknowledgement.
	DeliveryGap
	// DeliveryOverflow reports that Dropped older entries were discarded because the mailbox was
	// full (the consumer was too slow). It is delivered in their place, before what remains.
	DeliveryOverflow
)

var deliveryNames = [...]string{"none", "message", "gap", "overflow"}

// String returns the lower-case name of the kind.
func (k DeliveryKind) String() string {
	if int(k) < len(deliveryNames) {
		return deliveryNames[k]
	}
	return "delivery?"
}

// Delivery is one entry of a subscription's mailbox.
type Delivery struct {
	// Kind says what it is.
	Kind DeliveryKind
	// Topic is the subscription concerned: the message's matching topic, or the gap's topic.
	Topic fsm.Topic
	// Channel and Payload are a message's channel and content.
	Channel, Payload string
	// Dropped counts the entries an overflow marker replaces.
	Dropped int
	// Conn is the connection a message arrived on (0 for markers).
	Conn fsm.ConnID
}

// Mailbox is a subscription's bounded buffer: a FIFO of deliveries written by a connection's
// reader or the event loop, which never block, and read by the application.
//
// Overflow policy (drop-oldest, counted, in order): when a new entry finds the mailbox full,
// the oldest entry is discarded and counted. The count is delivered as one DeliveryOverflow
// entry before the oldest entry still buffered, which is exactly where the discarded entries
// were, so the consumer learns how many entries it lost and where. Nothing is lost silently and
// the writer never waits.
//
// A mailbox ends once (End): the entries already buffered are still delivered, then the end.
type Mailbox struct {
	mu     sync.Mutex
	buf    []Delivery
	head   int
	n      int
	lost   int
	ended  bool
	reason fsm.EndReason
	err    error
	ready  chan struct{}
}

// NewMailbox returns a mailbox holding at most capacity entries (DefaultMailboxSize if not
// positive), plus the overflow count.
func NewMailbox(capacity int) *Mailbox {
	if capacity <= 0 {
		capacity = DefaultMailboxSize
	}
	return &Mailbox{buf: make([]Delivery, capacity), ready: make(chan struct{}, 1)}
}

// Put appends d, discarding the oldest entry when full. It reports false when the mailbox has
// ended (d is dropped).
func (b *Mailbox) Put(d Delivery) bool {
	b.mu.Lock()
	if b.ended {
		b.mu.Unlock()
		return false
	}
	b.put(d)
	b.mu.Unlock()
	b.signal()
	return true
}

func (b *Mailbox) put(d Delivery) {
	if b.n == len(b.buf) {
		old := &b.buf[b.head]
		if old.Kind == DeliveryOverflow {
			b.lost += old.Dropped
		} else {
			b.lost++
		}
		*old = Delivery{}
		b.head = (b.head + 1) % len(b.buf)
		b.n--
	}
	b.buf[(b.head+b.n)%len(b.buf)] = d
	b.n++
}

// End ends the mailbox with reason and err, after what is buffered. It reports false if it had
// already ended.
func (b *Mailbox) End(reason fsm.EndReason, err error) bool {
	b.mu.Lock()
	if b.ended {
		b.mu.Unlock()
		return false
	}
	b.ended, b.reason, b.err = true, reason, err
	b.mu.Unlock()
	b.signal()
	return true
}

func (b *Mailbox) signal() {
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// Take returns the next delivery. With ok false there is none buffered: ended then says whether
// the mailbox has ended, with its reason and error.
func (b *Mailbox) Take() (d Delivery, ok, ended bool, reason fsm.EndReason, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.lost > 0:
		d = Delivery{Kind: DeliveryOverflow, Dropped: b.lost}
		b.lost = 0
	case b.n > 0:
		d = b.buf[b.head]
		b.buf[b.head] = Delivery{}
		b.head = (b.head + 1) % len(b.buf)
		b.n--
	default:
		if b.ended {
			b.signal() // every waiting reader learns the end
		}
		return Delivery{}, false, b.ended, b.reason, b.err
	}
	if b.n > 0 || b.ended {
		// Several readers may wait: pass the signal on while there is something to take.
		b.signal()
	}
	return d, true, false, 0, nil
}

// Ended reports whether the mailbox has ended, with its reason and error, whatever is still
// buffered.
func (b *Mailbox) Ended() (bool, fsm.EndReason, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ended, b.reason, b.err
}

// Len returns the number of buffered entries (an overflow count counts as one).
func (b *Mailbox) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.n
	if b.lost > 0 {
		n++
	}
	return n
}

// Ready is signalled (capacity one, never closed) after each Put and End: wait on it when Take
// finds nothing.
func (b *Mailbox) Ready() <-chan struct{} { return b.ready }

// topicRoute is the router's state of one topic of one episode.
type topicRoute struct {
	// conn is the connection whose messages for the topic are delivered directly: the one the
	// topic was last granted or resubscribed on.
	conn fsm.ConnID
	// held are messages that arrived on another connection, waiting for the event loop to decide
	// whether a gap marker precedes them (recovery) or not (a first subscription). heldLost
	// counts those discarded because held was full.
	held     []Delivery
	heldLost int
	boxes    []*Mailbox
}

// Router delivers pub/sub messages to the mailboxes of the subscriptions that want them, and
// executes the pub/sub effects of the engine: it is both the engine's PubSubSink and the
// subscriber connections' PubSubReceiver. Production (client) and the simulator use it alike.
//
// Ordering of gap markers. A connection's reader reports a topic's acknowledgement (through
// Engine.Acked) and goes on reading, while the machine decides on the event loop whether the
// acknowledgement ends an interruption (a Gap effect) or completes a new subscription (a grant).
// Messages for the topic that arrive on a connection other than the one the topic was last
// established on are therefore held until that decision: a Gap delivers the gap marker and then
// the held messages; a grant delivers them without a marker. So a gap marker always precedes
// every message received after its acknowledgement. Holding is bounded by the mailbox capacity
// per topic (drop-oldest, counted in an overflow marker).
type Router struct {
	eng      *Engine
	capacity int

	mu      sync.Mutex
	routes  [fsm.Machines]map[fsm.Topic]*topicRoute
	current [fsm.Machines]fsm.ConnID
	closed  bool
}

var (
	_ PubSubSink     = (*Router)(nil)
	_ PubSubReceiver = (*Router)(nil)
)

// NewRouter returns a router whose held messages are bounded by capacity per topic
// (DefaultMailboxSize if not positive). Attach the engine before connections open.
func NewRouter(capacity int) *Router {
	if capacity <= 0 {
		capacity = DefaultMailboxSize
	}
	r := &Router{capacity: capacity}
	for i := range r.routes {
		r.routes[i] = map[fsm.Topic]*topicRoute{}
	}
	return r
}

// Attach sets the engine that acknowledgements and rejections are reported to.
func (r *Router) Attach(e *Engine) { r.eng = e }

// Join registers box for topics of machine m, before the subscription is demanded, so that no
// message received after the acknowledgement is missed.
func (r *Router) Join(m fsm.Machine, topics []fsm.Topic, box *Mailbox) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		box.End(fsm.EndClosed, nil)
		return
	}
	for _, t := range topics {
		rt := r.routes[m][t]
		if rt == nil {
			rt = &topicRoute{}
			r.routes[m][t] = rt
		}
		rt.boxes = append(rt.boxes, box)
	}
}

// Leave removes box from topics of machine m and returns the topics no subscription wants any
// more, sorted: the caller unsubscribes them (Engine.Unsubscribe).
func (r *Router) Leave(m fsm.Machine, topics []fsm.Topic, box *Mailbox) []fsm.Topic {
	r.mu.Lock()
	defer r.mu.Unlock()
	var unused []fsm.Topic
	for _, t := range topics {
		rt := r.routes[m][t]
		if rt == nil {
			continue
		}
		for i, b := range rt.boxes {
			if b == box {
				rt.boxes = append(rt.boxes[:i], rt.boxes[i+1:]...)
				break
			}
		}
		if len(rt.boxes) == 0 {
			delete(r.routes[m], t)
			unused = append(unused, t)
		}
	}
	sort.Slice(unused, func(i, j int) bool { return unused[i].Less(unused[j]) })
	return unused
}

// Granted records that topics were granted to a subscription on conn (a first subscription, not
// a recovery): messages held from conn are delivered, without a gap marker.
func (r *Router) Granted(conn fsm.ConnID, topics []fsm.Topic) {
	m := fsm.MachineOf(uint64(conn))
	if m >= fsm.Machines {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range topics {
		if rt := r.routes[m][t]; rt != nil && rt.conn != conn {
			rt.conn = conn
			r.release(rt)
		}
	}
}

// release delivers the held messages that came from rt.conn (older connections' are obsolete).
func (r *Router) release(rt *topicRoute) {
	if rt.heldLost > 0 {
		rt.deliver(Delivery{Kind: DeliveryOverflow, Dropped: rt.heldLost})
		rt.heldLost = 0
	}
	for i := range rt.held {
		if rt.held[i].Conn == rt.conn {
			rt.deliver(rt.held[i])
		}
		rt.held[i] = Delivery{}
	}
	rt.held = rt.held[:0]
}

func (rt *topicRoute) deliver(d Delivery) {
	for _, b := range rt.boxes {
		b.Put(d)
	}
}

// Acked implements PubSubReceiver: it reports the acknowledgement to the engine.
func (r *Router) Acked(conn fsm.ConnID, topic fsm.Topic) { r.eng.Acked(conn, topic) }

// Rejected implements PubSubReceiver: it reports the rejection to the engine.
func (r *Router) Rejected(conn fsm.ConnID, topic fsm.Topic, err error) {
	r.eng.Rejected(conn, topic, err)
}

// Message implements PubSubReceiver: the message goes to the topic's mailboxes, or is held when
// it arrived on a connection the topic is not yet established on.
func (r *Router) Message(conn fsm.ConnID, msg PubSubMessage) {
	m := fsm.MachineOf(uint64(conn))
	if m >= fsm.Machines {
		return
	}
	d := Delivery{Kind: DeliveryMessage, Topic: msg.Topic, Channel: msg.Channel, Payload: msg.Payload, Conn: conn}
	r.mu.Lock()
	defer r.mu.Unlock()
	rt := r.routes[m][msg.Topic]
	if rt == nil {
		return // nobody wants it (unsubscribed, or its unsubscription is in flight)
	}
	if rt.conn == conn {
		rt.deliver(d)
		return
	}
	if len(rt.held) == r.capacity {
		copy(rt.held, rt.held[1:])
		rt.held = rt.held[:len(rt.held)-1]
		rt.heldLost++
	}
	rt.held = append(rt.held, d)
}

// Subscriptions implements PubSubSink: the commands go to the connection's writer, and a
// subscription on conn makes it the episode's current connection (gap markers that follow
// concern it).
func (r *Router) Subscriptions(m fsm.Machine, conn Conn, id fsm.ConnID, topics []fsm.Topic, unsubscribe bool) {
	if m < fsm.Machines && !unsubscribe {
		r.mu.Lock()
		r.current[m] = id
		r.mu.Unlock()
	}
	if sc, ok := conn.(SubscriberConn); ok {
		sc.Subscribe(topics, unsubscribe)
	}
}

// Gap implements PubSubSink: topic is established again on the episode's current connection
// after an interruption. Its subscriptions get the gap marker, then the messages held since the
// acknowledgement.
func (r *Router) Gap(m fsm.Machine, topic fsm.Topic) {
	if m >= fsm.Machines {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rt := r.routes[m][topic]
	if rt == nil {
		return
	}
	rt.conn = r.current[m]
	rt.deliver(Delivery{Kind: DeliveryGap, Topic: topic})
	r.release(rt)
}

// End implements PubSubSink. Ending every subscription of m (reconnect exhausted, closed) ends
// every mailbox of m after what it buffered. Ending one topic ends its mailboxes when the server
// rejected it; an unsubscription ends nothing here, since the subscription that left ended
// itself (and a newer subscription may already want the topic again).
func (r *Router) End(m fsm.Machine, topic fsm.Topic, reason fsm.EndReason, err error) {
	if m >= fsm.Machines {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if topic.Name == "" {
		r.endAll(m, reason, err)
		return
	}
	if reason == fsm.EndUnsubscribed {
		return
	}
	if rt := r.routes[m][topic]; rt != nil {
		for _, b := range rt.boxes {
			b.End(reason, err)
		}
		delete(r.routes[m], topic)
	}
}

// endAll ends the mailboxes of every topic of m, in topic order, and forgets the routes.
func (r *Router) endAll(m fsm.Machine, reason fsm.EndReason, err error) {
	topics := make([]fsm.Topic, 0, len(r.routes[m]))
	for t := range r.routes[m] {
		topics = append(topics, t)
	}
	sort.Slice(topics, func(i, j int) bool { return topics[i].Less(topics[j]) })
	for _, t := range topics {
		for _, b := range r.routes[m][t].boxes {
			b.End(reason, err)
		}
		delete(r.routes[m], t)
	}
}

// Close ends every mailbox with fsm.EndClosed and forgets every route; later joins end at once.
func (r *Router) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for m := range r.routes {
		r.endAll(fsm.Machine(m), fsm.EndClosed, nil)
	}
}

// Topics returns the topics of machine m some subscription wants, sorted (for tests and
// diagnostics).
func (r *Router) Topics(m fsm.Machine) []fsm.Topic {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]fsm.Topic, 0, len(r.routes[m]))
	for t := range r.routes[m] {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}
