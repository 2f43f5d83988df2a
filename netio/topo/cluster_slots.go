package topo

import (
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// ParseClusterSlots parses a CLUSTER SLOTS reply, in RESP2 or RESP3. asked is the endpoint the
// query was sent to: a node whose preferred endpoint is null or empty is on that host.
//
// The reply is an array of slot ranges, each [first, last, primary, replica...], each node
// [preferred endpoint, port, node ID, networking metadata]. The metadata, a map in RESP3 and an
// array of alternating names and values in RESP2 (Redis 7.0 and later), gives the announced "ip"
// and "hostname" that are not the preferred endpoint. A node ID is required (Redis sends it since
// 4.0); unknown metadata and extra node fields are ignored. Ranges of one primary are gathered
// into one shard.
//
// A reply that is not of this shape, or that breaks a rule of fsm.TopologyReply.Validate, gives
// a *ReplyError. An error reply gives a *TopologyRejectedError. An empty array is a valid reply
// covering no slot, which fsm.Topology.Apply ignores.
func ParseClusterSlots(v resp.Value, asked fsm.Endpoint) (fsm.TopologyReply, error) {
	const q = fsm.QueryClusterSlots
	if err := rejected(q, &v); err != nil {
		return fsm.TopologyReply{}, err
	}
	fail := func(where, reason string) (fsm.TopologyReply, error) {
		return fsm.TopologyReply{}, &ReplyError{Command: q.String(), Where: where, Reason: reason}
	}
	if v.Kind != resp.KindArray {
		return fail("", "not an array")
	}
	entries := elems(&v)
	if len(entries) > fsm.SlotCount {
		return fail("", "more slot ranges than slots")
	}
	r := fsm.TopologyReply{Query: q}
	shardOf := make(map[fsm.NodeID]int) // primary ID -> index in r.Shards
	nodes := 0                          // distinct nodes gathered so far
	for i := range entries {
		e := &entries[i]
		parts := elems(e)
		if e.Kind != resp.KindArray || len(parts) < 3 {
			return fail(where("entry", i), "not an array of a range and at least one node")
		}
		first, ok1 := integer(&parts[0])
		last, ok2 := integer(&parts[1])
		if !ok1 || !ok2 || first < 0 || last < first || last >= fsm.SlotCount {
			return fail(where("entry", i), "slot range is not two integers within 0 to 16383 in order")
		}
		var sh *fsm.ReplyShard
		for j := 2; j < len(parts); j++ {
			n, reason := slotsNode(&parts[j], asked)
			if reason != "" {
				return fail(where("entry", i, "node", j-2), reason)
			}
			if j == 2 {
				n.Role = fsm.RolePrimary
				k, seen := shardOf[n.ID]
				if !seen {
					if nodes++; nodes > fsm.MaxTopologyNodes {
						return fail("", "more than 4096 nodes")
					}
					k = len(r.Shards)
					shardOf[n.ID] = k
					r.Shards = append(r.Shards, fsm.ReplyShard{Nodes: []fsm.Node{n}})
				}
				sh = &r.Shards[k]
				sh.Ranges = append(sh.Ranges, fsm.SlotRange{First: uint16(first), Last: uint16(last)})
				continue
			}
			n.Role, n.Primary = fsm.RoleReplica, sh.Nodes[0].ID
			if !hasNode(sh.Nodes, n.ID) {
				if nodes++; nodes > fsm.MaxTopologyNodes {
					return fail("", "more than 4096 nodes")
				}
				sh.Nodes = append(sh.Nodes, n)
			}
		}
	}
	return finish(r)
}

// slotsNode parses one node of a CLUSTER SLOTS range, or says what is wrong with it.
func slotsNode(v *resp.Value, asked fsm.Endpoint) (fsm.Node, string) {
	var n fsm.Node
	fields := elems(v)
	if v.Kind != resp.KindArray || len(fields) < 3 {
		return n, "not an array of an endpoint, a port and a node ID"
	}
	var info endpointInfo
	switch host := &fields[0]; {
	case host.IsNull():
		info.preferredNull = true
	default:
		s, ok := text(host)
		if !ok {
			return n, "endpoint is not a string"
		}
		info.preferred = s
	}
	port, ok := integer(&fields[1])
	if !ok {
		return n, "port is not an integer"
	}
	info.port = port
	id, ok := text(&fields[2])
	if !ok || !validNodeID(id) {
		return n, "node ID is not 40 hexadecimal digits"
	}
	n.ID = fsm.NodeID(id)
	if len(fields) > 3 {
		kv, ok := pairs(&fields[3])
		if !ok {
			return n, "networking metadata is not a map"
		}
		for k := 0; k < len(kv); k += 2 {
			switch {
			case isText(&kv[k], "ip"):
				info.ip, ok = text(&kv[k+1])
			case isText(&kv[k], "hostname"):
				info.hostname, ok = text(&kv[k+1])
			}
			if !ok {
				return n, "networking metadata value is not a string"
			}
		}
	}
	if reason := info.resolve(&n, asked); reason != "" {
		return n, reason
	}
	return n, ""
}

func hasNode(nodes []fsm.Node, id fsm.NodeID) bool {
	for i := range nodes {
		if nodes[i].ID == id {
			return true
		}
	}
	return false
}
