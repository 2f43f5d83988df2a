package fsm

import (
	"strconv"
	"strings"
	"testing"
)

// parseClusterConfig reads a "config cluster" line: seeds=host:port,host:port slots=N
// policy=... interval=D candidate=D grace=D waiters=N.
func parseClusterConfig(t *testing.T, fields []string) ClusterConfig {
	cfg := ClusterConfig{Slots: 1, Pool: PoolConfig{MaximumIdle: 4}}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "seeds":
			for _, s := range strings.Split(v, ",") {
				cfg.Seeds = append(cfg.Seeds, parseEndpointArg(t, s))
			}
		case "slots":
			cfg.Slots = atoi(t, v)
		case "policy":
			cfg.Policy = parsePolicy(t, v)
		case "interval":
			cfg.RefreshInterval = dur(t, v)
		case "candidate":
			cfg.CandidateTimeout = dur(t, v)
		case "grace":
			cfg.RetiredGrace = dur(t, v)
		case "waiters":
			cfg.MaxWaiters = atoi(t, v)
		default:
			t.Fatalf("unknown cluster field %q", k)
		}
	}
	return cfg
}

func parseEndpointArg(t *testing.T, s string) Endpoint {
	ep, err := ParseEndpoint(s)
	if err != nil {
		t.Fatalf("bad endpoint %q: %v", s, err)
	}
	return ep
}

func parseMachineName(t *testing.T, s string) Machine {
	for m := MachineMux; m < Machines; m++ {
		if m.String() == s {
			return m
		}
	}
	t.Fatalf("unknown machine %q", s)
	return 0
}

// parseID reads an identifier in its printed form: "7", "dedicated#2", "cluster#3", "n2.5",
// "n2.dedicated#1".
func parseID(t *testing.T, s string) uint64 {
	if rest, ok := strings.CutPrefix(s, "n"); ok && strings.Contains(rest, ".") {
		node, id, _ := strings.Cut(rest, ".")
		m := MachineNodeMux
		if after, ok := strings.CutPrefix(id, "dedicated#"); ok {
			m, id = MachineNodePool, after
		}
		return NodeIDBase(m, uint32(atoi(t, node))) + uint64(atoi(t, id))
	}
	if name, id, ok := strings.Cut(s, "#"); ok {
		for m := MachineMux; m < Machines; m++ {
			if idPrefixes[m] == name && name != "" {
				return IDBase(m) + uint64(atoi(t, id))
			}
		}
		t.Fatalf("unknown id %q", s)
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// parseReply reads a CLUSTER SLOTS reply written compactly: shards separated by ';', each
// "first-last:primary,replica,..." (or ":primary" for a shard without slots), each node
// "id@host:port". "empty" is a reply covering nothing.
func parseReply(t *testing.T, s string) *TopologyReply {
	r := &TopologyReply{Query: QueryClusterSlots}
	if s == "empty" {
		return r
	}
	for _, shard := range strings.Split(s, ";") {
		ranges, nodes, ok := strings.Cut(shard, ":")
		if !ok {
			t.Fatalf("bad shard %q", shard)
		}
		var sh ReplyShard
		if ranges != "" {
			for _, rg := range strings.Split(ranges, "+") {
				a, b, _ := strings.Cut(rg, "-")
				if b == "" {
					b = a
				}
				sh.Ranges = append(sh.Ranges, SlotRange{First: uint16(atoi(t, a)), Last: uint16(atoi(t, b))})
			}
		}
		for i, n := range strings.Split(nodes, ",") {
			id, addr, _ := strings.Cut(n, "@")
			node := Node{ID: NodeID(id), Addr: parseEndpointArg(t, addr), Role: RolePrimary}
			if i > 0 {
				node.Role, node.Primary = RoleReplica, sh.Nodes[0].ID
			}
			sh.Nodes = append(sh.Nodes, node)
		}
		r.Shards = append(r.Shards, sh)
	}
	return r
}
