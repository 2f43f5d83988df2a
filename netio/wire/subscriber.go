package wire

import (
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

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
