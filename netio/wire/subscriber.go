package wire

import (
	"strconv"
	"strings"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/plant"
	"github.com/respire-go/respire/netio/resp"
)

// Subscriber is the subscriber-mode protocol of a pub/sub connection, as a machine. Redis answers
// subscription commands with one acknowledgement per topic and then sends messages at any time:
// as arrays outside the request/reply flow on RESP2, as pushes on RESP3. Subscriber reads both
// forms alike, matches each acknowledgement to the subscription command that asked for it, and
// tells what every frame means (Read); the driver delivers that to the engine. The driver does the
// I/O: netio's SubConn over a socket, the simulator over simulated pipes.
//
// What the server owes the connection is one FIFO of expectations, in the order they were sent:
// one acknowledgement per topic of each (un)subscription command, or the reply of a command sent
// with Send (a credential renewal, say). Rules:
//   - messages and acknowledgements never complete commands; other RESP3 pushes go to the push
//     handler;
//   - an acknowledgement marks its topic in the oldest pending command of its direction
//     (subscribe or unsubscribe) that names it; one nobody asked for (a duplicate, a server-side
//     unsubscription) is ignored;
//   - any other reply answers the oldest expectation that is a command, or that is a subscription
//     command without any acknowledgement yet: an error reply refuses the subscription command
//     (a *SubscribeError for each of its topics), anything else there is a protocol error;
//   - a pmessage with fewer than four elements is a protocol error.
//
// It needs no lock of its own: netio calls it under the connection's lock, the simulator from its
// single thread. Bounds: the expectations are what the engine sent and the server has not answered
// yet; the episodes bound those (one subscription command per demand and per resubscription).
type Subscriber struct {
	ep      engine.Endpoint
	id      fsm.ConnID
	proto   int
	pending []*subExpect
	// plants are the deliberate bugs of the simulator's positive controls; nil in production.
	plants *plant.Set
}

// subExpect is one thing the server owes a subscriber connection: the reply of a command, or one
// acknowledgement per topic of a subscription command (or a single error reply refusing it).
type subExpect struct {
	cmd         *engine.Command
	command     string
	topics      []fsm.Topic
	acked       []bool
	acks        int
	unsubscribe bool
}

func (x *subExpect) done() bool { return x.cmd == nil && x.acks == len(x.topics) }

// Init prepares the protocol of subscriber connection id to ep, which negotiated RESP version
// proto (2 or 3).
func (s *Subscriber) Init(ep engine.Endpoint, id fsm.ConnID, proto int) {
	s.ep, s.id, s.proto = ep, id, proto
}

// Plant switches on the deliberate bugs of p in this protocol, for the simulator's positive
// controls. Only code inside respire can build a plant.Set; nil plants nothing.
func (s *Subscriber) Plant(p *plant.Set) { s.plants = p }

// Subscribe appends the (un)subscription commands for topics to dst (see AppendSubscriptions) and
// expects their acknowledgements.
func (s *Subscriber) Subscribe(dst []byte, topics []fsm.Topic, unsubscribe bool) []byte {
	return AppendSubscriptions(dst, topics, unsubscribe, func(name string, batch []fsm.Topic) {
		s.pending = append(s.pending, &subExpect{command: name, topics: batch, acked: make([]bool, len(batch)),
			unsubscribe: unsubscribe})
	})
}

// Send expects the reply of cmd, whose frame the driver writes after everything sent before.
func (s *Subscriber) Send(cmd *engine.Command) {
	s.pending = append(s.pending, &subExpect{cmd: cmd})
}

// Owed returns the number of things the server still owes: subscription commands not fully
// acknowledged and commands without their reply. A connection that owes nothing is quiet, and may
// legitimately hear nothing for hours.
func (s *Subscriber) Owed() int { return len(s.pending) }

// CommandsPending returns the number of commands sent with Send that await their reply.
func (s *Subscriber) CommandsPending() int {
	n := 0
	for _, x := range s.pending {
		if x.cmd != nil {
			n++
		}
	}
	return n
}

// TakeCommands removes every expectation and returns the commands that await their reply, in the
// order they were sent, for the driver to complete when the connection stops.
func (s *Subscriber) TakeCommands() []*engine.Command {
	var out []*engine.Command
	for _, x := range s.pending {
		if x.cmd != nil {
			out = append(out, x.cmd)
		}
	}
	clear(s.pending)
	s.pending = nil
	return out
}

// FrameKind says what a frame read by a subscriber connection is.
type FrameKind uint8

