package scenario

import (
	"time"

	"github.com/respire-go/respire/fsm"
)

// Workload describes the closed-loop logical callers. With zero callers there is no workload.
type Workload struct {
	// Callers is the number of logical callers; each issues one command, waits for its outcome
	// (at most client.command_timeout), thinks, and repeats.
	Callers int `yaml:"callers"`
	// Rate is the total target rate, "200/s" (or "/m", or a plain number per second). Each
	// caller's think time is exponential with mean callers/rate.
	Rate Rate `yaml:"rate"`
	// Keys is the number of string keys k0..k{n-1} (default 16), used by GET, SET, DEL, MGET and
	// MSET.
	Keys int `yaml:"keys"`
	// Counters is the number of integer keys c0..c{n-1} (default 4), used by INCR and GET only.
	Counters int `yaml:"counters"`
	// Mix weighs the command kinds. Default: get 50, set 30, del 5, incr 10, mget 3, mset 2.
	Mix Mix `yaml:"mix"`
	// Start is when callers start (each after a seeded stagger). Default 0.
	Start time.Duration `yaml:"start"`
	// Stop is when callers stop issuing new commands. Default: the run's duration.
	Stop time.Duration `yaml:"stop"`
	// Dedicated describes renters of dedicated connections (blocking pops, pushes,
	// transactions); omitted means none.
	Dedicated *DedicatedWorkload `yaml:"dedicated,omitempty"`
	// PubSub describes subscribers and a publisher; omitted means none.
	PubSub *PubSubWorkload `yaml:"pubsub,omitempty"`
	// Batches describes batchers sending pipelines or MULTI/EXEC batches on the command slots
	// (batch.go); omitted means none.
	Batches *BatchWorkload `yaml:"batches,omitempty"`
	// View gives the first callers a view of the client with a read policy of its own
	// (client.Client.WithReadFrom; replica_view.go); omitted means none.
	View *ViewSpec `yaml:"view,omitempty"`
}

// Mix weighs the workload's command kinds (non-negative integers; each operation draws its kind
// with probability weight/total). Every written value is unique in the run ("v<id>", and
// "v<id>.<i>" for the i-th pair of an MSET).
type Mix struct {
	// Get is the weight of GET of one key, drawn from the string keys and the counters.
	Get int `yaml:"get,omitempty"`
	// Set is the weight of SET of one string key.
	Set int `yaml:"set,omitempty"`
	// Del is the weight of DEL of one string key.
	Del int `yaml:"del,omitempty"`
	// Incr is the weight of INCR of one counter.
	Incr int `yaml:"incr,omitempty"`
	// MGet is the weight of MGET of two or three distinct string keys.
	MGet int `yaml:"mget,omitempty"`
	// MSet is the weight of MSET of two or three distinct string keys.
	MSet int `yaml:"mset,omitempty"`
}

func (m Mix) total() int { return m.Get + m.Set + m.Del + m.Incr + m.MGet + m.MSet }

// DedicatedWorkload describes the renters of dedicated connections (workload.dedicated). Each
// renter rents a connection for one operation, runs it, gives the connection back, thinks, and
// repeats.
type DedicatedWorkload struct {
	// Renters is the number of renters (at least 1).
	Renters int `yaml:"renters"`
	// Rate is the renters' total operation rate (default 10/s): each renter's think time is
	// exponential with mean renters/rate.
	Rate Rate `yaml:"rate"`
	// Lists is the number of list keys l0..l{n-1} the pops and pushes use (default 2).
	Lists int `yaml:"lists"`
	// Keys is the number of string keys t0..t{n-1} the transactions use (default 2). They are
	// distinct from the multiplexed workload's keys.
	Keys int `yaml:"keys"`
	// Mix weighs the operations. Default: blpop 40, push 40, tx 20.
	Mix DedicatedMix `yaml:"mix"`
	// Block is the timeout of BLPOP and BRPOP (default 1s; zero blocks indefinitely).
	Block *time.Duration `yaml:"block,omitempty"`
	// Deadline bounds each operation, rent included, like a caller's context (default: block
	// plus client.command_timeout). A rent still pending is withdrawn; an operation whose
	// commands are in flight ends with an unknown outcome and its connection is discarded.
	Deadline time.Duration `yaml:"deadline"`
	// RoundTripTimeout bounds each round trip of a push or a transaction step by
	// client.command_timeout from when its commands were sent, as DedicatedConn's calls are,
	// extended while the connection is in a maintenance window (the relaxation's rule). One
	// that times out ends the operation with an unknown outcome and discards its connection.
	// Blocking pops keep only their block time. Default false: only Deadline bounds an
	// operation.
	RoundTripTimeout bool `yaml:"round_trip_timeout,omitempty"`
	// Start is when the renters start (each after a seeded stagger). Default 0.
	Start time.Duration `yaml:"start"`
	// Stop is when the renters stop starting operations. Default: the run's duration.
	Stop time.Duration `yaml:"stop"`
}

