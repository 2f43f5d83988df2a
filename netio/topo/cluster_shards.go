package topo

import (
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// ParseClusterShards parses a CLUSTER SHARDS reply (Redis 7.0 and later), in RESP2 or RESP3.
// asked is the endpoint the query was sent to: a node whose endpoint is null or empty is on
// that host.
//
// The reply is an array of shards, each a map (an array of alternating names and values in
// RESP2) with "slots", a flat array of first and last slots, and "nodes", an array of node maps
// with "id", "port" (or "tls-port" when "port" is 0), "ip", "endpoint", "hostname", "role"
// ("master" or "replica") and "health" ("online", "failed" or "loading"). Unknown names are
// ignored. A node ID and a role are required.
//
// Errors are as for ParseClusterSlots.
func ParseClusterShards(v resp.Value, asked fsm.Endpoint) (fsm.TopologyReply, error) {
	const q = fsm.QueryClusterShards
	if err := rejected(q, &v); err != nil {
		return fsm.TopologyReply{}, err
	}
	fail := func(where, reason string) (fsm.TopologyReply, error) {
		return fsm.TopologyReply{}, &ReplyError{Command: q.String(), Where: where, Reason: reason}
	}
	if v.Kind != resp.KindArray {
		return fail("", "not an array")
	}
	r := fsm.TopologyReply{Query: q}
	nodes := 0
	shards := elems(&v)
	for i := range shards {
		kv, ok := pairs(&shards[i])
		if !ok {
			return fail(where("shard", i), "not a map")
		}
		var sh fsm.ReplyShard
		for k := 0; k < len(kv); k += 2 {
			switch val := &kv[k+1]; {
			case isText(&kv[k], "slots"):
				ranges := elems(val)
				if val.Kind != resp.KindArray || len(ranges)%2 != 0 {
					return fail(where("shard", i, "slots"), "not an array of first and last slots")
				}
				if len(ranges) > 2*fsm.SlotCount {
					return fail(where("shard", i, "slots"), "more ranges than slots")
				}
				for s := 0; s < len(ranges); s += 2 {
					first, ok1 := integer(&ranges[s])
					last, ok2 := integer(&ranges[s+1])
					if !ok1 || !ok2 || first < 0 || last < first || last >= fsm.SlotCount {
						return fail(where("shard", i, "slots"), "slot range is not two integers within 0 to 16383 in order")
					}
					sh.Ranges = append(sh.Ranges, fsm.SlotRange{First: uint16(first), Last: uint16(last)})
				}
			case isText(&kv[k], "nodes"):
				if val.Kind != resp.KindArray {
					return fail(where("shard", i, "nodes"), "not an array")
				}
				list := elems(val)
				if nodes += len(list); nodes > fsm.MaxTopologyNodes {
					return fail("", "more than 4096 nodes")
				}
				for j := range list {
					n, reason := shardsNode(&list[j], asked)
					if reason != "" {
						return fail(where("shard", i, "node", j), reason)
					}
					sh.Nodes = append(sh.Nodes, n)
				}
			}
		}
		primary := fsm.NodeID("")
		for j := range sh.Nodes {
			if sh.Nodes[j].Role == fsm.RolePrimary {
				if primary != "" {
					return fail(where("shard", i), "two masters")
				}
				primary = sh.Nodes[j].ID
			}
		}
		for j := range sh.Nodes {
			if sh.Nodes[j].Role == fsm.RoleReplica {
				sh.Nodes[j].Primary = primary
			}
		}
		if len(sh.Nodes) > 0 || len(sh.Ranges) > 0 {
			r.Shards = append(r.Shards, sh)
		}
	}
	return finish(r)
}

// shardsNode parses one node map of a CLUSTER SHARDS shard, or says what is wrong with it.
func shardsNode(v *resp.Value, asked fsm.Endpoint) (fsm.Node, string) {
	var n fsm.Node
	kv, ok := pairs(v)
	if !ok {
		return n, "not a map"
	}
	info := endpointInfo{preferredAbsent: true}
	var id, role, health string
	var port, tlsPort int64
	for k := 0; k < len(kv); k += 2 {
		key, val := &kv[k], &kv[k+1]
		ok := true
		switch {
		case isText(key, "id"):
			id, ok = text(val)
		case isText(key, "port"):
			port, ok = integer(val)
		case isText(key, "tls-port"):
			tlsPort, ok = integer(val)
		case isText(key, "ip"):
			info.ip, ok = text(val)
		case isText(key, "hostname"):
			info.hostname, ok = text(val)
		case isText(key, "endpoint"):
			info.preferredAbsent = false
			if val.IsNull() {
				info.preferredNull = true
			} else {
				info.preferred, ok = text(val)
			}
		case isText(key, "role"):
			role, ok = text(val)
		case isText(key, "health"):
			health, ok = text(val)
		}
		if !ok {
			return n, "a field has the wrong type"
		}
	}
	if !validNodeID(id) {
		return n, "node ID is not 40 hexadecimal digits"
	}
	n.ID = fsm.NodeID(id)
	switch role {
	case "master":
		n.Role = fsm.RolePrimary
	case "replica", "slave":
		n.Role = fsm.RoleReplica
	default:
		return n, "role is neither master nor replica"
	}
	switch health {
	case "online":
		n.Health = fsm.HealthOnline
	case "loading":
		n.Health = fsm.HealthLoading
	case "fail", "failed":
		n.Health = fsm.HealthFailed
	}
	info.port = port
	if port == 0 {
		info.port = tlsPort
	}
	if reason := info.resolve(&n, asked); reason != "" {
		return n, reason
	}
	return n, ""
}