// Frame kinds.
const (
	// FrameIgnored: an acknowledgement nobody asked for, or of an unsubscription (the episode acts
	// only on subscriptions).
	FrameIgnored FrameKind = iota
	// FrameMessage: a message, in Frame.Message.
	FrameMessage
	// FrameAcked: the server acknowledged the subscription of Frame.Topic.
	FrameAcked
	// FrameRejected: the server refused the subscription of Frame.Topics with Frame.Err (a
	// *SubscribeError). An unsubscription refused has no topics.
	FrameRejected
	// FrameReply: the reply of Frame.Cmd; complete it with Deliver.
	FrameReply
	// FramePush: a RESP3 push that is no pub/sub event, for the push handler.
	FramePush
)

// Frame is what one frame means.
type Frame struct {
	// Kind says what it is.
	Kind FrameKind
	// Message is a FrameMessage's message.
	Message engine.PubSubMessage
	// Topic is a FrameAcked's topic.
	Topic fsm.Topic
	// Topics and Err are a FrameRejected's refused topics and refusal.
	Topics []fsm.Topic
	Err    error
	// Cmd is a FrameReply's command.
	Cmd *engine.Command
}

// ReportTo hands what f means to the engine's receiver r, for connection conn: a message, an
// acknowledgement, or the refusal of each refused topic. Replies and pushes are the driver's.
func (f *Frame) ReportTo(r engine.PubSubReceiver, conn fsm.ConnID) {
	switch f.Kind {
	case FrameMessage:
		r.Message(conn, f.Message)
	case FrameAcked:
		r.Acked(conn, f.Topic)
	case FrameRejected:
		for _, t := range f.Topics {
			r.Rejected(conn, t, f.Err)
		}
	}
}

// Read judges one frame read from the connection. An error fails the connection: a malformed
// pub/sub event, or a reply nothing awaits.
func (s *Subscriber) Read(v *resp.Value) (Frame, error) {
	if word, ok := eventWord(v, s.proto); ok {
		return s.event(word, v)
	}
	if v.Kind == resp.KindPush {
		return Frame{Kind: FramePush}, nil
	}
	return s.reply(v)
}

// eventWord returns the event word of a pub/sub frame: a push on RESP3, an array outside the
// request/reply flow on RESP2, whose first element names the event.
func eventWord(v *resp.Value, proto int) (string, bool) {
	if !(v.Kind == resp.KindPush || (proto == 2 && v.Kind == resp.KindArray)) || v.Len() < 3 {
		return "", false
	}
	word := v.Elem(0)
	if word.Kind != resp.KindBulkString && word.Kind != resp.KindSimpleString {
		return "", false
	}
	switch string(word.Str) {
	case "message", "pmessage", "smessage", "subscribe", "psubscribe", "ssubscribe",
		"unsubscribe", "punsubscribe", "sunsubscribe":
		return string(word.Str), true
	}
	return "", false
}

// eventTopicKinds maps acknowledgement words to topic kinds.
var eventTopicKinds = map[string]fsm.TopicKind{
	"subscribe": fsm.TopicChannel, "psubscribe": fsm.TopicPattern, "ssubscribe": fsm.TopicShard,
	"unsubscribe": fsm.TopicChannel, "punsubscribe": fsm.TopicPattern, "sunsubscribe": fsm.TopicShard,
}

// event judges one pub/sub event.
func (s *Subscriber) event(word string, v *resp.Value) (Frame, error) {
	str := func(i int) string { return string(v.Elem(i).Str) }
	switch word {
	case "message", "smessage":
		kind := fsm.TopicChannel
		if word == "smessage" {
			kind = fsm.TopicShard
		}
		ch := str(1)
		return Frame{Kind: FrameMessage, Message: engine.PubSubMessage{Topic: fsm.Topic{Kind: kind, Name: ch}, Channel: ch,
			Payload: str(2)}}, nil
	case "pmessage":
		if n := v.Len(); n < 4 {
			return Frame{}, &resp.ProtocolError{Reason: "pmessage with " + strconv.Itoa(n) + " elements"}
		}
		return Frame{Kind: FrameMessage, Message: engine.PubSubMessage{Topic: fsm.Topic{Kind: fsm.TopicPattern, Name: str(1)},
			Channel: str(2), Payload: str(3)}}, nil
	}
	topic := fsm.Topic{Kind: eventTopicKinds[word], Name: str(1)}
	unsubscribe := strings.Contains(word, "unsubscribe")
	matched := s.match(topic, unsubscribe)
	s.popDone()
	// Acknowledgements nobody asked for (a server-side unsubscription, a duplicate) are ignored:
	// the episode only acts on what it sent.
	if !matched || unsubscribe {
		return Frame{Kind: FrameIgnored}, nil
	}
	return Frame{Kind: FrameAcked, Topic: topic}, nil
}

