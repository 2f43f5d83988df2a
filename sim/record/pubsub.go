package record

import (
	"time"

	"github.com/respire-go/respire/fsm"
)

// PubSubRecords is what a run recorded about pub/sub: the ground truth of the simulated nodes
// (acknowledged subscriptions, published messages and their deliveries, subscription sets) and
// what the simulated application saw (subscription attempts and deliveries).
type PubSubRecords struct {
	// Subscribes are the subscription attempts, in issue order.
	Subscribes []SubscribeOp
	// Received are the subscribers' deliveries (messages, markers and ends), in order.
	Received []Received
	// Published are the messages the nodes delivered, in order.
	Published []Published
	// ServerAcks are the (un)subscriptions the nodes acknowledged, in order.
	ServerAcks []ServerAck
	// Snapshots are the nodes' subscription sets of the client's pub/sub connections, taken
	// after each completed (re)connection once no subscription command was in flight, and at the
	// end of the run, with the subscriptions the application wanted at that moment.
	Snapshots []SubscriptionSnapshot
	// Publishes counts the publisher's commands by outcome: ok, failed.
	Publishes map[string]int
}

// SubscribeOp is one subscription attempt of a subscriber.
type SubscribeOp struct {
	// Subscriber is the subscriber's index.
	Subscriber int
	// Machine is the episode it went to.
	Machine fsm.Machine
	// Topics are its topics.
	Topics []fsm.Topic
	// Call and Return are when it was issued and answered.
	Call, Return time.Duration
	// Outcome is the machine's answer (granted, failed, exhausted, closed, ...), or "" if none
	// came.
	Outcome string
	// Conn is the connection a granted subscription was established on.
	Conn fsm.ConnID
	// Err is the error of a failed answer.
	Err string
}

// Received kinds beyond the engine's deliveries.
const (
	// ReceivedEnd is the end of a subscription.
	ReceivedEnd = "end"
)

// Received is one item a subscriber took from its subscription.
type Received struct {
	// Subscriber is the subscriber's index; Op the index of the SubscribeOp of the subscription.
	Subscriber, Op int
	// At is when it was taken.
	At time.Duration
	// Kind is message, gap, overflow or end.
	Kind string
	// Topic is the subscription's topic (messages, gaps).
	Topic fsm.Topic
	// Channel and Payload are a message's.
	Channel, Payload string
	// Conn is the connection a message arrived on.
	Conn fsm.ConnID
	// Dropped is an overflow marker's count.
	Dropped int
	// Reason is an end's reason.
	Reason fsm.EndReason
}

// Published is one message a node delivered (PUBLISH or SPUBLISH).
type Published struct {
	// At is when the node executed it.
	At time.Duration
	// Node is the node.
	Node string
	// Shard marks SPUBLISH.
	Shard bool
	// Channel and Payload are the message.
	Channel, Payload string
	// Conns are the connections it was written to.
	Conns []fsm.ConnID
}

// ServerAck is one (un)subscription a node acknowledged.
type ServerAck struct {
	// At is when.
	At time.Duration
	// Node is the node.
	Node string
	// Conn is the client connection.
	Conn fsm.ConnID
	// Topic is the topic.
	Topic fsm.Topic
	// Unsubscribe marks an unsubscription.
	Unsubscribe bool
}

// SubscriptionSnapshot compares, at one moment, the nodes' subscriptions of the client's
// connections of one episode with the topics the application's live subscriptions wanted.
type SubscriptionSnapshot struct {
	// At is when it was taken.
	At time.Duration
	// Machine is the episode.
	Machine fsm.Machine
	// Server lists the nodes' subscriptions: one entry per connection and topic, so a topic
	// subscribed on two connections appears twice.
	Server []ServerSub
	// Desired are the topics the live subscriptions wanted, sorted.
	Desired []fsm.Topic
	// End marks the snapshot taken at the end of the run.
	End bool
}

// ServerSub is one topic subscribed on one node connection.
type ServerSub struct {
	Conn  fsm.ConnID
	Topic fsm.Topic
}
