package node

import (
	"strings"

	"github.com/respire-go/respire/netio/resp"
)

// A replication group's replicas as a read router sees them (issue 17): besides ROLE and
// READONLY (sentinel.go), each data node of a group answers INFO (its server section with the
// availability zone, when set, and its replication section), CONFIG GET
// replica-serve-stale-data, and, as a replica, carries the state of its link to the primary.
// While the link is down the replica stops following: it serves the dataset as it was when the
// link went down (stale reads), or, with replica-serve-stale-data off, refuses data commands
// with MASTERDOWN. When the link comes back it takes the group's dataset again.

// replicaState is a data node's replication state as a replica.
type replicaState struct {
	// linkDown: the link to the primary is down; the node serves its own stale copy.
	linkDown bool
	// noServeStale: replica-serve-stale-data is off (default on, as in Redis).
	noServeStale bool
	// zone is the node's availability zone (INFO SERVER availability_zone), or "" for none.
	zone string
}

// linkState is the link state of a replica's ROLE reply.
func (r *replicaState) linkState() string {
	if r.linkDown {
		return "connect"
	}
	return "connected"
}

// replicaMasterDown is the error a replica with its link down and replica-serve-stale-data off
// answers data commands with.
const replicaMasterDown = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."

// copyDBs returns a deep copy of the group's dataset.
func (g *Group) copyDBs() [databases]map[string]*entry {
	var dbs [databases]map[string]*entry
	for i := range g.dbs {
		dbs[i] = make(map[string]*entry, len(g.dbs[i]))
		for k, e := range g.dbs[i] {
			c := *e
			c.val, c.prev = append([]byte(nil), e.val...), append([]byte(nil), e.prev...)
			dbs[i][k] = &c
		}
	}
	return dbs
}

// SetLink brings the link of n, a replica of the group, down or up. Down, n keeps a copy of the
// dataset as it is now and no longer follows the primary; up, it takes the group's dataset
// again. It reports false, changing nothing, for a node outside the group, the primary, a
// diverged node, or a link already in that state.
func (g *Group) SetLink(n *Node, up bool) bool {
	if n.sn == nil || n.sn.group != g || n.sn.sentinel || g.primary == n || n.sn.diverged || n.sn.replica.linkDown != up {
		return false
	}
	n.sn.replica.linkDown = !up
	if up {
		n.dbs = g.dbs
	} else {
		n.dbs = g.copyDBs()
	}
	return true
}

// SetServeStale sets replica-serve-stale-data on n, a data node of the group (on by default).
func (g *Group) SetServeStale(n *Node, serve bool) {
	if n.sn != nil && n.sn.group == g && !n.sn.sentinel {
		n.sn.replica.noServeStale = !serve
	}
}

// SetZone sets the availability zone n, a data node of the group, reports in INFO SERVER ("":
// none).
func (g *Group) SetZone(n *Node, zone string) {
	if n.sn != nil && n.sn.group == g && !n.sn.sentinel {
		n.sn.replica.zone = zone
	}
}

// LinkUp reports whether n follows its group's primary: the primary itself, or a replica whose
// link is up.
func (g *Group) LinkUp(n *Node) bool {
	return n.sn != nil && n.sn.group == g && !n.sn.replica.linkDown
}

// replicaIntercept answers, on a data node of a group, INFO, CONFIG GET
// replica-serve-stale-data, and MASTERDOWN for a data command while a replica's link is down
// and it does not serve stale data. It reports whether it answered.
func (n *Node) replicaIntercept(c *Conn, cmd command, known bool) bool {
	args, s := n.args, n.sn
	switch {
	case eqFold(args[0], "INFO"):
		n.reply(c, resp.BulkString(n.info()))
		return true
	case eqFold(args[0], "CONFIG") && len(args) == 3 && eqFold(args[1], "GET") &&
		(eqFold(args[2], "REPLICA-SERVE-STALE-DATA") || eqFold(args[2], "SLAVE-SERVE-STALE-DATA")):
		v := "yes"
		if s.replica.noServeStale {
			v = "no"
		}
		n.reply(c, resp.ArrayOf(resp.BulkString(strings.ToLower(string(args[2]))), resp.BulkString(v)))
		return true
	case known && sentinelDataCommands[cmd.name] && s.group.primary != n && !s.diverged &&
		s.replica.linkDown && s.replica.noServeStale:
		n.errorReply(c, replicaMasterDown)
		return true
	}
	return false
}

// info is the node's INFO reply: its server section (with availability_zone when set) and its
// replication section, whatever sections were asked for.
func (n *Node) info() string {
	s := n.sn
	var b strings.Builder
	b.WriteString("# Server\r\nredis_version:7.0.0\r\nredis_mode:standalone\r\nrun_id:")
	b.WriteString(n.RunID())
	b.WriteString("\r\n")
	if s.replica.zone != "" {
		b.WriteString("availability_zone:")
		b.WriteString(s.replica.zone)
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n# Replication\r\n")
	if s.group.primary == n || s.diverged {
		b.WriteString("role:master\r\n")
		return b.String()
	}
	link := "up"
	if s.replica.linkDown {
		link = "down"
	}
	b.WriteString("role:slave\r\nmaster_host:")
	b.WriteString(s.group.primary.id)
	b.WriteString("\r\nmaster_link_status:")
	b.WriteString(link)
	b.WriteString("\r\n")
	return b.String()
}
