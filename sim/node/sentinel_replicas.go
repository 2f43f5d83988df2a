package node

import (
	"strconv"

	"github.com/respire-go/respire/netio/resp"
)

// SENTINEL REPLICAS (issue 17): a Sentinel that knows the replication group it monitors names
// the group's replicas as its view has them: every data node of the group except the view's
// primary. So a Sentinel whose view is stale keeps naming a promoted replica as a replica, as a
// real one does between gossip rounds. A node that is down (killed) carries the s_down flag at
// once (a real Sentinel waits down-after-milliseconds); a replica whose link to its primary is
// down reports master-link-status err.

// SetSentinelGroup gives the Sentinel n the replication group it monitors, which SENTINEL
// REPLICAS lists. Without one, the Sentinel answers it with no replicas. It does nothing on
// other nodes.
func (n *Node) SetSentinelGroup(g *Group) {
	if n.sn != nil && n.sn.sentinel {
		n.sn.monitored = g
	}
}

// replicasReply is a Sentinel's SENTINEL REPLICAS reply: one record per replica of its view.
func (s *sentinelRole) replicasReply() resp.Value {
	var recs []resp.Value
	if g := s.monitored; g != nil {
		port := strconv.Itoa(g.port)
		for _, r := range g.nodes {
			if r.id == s.view.Primary {
				continue
			}
			flags, link := "slave", "ok"
			if r.down {
				flags += ",s_down"
			}
			if r.sn != nil && r.sn.replica.linkDown {
				link = "err"
			}
			recs = append(recs, fields("name", s.addrOfNode(r.id)+":"+port, "ip", s.addrOfNode(r.id), "port", port,
				"runid", NodeID(r.id), "flags", flags, "master-link-status", link, "master-host", s.primaryAddr(),
				"master-port", port, "slave-priority", "100", "slave-repl-offset", "0"))
		}
	}
	return resp.ArrayOf(recs...)
}

// addrOfNode is the address a Sentinel announces for data node id.
func (s *sentinelRole) addrOfNode(id string) string {
	if s.addrOf != nil {
		return s.addrOf(id)
	}
	return id
}
