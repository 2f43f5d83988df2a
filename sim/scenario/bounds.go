package scenario

import (
	"strconv"
	"time"
)

// Bounds of the numeric fields that size what a run allocates or how long it runs. Validate
// checks each one before anything is built from it, and names the field when one is exceeded.
// The client section's fields have the client's own bounds (engine/config): connections at most
// 1024, for example.
const (
	// MaxDuration bounds duration: a year of virtual time.
	MaxDuration = 365 * 24 * time.Hour
	// MaxFaults bounds the entries of faults.
	MaxFaults = 1_000_000
	// MaxLatency bounds network.latency, network.jitter and a delay fault's extra.
	MaxLatency = time.Hour
	// MaxSendBuffer bounds network.send_buffer (1 GiB).
	MaxSendBuffer = 1 << 30
	// MaxMaxWaiters bounds client.max_waiters.
	MaxMaxWaiters = 1 << 24
	// MaxCallers bounds workload.callers and workload.dedicated.renters.
	MaxCallers = 100_000
	// MaxKeys bounds workload.keys, workload.counters, workload.dedicated.lists and
	// workload.dedicated.keys.
	MaxKeys = 1_000_000
	// MaxRate bounds every rate: one million operations per virtual second.
	MaxRate = 1_000_000
	// MaxWeight bounds each weight of a mix.
	MaxWeight = 1_000_000
	// MaxSubscriptionBuffer bounds workload.pubsub.buffer, which each subscriber allocates.
	MaxSubscriptionBuffer = 1 << 20
	// MaxSubscribers bounds workload.pubsub.subscribers.
	MaxSubscribers = 10_000
	// MaxTopics bounds the topics of one subscriber, and the publisher's channels.
	MaxTopics = 10_000
	// MaxBytes bounds a drop_after_bytes fault's bytes (1 TiB).
	MaxBytes = 1 << 40
)

// numericBound is one bounded field: its path, its value and its limit.
type numericBound struct {
	field string
	value float64
	limit float64
	text  string
}

// validateBounds reports the first numeric field above its bound. It runs before the rest of
// Validate, and so before a run allocates anything from these values.
func (sc *Scenario) validateBounds() error {
	count := func(field string, v, limit int) numericBound {
		return numericBound{field, float64(v), float64(limit), strconv.Itoa(limit)}
	}
	dur := func(field string, v, limit time.Duration) numericBound {
		return numericBound{field, float64(v), float64(limit), limit.String()}
	}
	rate := func(field string, v Rate) numericBound {
		return numericBound{field, float64(v), MaxRate, strconv.Itoa(MaxRate) + "/s"}
	}
	w := &sc.Workload
	m := w.Mix
	list := []numericBound{
		dur("duration", sc.Duration, MaxDuration),
		count("faults", len(sc.Faults), MaxFaults),
		dur("network.latency", sc.Network.Latency, MaxLatency),
		dur("network.jitter", sc.Network.Jitter, MaxLatency),
		count("network.send_buffer", sc.Network.SendBuffer, MaxSendBuffer),
		count("client.max_waiters", sc.Client.MaxWaiters, MaxMaxWaiters),
		count("workload.callers", w.Callers, MaxCallers),
		rate("workload.rate", w.Rate),
		count("workload.keys", w.Keys, MaxKeys),
		count("workload.counters", w.Counters, MaxKeys),
		count("workload.mix.get", m.Get, MaxWeight),
		count("workload.mix.set", m.Set, MaxWeight),
		count("workload.mix.del", m.Del, MaxWeight),
		count("workload.mix.incr", m.Incr, MaxWeight),
		count("workload.mix.mget", m.MGet, MaxWeight),
		count("workload.mix.mset", m.MSet, MaxWeight),
	}
	if v := w.View; v != nil {
		list = append(list, count("workload.view.callers", v.Callers, MaxCallers))
	}
	if d := w.Dedicated; d != nil {
		dm := d.Mix
		list = append(list,
			count("workload.dedicated.renters", d.Renters, MaxCallers),
			rate("workload.dedicated.rate", d.Rate),
			count("workload.dedicated.lists", d.Lists, MaxKeys),
			count("workload.dedicated.keys", d.Keys, MaxKeys),
			count("workload.dedicated.mix.blpop", dm.BLPop, MaxWeight),
			count("workload.dedicated.mix.brpop", dm.BRPop, MaxWeight),
			count("workload.dedicated.mix.push", dm.Push, MaxWeight),
			count("workload.dedicated.mix.tx", dm.Tx, MaxWeight),
			count("workload.dedicated.mix.xread", dm.XRead, MaxWeight),
		)
	}
	if b := w.Batches; b != nil {
		list = append(list,
			count("workload.batches.batchers", b.Batchers, MaxCallers),
			rate("workload.batches.rate", b.Rate),
			count("workload.batches.size", b.Size, MaxBatchSize),
			count("workload.batches.pipeline", b.Pipeline, MaxWeight),
			count("workload.batches.atomic", b.Atomic, MaxWeight),
		)
	}
	if ps := w.PubSub; ps != nil {
		list = append(list,
			count("workload.pubsub.buffer", ps.Buffer, MaxSubscriptionBuffer),
			count("workload.pubsub.subscribers", len(ps.Subscribers), MaxSubscribers))
		for i, s := range ps.Subscribers {
			list = append(list, count("workload.pubsub.subscribers["+strconv.Itoa(i)+"].topics", len(s.Topics), MaxTopics))
		}
		if p := ps.Publisher; p != nil {
			list = append(list,
				rate("workload.pubsub.publisher.rate", p.Rate),
				count("workload.pubsub.publisher.channels", len(p.Channels), MaxTopics),
				count("workload.pubsub.publisher.shard_channels", len(p.ShardChannels), MaxTopics))
		}
	}
	for _, b := range list {
		if b.value > b.limit {
			return fieldErr(b.field, "must be at most "+b.text)
		}
	}
	total := 0
	for i := range sc.Faults {
		f := &sc.Faults[i]
		base := "faults[" + strconv.Itoa(i) + "]"
		total++
		if f.Every != nil && f.Every.Min > 0 && f.At.Min < sc.Duration {
			// The most starts the entry can expand to: Count, or one per cycle until the end.
			reps := int64((sc.Duration-f.At.Min-1)/f.Every.Min) + 1
			if f.Count > 0 {
				reps = min(reps, int64(f.Count))
			}
			if int64(total)+reps-1 > MaxFaults {
				return fieldErr(base+".every", "repeats the fault up to "+strconv.FormatInt(reps, 10)+
					" times: the timeline may hold at most "+strconv.Itoa(MaxFaults)+" faults in all")
			}
			total += int(reps) - 1
		}
		switch {
		case f.Delay != nil && f.Delay.Extra.Max > MaxLatency:
			return fieldErr(base+".delay.extra", "must be at most "+MaxLatency.String())
		case f.SlowReply != nil && f.SlowReply.Extra.Max > MaxLatency:
			return fieldErr(base+".slow_reply.extra", "must be at most "+MaxLatency.String())
		case f.DropAfterBytes != nil && f.DropAfterBytes.Bytes.Max > MaxBytes:
			return fieldErr(base+".drop_after_bytes.bytes", "must be at most "+strconv.Itoa(MaxBytes))
		}
	}
	return nil
}
