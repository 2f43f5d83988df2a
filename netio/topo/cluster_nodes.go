package topo

import (
	"strings"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// ParseClusterNodes parses a CLUSTER NODES reply: a bulk string in RESP2, a verbatim string in
// RESP3. See ParseClusterNodesText for the format and the errors; an error reply gives a
// *TopologyRejectedError.
func ParseClusterNodes(v resp.Value, asked fsm.Endpoint) (fsm.TopologyReply, error) {
	const q = fsm.QueryClusterNodes
	if err := rejected(q, &v); err != nil {
		return fsm.TopologyReply{}, err
	}
	s, ok := text(&v)
	if !ok {
		return fsm.TopologyReply{}, &ReplyError{Command: q.String(), Reason: "not a string"}
	}
	return ParseClusterNodesText(s, asked)
}

// ParseClusterNodesText parses the text of a CLUSTER NODES reply. asked is the endpoint the query
// was sent to: the answering node ("myself") shows an empty address until it learns its own, and
// is then on that host. Each line describes one node:
//
//	<id> <ip:port@cport[,hostname[,key=value...]]> <flags> <primary id or -> <ping-sent> <pong-recv> <config-epoch> <link-state> <slot>...
//
// The address may be an IPv6 address, with or without brackets. Redis 7.0 appends the announced
// host name after a comma, Redis 7.2 may leave it empty and add auxiliary fields such as
// "shard-id=..." after further commas; only the host name is kept. Flags are myself, master,
// slave, fail?, fail, handshake, noaddr, nofailover and noflags; unknown ones are ignored. A slot
// is "N" or "N-M"; "[N->-id]" and "[N-<-id]" are slots the answering node is migrating or
// importing, reported in Migrations.
//
// Nodes in handshake are left out: their IDs are temporary. A node flagged noaddr has no
// endpoint. Replicas whose primary is not listed form shards without a primary.
//
// The reply must have exactly one line flagged myself: a reply without the answering node cannot
// be a whole CLUSTER NODES reply. Other faults, and replies breaking a rule of
// fsm.TopologyReply.Validate, give a *ReplyError too.
func ParseClusterNodesText(s string, asked fsm.Endpoint) (fsm.TopologyReply, error) {
	const q = fsm.QueryClusterNodes
	fail := func(where, reason string) (fsm.TopologyReply, error) {
		return fsm.TopologyReply{}, &ReplyError{Command: q.String(), Where: where, Reason: reason}
	}
	if strings.Count(s, "\n") > fsm.MaxTopologyNodes {
		return fail("", "more than 4096 lines")
	}
	r := fsm.TopologyReply{Query: q}
	var primaries, replicas []nodesLine
	for i, line := 0, ""; s != ""; i++ {
		line, s, _ = strings.Cut(s, "\n")
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			continue
		}
		l, reason := parseNodesLine(line, asked)
		if reason != "" {
			return fail(where("line", i+1), "bad "+reason)
		}
		if l.self {
			if r.Self != "" {
				return fail(where("line", i+1), "a second node flagged myself")
			}
			r.Self = l.node.ID
			r.Migrations = l.migrations
		}
		switch {
		case l.handshake:
		case l.node.Role == fsm.RoleReplica:
			if len(l.ranges) > 0 {
				return fail(where("line", i+1), "a replica serves slots")
			}
			replicas = append(replicas, l)
		default:
			primaries = append(primaries, l)
		}
	}
	if r.Self == "" {
		return fail("", "no node flagged myself")
	}
	shardOf := make(map[fsm.NodeID]int, len(primaries))
	for _, p := range primaries {
		shardOf[p.node.ID] = len(r.Shards)
		r.Shards = append(r.Shards, fsm.ReplyShard{Ranges: p.ranges, Nodes: []fsm.Node{p.node}})
	}
	orphans := make(map[fsm.NodeID]int)
	for _, l := range replicas {
		k, ok := shardOf[l.node.Primary]
		if !ok {
			// The primary is not listed (or is in handshake): a shard of its own, shared with
			// the other replicas of the same unknown primary.
			if k, ok = orphans[l.node.Primary]; !ok {
				k = len(r.Shards)
				orphans[l.node.Primary] = k
				r.Shards = append(r.Shards, fsm.ReplyShard{})
			}
		}
		r.Shards[k].Nodes = append(r.Shards[k].Nodes, l.node)
	}
	return finish(r)
}

// nodesLine is one parsed line of CLUSTER NODES.
type nodesLine struct {
	node       fsm.Node
	self       bool
	handshake  bool
	ranges     []fsm.SlotRange
	migrations []fsm.SlotMigration
}

