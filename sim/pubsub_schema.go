package sim

import (
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/fsm"
)

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

// SubscribeErrorFault makes a node refuse subscription commands of the given kinds with an error
// reply for its window, as an ACL change (NOPERM) does. Unsubscriptions still work.
type SubscribeErrorFault struct {
	// Node is the node.
	Node string `yaml:"node"`
	// For is the window's length; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
	// Kinds lists the refused kinds: channel, pattern, shard. Empty means all three.
	Kinds []string `yaml:"kinds,omitempty"`
	// Reply is the error reply (default Redis's NOPERM refusal of channels).
	Reply string `yaml:"reply,omitempty"`
}

// refuses reports whether the fault refuses subscriptions of kind.
func (f *SubscribeErrorFault) refuses(kind fsm.TopicKind) bool {
	if len(f.Kinds) == 0 {
		return true
	}
	for _, k := range f.Kinds {
		if tk, ok := topicKindOf(k); ok && tk == kind {
			return true
		}
	}
	return false
}

// PubSubExpect asserts the pub/sub episodes and subscribers of a run (checker expect-pubsub).
type PubSubExpect struct {
	// Regular asserts the regular (channel and pattern) episode.
	Regular *EpisodeExpect `yaml:"regular,omitempty"`
	// Sharded asserts the sharded episode.
	Sharded *EpisodeExpect `yaml:"sharded,omitempty"`
	// Subscribers assert individual subscribers.
	Subscribers []SubscriberExpect `yaml:"subscribers,omitempty"`
}

// EpisodeExpect asserts one pub/sub recovery episode's lifecycle.
type EpisodeExpect struct {
	// Attempts are the scheduled policy attempt numbers, in order (0 for scheduled waits
	// without a policy).
	Attempts []int `yaml:"attempts,omitempty"`
	// Delays are the scheduled delays, aligned with Attempts.
	Delays []time.Duration `yaml:"delays,omitempty"`
	// Exhausted, when set, asserts whether the episode exhausted.
	Exhausted *bool `yaml:"exhausted,omitempty"`
	// Dials bounds the connections the episode opened.
	Dials *Bounds `yaml:"dials,omitempty"`
	// Recovered bounds the completed recoveries (connected again after a loss).
	Recovered *Bounds `yaml:"recovered,omitempty"`
}

// SubscriberExpect asserts one subscriber.
type SubscriberExpect struct {
	// Subscriber is the subscriber's index.
	Subscriber int `yaml:"subscriber"`
	// Outcomes are its subscription attempts' outcomes, in order: granted, failed, exhausted,
	// closed.
	Outcomes []string `yaml:"outcomes,omitempty"`
	// Ends are the end reasons of its subscriptions, in order: unsubscribed, closed,
	// reconnect-exhausted, rejected.
	Ends []string `yaml:"ends,omitempty"`
	// Messages bounds the published messages it received.
	Messages *Bounds `yaml:"messages,omitempty"`
	// Gaps bounds the gap markers it received.
	Gaps *Bounds `yaml:"gaps,omitempty"`
	// ReceivesAfter, when set, asserts that it received a message after that time.
	ReceivesAfter *time.Duration `yaml:"receives_after,omitempty"`
}