// DedicatedMix weighs the dedicated operations.
type DedicatedMix struct {
	// BLPop: BLPOP of one list with the workload's block time.
	BLPop int `yaml:"blpop,omitempty"`
	// BRPop: BRPOP of one list.
	BRPop int `yaml:"brpop,omitempty"`
	// Push: RPUSH of a unique value to one list.
	Push int `yaml:"push,omitempty"`
	// Tx: WATCH t, GET t, then MULTI, SET t <unique value>, EXEC.
	Tx int `yaml:"tx,omitempty"`
	// XRead: XREAD BLOCK <block> STREAMS s<i> $, a blocking read: under a replica policy it
	// rents from a replica validated by ROLE (replica_blocking.go). The simulated nodes hold
	// no streams, so it ends by its block time (or its connection's loss).
	XRead int `yaml:"xread,omitempty"`
}

func (m DedicatedMix) total() int { return m.BLPop + m.BRPop + m.Push + m.Tx + m.XRead }

// PubSubWorkload describes the pub/sub side of a scenario's workload: subscribers, each owning
// one subscription at a time, and a publisher posting uniquely numbered messages through the
// client's command connections (PUBLISH and SPUBLISH).
type PubSubWorkload struct {
	// Subscribers are the scripted subscribers, numbered from 0 in order.
	Subscribers []SubscriberSpec `yaml:"subscribers"`
	// Publisher posts messages; omitted means none.
	Publisher *PublisherSpec `yaml:"publisher,omitempty"`
	// Buffer is each subscription's buffer capacity (default 1024). The simulated application
	// drains its subscriptions after every scheduler action.
	Buffer int `yaml:"buffer,omitempty"`
}

// Subscriber kinds (SubscriberSpec.Kind).
const (
	SubscribeChannel = "channel"
	SubscribePattern = "pattern"
	SubscribeShard   = "shard"
)

// SubscriberSpec scripts one subscriber.
type SubscriberSpec struct {
	// Kind is channel (SUBSCRIBE), pattern (PSUBSCRIBE) or shard (SSUBSCRIBE). Default channel.
	Kind string `yaml:"kind"`
	// Topics are the channels, patterns or shard channels of its subscription. Required.
	Topics []string `yaml:"topics"`
	// At is when it first subscribes.
	At time.Duration `yaml:"at"`
	// Retry, when positive, makes it subscribe again that long after a subscription failed or
	// ended on its own (reconnect exhausted, rejected); zero means never.
	Retry time.Duration `yaml:"retry,omitempty"`
	// UnsubscribeAt, when positive, is when it unsubscribes (and stops retrying).
	UnsubscribeAt time.Duration `yaml:"unsubscribe_at,omitempty"`
}

// PublisherSpec describes the publisher: messages "m<seq>" at Rate, cycling over Channels
// (PUBLISH) then ShardChannels (SPUBLISH), between Start and Stop.
type PublisherSpec struct {
	// Rate is the publishing rate ("100/s"). Required.
	Rate Rate `yaml:"rate"`
	// Channels are published to with PUBLISH (patterns match them).
	Channels []string `yaml:"channels,omitempty"`
	// ShardChannels are published to with SPUBLISH.
	ShardChannels []string `yaml:"shard_channels,omitempty"`
	// Start is when publishing starts. Default 0.
	Start time.Duration `yaml:"start,omitempty"`
	// Stop is when it stops. Default: the run's duration.
	Stop time.Duration `yaml:"stop,omitempty"`
}

// TopicKind returns the topic kind of a subscriber kind (SubscriberSpec.Kind; empty is channel).
func TopicKind(s string) (fsm.TopicKind, bool) {
	switch s {
	case SubscribeChannel, "":
		return fsm.TopicChannel, true
	case SubscribePattern:
		return fsm.TopicPattern, true
	case SubscribeShard:
		return fsm.TopicShard, true
	}
	return 0, false
}