// match marks topic's acknowledgement in the oldest pending subscription command of its direction
// that names it and has not had it yet, and reports whether there was one.
func (s *Subscriber) match(topic fsm.Topic, unsubscribe bool) bool {
	if s.plants.Has(plant.AckToWrongBatch) {
		return s.matchNewest(unsubscribe)
	}
	for _, x := range s.pending {
		if x.cmd != nil || x.unsubscribe != unsubscribe {
			continue
		}
		for i, t := range x.topics {
			if t == topic && !x.acked[i] {
				x.acked[i] = true
				x.acks++
				return true
			}
		}
	}
	return false
}

// matchNewest is the planted AckToWrongBatch: the acknowledgement marks a topic of the newest
// pending subscription command of its direction that still lacks one, whatever topics it names.
func (s *Subscriber) matchNewest(unsubscribe bool) bool {
	for i := len(s.pending) - 1; i >= 0; i-- {
		x := s.pending[i]
		if x.cmd != nil || x.unsubscribe != unsubscribe || x.acks == len(x.topics) {
			continue
		}
		for j := range x.topics {
			if !x.acked[j] {
				x.acked[j] = true
				x.acks++
				s.plants.Fire(plant.AckToWrongBatch, 0)
				return true
			}
		}
	}
	return false
}

// popDone removes the answered expectations at the head of the queue.
func (s *Subscriber) popDone() {
	n := 0
	for n < len(s.pending) && s.pending[n].done() {
		s.pending[n] = nil
		n++
	}
	if n > 0 {
		s.pending = append(s.pending[:0], s.pending[n:]...)
	}
}

// errNoExpectation is the failure of a connection that read a reply nothing awaits.
var errNoExpectation = &resp.ProtocolError{Reason: "reply without a pending command"}

// reply judges a reply that is not a pub/sub event: it answers the oldest command, or refuses the
// oldest subscription command without acknowledgements.
func (s *Subscriber) reply(v *resp.Value) (Frame, error) {
	var head *subExpect
	for _, x := range s.pending {
		if x.cmd != nil || x.acks == 0 {
			head = x
			break
		}
	}
	if head == nil {
		return Frame{}, errNoExpectation
	}
	if head.cmd != nil {
		cmd := head.cmd
		head.cmd = nil
		head.topics = nil
		s.popDone()
		return Frame{Kind: FrameReply, Cmd: cmd}, nil
	}
	if !v.IsError() {
		return Frame{}, &resp.ProtocolError{Reason: "unexpected " + v.Kind.String() + " reply to " + head.command}
	}
	head.acks = len(head.topics)
	s.popDone()
	f := Frame{Kind: FrameRejected, Err: &SubscribeError{Endpoint: s.ep, Conn: s.id, Command: head.command,
		Code: v.ErrorCode(), Message: RedactReply(v.ErrorMessage(), head.command, "")}}
	if !head.unsubscribe {
		f.Topics = head.topics
	}
	return f, nil
}

// subscribeCommands are the (un)subscription command names by topic kind.
var subscribeCommands = [2][3]string{
	{"SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE"},
	{"UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE"},
}

// AppendSubscriptions appends the (un)subscribe commands for topics to dst: one command per topic
// kind (SUBSCRIBE, PSUBSCRIBE), and one SSUBSCRIBE per shard channel so that no command spans hash
// slots. For each command, in order, it calls sent with the command's name and topics, so that the
// caller can expect one acknowledgement per topic. netio and the simulator share it.
func AppendSubscriptions(dst []byte, topics []fsm.Topic, unsubscribe bool, sent func(name string, batch []fsm.Topic)) []byte {
	u := 0
	if unsubscribe {
		u = 1
	}
	for kind := fsm.TopicChannel; kind <= fsm.TopicShard; kind++ {
		var group []fsm.Topic
		for _, t := range topics {
			if t.Kind == kind {
				group = append(group, t)
			}
		}
		for len(group) > 0 {
			batch := group
			if kind == fsm.TopicShard {
				batch = group[:1]
			}
			group = group[len(batch):]
			name := subscribeCommands[u][kind]
			dst = resp.AppendArrayHeader(dst, 1+len(batch))
			dst = resp.AppendBulkString(dst, name)
			for _, t := range batch {
				dst = resp.AppendBulkString(dst, t.Name)
			}
			sent(name, batch)
		}
	}
	return dst
}