func topicKindOf(s string) (fsm.TopicKind, bool) {
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

// machineOfKind returns the pub/sub episode serving topics of kind.
func machineOfKind(kind fsm.TopicKind) fsm.Machine {
	if kind == fsm.TopicShard {
		return fsm.MachineShardedPubSub
	}
	return fsm.MachinePubSub
}

var outcomeWords = map[string]bool{"granted": true, "failed": true, "exhausted": true, "closed": true, "cancelled": true, "overflow": true}

var endWords = map[string]bool{"unsubscribed": true, "closed": true, "reconnect-exhausted": true, "rejected": true}

// applyPubSubDefaults fills in the pub/sub workload's defaults. It is idempotent.
func (sc *Scenario) applyPubSubDefaults() {
	ps := sc.Workload.PubSub
	if ps == nil {
		return
	}
	if ps.Buffer == 0 {
		ps.Buffer = 1024
	}
	for i := range ps.Subscribers {
		if ps.Subscribers[i].Kind == "" {
			ps.Subscribers[i].Kind = SubscribeChannel
		}
	}
	if p := ps.Publisher; p != nil && p.Stop == 0 {
		p.Stop = sc.Duration
	}
}

// validatePubSub checks the pub/sub workload and expectations.
func (sc *Scenario) validatePubSub() error {
	ps := sc.Workload.PubSub
	n := 0
	if ps != nil {
		n = len(ps.Subscribers)
		if ps.Buffer < 0 {
			return fieldErr("workload.pubsub.buffer", "must not be negative")
		}
		for i, s := range ps.Subscribers {
			f := "workload.pubsub.subscribers[" + strconv.Itoa(i) + "]"
			if _, ok := topicKindOf(s.Kind); !ok {
				return fieldErr(f+".kind", "must be channel, pattern or shard, not "+strconv.Quote(s.Kind))
			}
			if len(s.Topics) == 0 {
				return fieldErr(f+".topics", "needs at least one topic")
			}
			for j, t := range s.Topics {
				if t == "" || strings.ContainsAny(t, " \r\n") {
					return fieldErr(f+".topics["+strconv.Itoa(j)+"]", "must be a non-empty name without spaces")
				}
			}
			switch {
			case s.At < 0 || s.At >= sc.Duration:
				return fieldErr(f+".at", "must be within the run")
			case s.Retry < 0:
				return fieldErr(f+".retry", "must not be negative")
			case s.UnsubscribeAt != 0 && (s.UnsubscribeAt <= s.At || s.UnsubscribeAt >= sc.Duration):
				return fieldErr(f+".unsubscribe_at", "must be after at and within the run")
			}
		}
		if p := ps.Publisher; p != nil {
			switch {
			case p.Rate <= 0:
				return fieldErr("workload.pubsub.publisher.rate", "must be positive (such as 50/s)")
			case len(p.Channels)+len(p.ShardChannels) == 0:
				return fieldErr("workload.pubsub.publisher", "needs channels or shard_channels")
			case p.Start < 0:
				return fieldErr("workload.pubsub.publisher.start", "must not be negative")
			case p.Stop <= p.Start || p.Stop > sc.Duration:
				return fieldErr("workload.pubsub.publisher.stop", "must be after start and within the run")
			}
		}
	}
	e := sc.Expect.PubSub
	if e == nil {
		return nil
	}
	for i, ep := range []*EpisodeExpect{e.Regular, e.Sharded} {
		if ep != nil && len(ep.Delays) > 0 && len(ep.Delays) != len(ep.Attempts) {
			return fieldErr("expect.pubsub."+[]string{"regular", "sharded"}[i]+".delays", "must align with attempts")
		}
	}
	for i, s := range e.Subscribers {
		f := "expect.pubsub.subscribers[" + strconv.Itoa(i) + "]"
		if s.Subscriber < 0 || s.Subscriber >= n {
			return fieldErr(f+".subscriber", "must name a subscriber of workload.pubsub")
		}
		for j, o := range s.Outcomes {
			if !outcomeWords[o] {
				return fieldErr(f+".outcomes["+strconv.Itoa(j)+"]", "unknown outcome "+strconv.Quote(o))
			}
		}
		for j, o := range s.Ends {
			if !endWords[o] {
				return fieldErr(f+".ends["+strconv.Itoa(j)+"]", "unknown end reason "+strconv.Quote(o))
			}
		}
	}
	return nil
}

// validateSubscribeError checks a subscribe_error fault.
func (sc *Scenario) validateSubscribeError(field string, f *SubscribeErrorFault) error {
	if err := sc.validateTarget(field, &Target{Node: f.Node}, false); err != nil {
		return err
	}
	for j, k := range f.Kinds {
		if _, ok := topicKindOf(k); !ok || k == "" {
			return fieldErr(field+".kinds["+strconv.Itoa(j)+"]", "must be channel, pattern or shard")
		}
	}
	if f.Reply != "" {
		code, _, _ := strings.Cut(f.Reply, " ")
		if strings.ToUpper(code) != code || strings.ContainsAny(f.Reply, "\r\n") {
			return fieldErr(field+".reply", "must be an error reply starting with an upper-case code")
		}
	}
	if f.For != nil {
		return validateSpan(field+".for", f.For, true)
	}
	return nil
}

// clonePubSub deep-copies the pub/sub parts of sc into out.
func (sc *Scenario) clonePubSub(out *Scenario) {
	if ps := sc.Workload.PubSub; ps != nil {
		cp := *ps
		cp.Subscribers = make([]SubscriberSpec, len(ps.Subscribers))
		for i, s := range ps.Subscribers {
			s.Topics = cloneSlice(s.Topics)
			cp.Subscribers[i] = s
		}
		if p := ps.Publisher; p != nil {
			pc := *p
			pc.Channels = cloneSlice(p.Channels)
			pc.ShardChannels = cloneSlice(p.ShardChannels)
			cp.Publisher = &pc
		}
		out.Workload.PubSub = &cp
	}
	if e := sc.Expect.PubSub; e != nil {
		cp := PubSubExpect{Regular: e.Regular.clone(), Sharded: e.Sharded.clone()}
		for _, s := range e.Subscribers {
			s.Outcomes = cloneSlice(s.Outcomes)
			s.Ends = cloneSlice(s.Ends)
			s.Messages = s.Messages.clone()
			s.Gaps = s.Gaps.clone()
			s.ReceivesAfter = clonePtr(s.ReceivesAfter)
			cp.Subscribers = append(cp.Subscribers, s)
		}
		out.Expect.PubSub = &cp
	}
}

func (e *EpisodeExpect) clone() *EpisodeExpect {
	if e == nil {
		return nil
	}
	return &EpisodeExpect{Attempts: cloneSlice(e.Attempts), Delays: cloneSlice(e.Delays), Exhausted: clonePtr(e.Exhausted),
		Dials: e.Dials.clone(), Recovered: e.Recovered.clone()}
}

func (f *SubscribeErrorFault) clone() *SubscribeErrorFault {
	if f == nil {
		return nil
	}
	return &SubscribeErrorFault{Node: f.Node, For: clonePtr(f.For), Kinds: cloneSlice(f.Kinds), Reply: f.Reply}
}