// parseNodesLine parses one line, or names the field at fault.
func parseNodesLine(line string, asked fsm.Endpoint) (l nodesLine, fault string) {
	f := strings.Split(line, " ")
	if len(f) < 8 {
		return l, "fields"
	}
	if !validNodeID(f[0]) {
		return l, "node ID"
	}
	l.node.ID = fsm.NodeID(f[0])

	var noaddr, failed, suspect bool
	for _, flag := range strings.Split(f[2], ",") {
		switch flag {
		case "myself":
			l.self = true
		case "master":
			l.node.Role = fsm.RolePrimary
		case "slave":
			l.node.Role = fsm.RoleReplica
		case "fail":
			failed = true
		case "fail?":
			suspect = true
		case "handshake":
			l.handshake = true
		case "noaddr":
			noaddr = true
		case "":
			return l, "flags"
		}
	}
	if l.node.Role == fsm.RoleUnknown {
		l.node.Role = fsm.RolePrimary // a node that is neither (noflags) serves no slot yet
	}

	if reason := parseNodesAddress(f[1], &l, noaddr, asked); reason != "" {
		return l, "address"
	}

	switch {
	case f[3] == "-":
	case validNodeID(f[3]):
		if l.node.Role == fsm.RoleReplica {
			l.node.Primary = fsm.NodeID(f[3])
		}
	default:
		return l, "primary ID"
	}
	for _, n := range f[4:7] {
		if !allDigits(n) {
			return l, "ping, pong or epoch"
		}
	}
	switch f[7] {
	case "connected":
		l.node.Health = fsm.HealthOnline
	case "disconnected":
	default:
		return l, "link state"
	}
	switch {
	case failed:
		l.node.Health = fsm.HealthFailed
	case suspect:
		l.node.Health = fsm.HealthSuspect
	}

	for _, s := range f[8:] {
		if s == "" {
			return l, "slot"
		}
		if s[0] == '[' {
			m, ok := parseMigration(s)
			if !ok {
				return l, "slot migration"
			}
			if l.self {
				l.migrations = append(l.migrations, m)
			}
			continue
		}
		firstText, lastText, isRange := strings.Cut(s, "-")
		first, ok1 := parseSlot([]byte(firstText))
		last := first
		ok2 := true
		if isRange {
			last, ok2 = parseSlot([]byte(lastText))
		}
		if !ok1 || !ok2 || last < first {
			return l, "slot"
		}
		l.ranges = append(l.ranges, fsm.SlotRange{First: first, Last: last})
	}
	return l, ""
}

// parseNodesAddress parses "ip:port@cport[,hostname[,key=value...]]" into l.node. A noaddr node
// gets no endpoint; the answering node with an empty address is on asked's host.
func parseNodesAddress(field string, l *nodesLine, noaddr bool, asked fsm.Endpoint) string {
	addr, rest, _ := strings.Cut(field, ",")
	hostname, aux, _ := strings.Cut(rest, ",")
	for aux != "" {
		var kv string
		kv, aux, _ = strings.Cut(aux, ",")
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return "auxiliary field"
		}
	}
	addr, cport, hasBus := strings.Cut(addr, "@")
	if hasBus {
		if _, ok := parseDecimal(cport, 65535); !ok {
			return "bus port"
		}
	}
	colon := strings.LastIndexByte(addr, ':')
	if colon < 0 {
		return "port"
	}
	port, ok := parseDecimal(addr[colon+1:], 65535)
	if !ok {
		return "port"
	}
	info := endpointInfo{ip: addr[:colon], hostname: hostname, port: port, preferredAbsent: true}
	if info.ip == "" && l.self {
		info.ip = asked.Host
	}
	if reason := info.resolve(&l.node, asked); reason != "" {
		return reason
	}
	if noaddr {
		l.node.Addr, l.node.IP = fsm.Endpoint{}, ""
	}
	return ""
}

// parseMigration parses "[slot->-id]" (migrating to id) or "[slot-<-id]" (importing from id).
func parseMigration(s string) (fsm.SlotMigration, bool) {
	var m fsm.SlotMigration
	if len(s) < 2 || s[len(s)-1] != ']' {
		return m, false
	}
	s = s[1 : len(s)-1]
	slot, peer, ok := strings.Cut(s, "->-")
	if !ok {
		slot, peer, ok = strings.Cut(s, "-<-")
		m.Importing = true
	}
	n, okSlot := parseSlot([]byte(slot))
	if !ok || !okSlot || !validNodeID(peer) {
		return m, false
	}
	m.Slot, m.Peer = n, fsm.NodeID(peer)
	return m, true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
