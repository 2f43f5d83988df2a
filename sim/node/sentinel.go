package node

import (
	"strconv"

	"github.com/respire-go/respire/netio/resp"
)

// Simulated Redis Sentinel: a replication group of data nodes (one primary, replicas) and
// Sentinels, each with its OWN view of the group's primary and configuration epoch, as real
// Sentinels have between gossip rounds. Nothing keeps the views in step: the world changes them
// (a failover updates some or all of them, each after its own delay), so a stale Sentinel keeps
// naming an old primary.
//
// Data nodes answer ROLE (master or slave) and a replica answers writes READONLY. Replication is
// synchronous: the group's nodes share one dataset, so a promotion loses no acknowledged write.
//
// A Sentinel answers SENTINEL GET-MASTER-ADDR-BY-NAME, SENTINEL MASTER (with its config-epoch),
// SENTINEL SENTINELS and ROLE from its view, refuses data commands, and publishes +switch-master,
// +sdown and +odown to its subscribers (SUBSCRIBE works as on any node).

// Group is a replication group of data nodes: one primary and its replicas.
type Group struct {
	port    int
	primary *Node
	nodes   []*Node
	dbs     [databases]map[string]*entry
}

// NewGroup makes primary and replicas one replication group whose nodes listen on port. The
// primary's dataset becomes the group's.
func NewGroup(port int, primary *Node, replicas []*Node) *Group {
	g := &Group{port: port, primary: primary, dbs: primary.dbs}
	for _, n := range append([]*Node{primary}, replicas...) {
		g.nodes = append(g.nodes, n)
		n.sn = &sentinelRole{group: g}
		n.dbs = g.dbs
	}
	return g
}

// Primary returns the group's primary.
func (g *Group) Primary() *Node { return g.primary }

// Promote makes n, a node of the group, its primary; the old primary becomes a replica (its
// writes answer READONLY). A diverged n rejoins first (being promoted, it learnt the
// configuration). It reports false, changing nothing, for a node outside the group or the
// primary itself.
func (g *Group) Promote(n *Node) bool {
	if n.sn == nil || n.sn.group != g || g.primary == n {
		return false
	}
	g.Rejoin(n, 0)
	g.SetLink(n, true)
	g.primary = n
	return true
}

// Diverge cuts n, the primary, off from the group before a failover: it keeps its own copy of
// the dataset and keeps acting as a primary (ROLE master, writes accepted) until Rejoin, as an
// old primary on the minority side of a partition does. It returns the divergence's number,
// which Rejoin takes.
func (g *Group) Diverge(n *Node) uint64 {
	if n.sn == nil || n.sn.group != g {
		return 0
	}
	n.sn.diverged = true
	n.sn.divergence++
	n.dbs = g.copyDBs()
	return n.sn.divergence
}

// Rejoin ends n's divergence number seq (0: whichever is under way): it takes the group's
// dataset again, discarding what it wrote on its own copy, and follows the group's primary. It
// reports whether that divergence was under way.
func (g *Group) Rejoin(n *Node, seq uint64) bool {
	if n.sn == nil || n.sn.group != g || !n.sn.diverged || (seq != 0 && seq != n.sn.divergence) {
		return false
	}
	n.sn.diverged = false
	n.dbs = g.dbs
	return true
}

// Port returns the port of the group's nodes.
func (g *Group) Port() int { return g.port }

// SentinelView is what one Sentinel believes: the primary's host and configuration epoch.
// InFailover marks the view of a Sentinel leading a failover between the promotion and the
// switch: as a real Sentinel does, it already gives the new epoch but still the old primary's
// host, and SENTINEL MASTER lists failover_in_progress among the flags.
type SentinelView struct {
	Primary    string
	Epoch      uint64
	InFailover bool
}

// sentinelRole is a node's part in a Sentinel deployment: a data node's group, or a Sentinel's
// view.
type sentinelRole struct {
	group *Group
	// diverged: a data node cut off from its group, acting as a primary on its own dataset;
	// divergence numbers its divergences.
	diverged   bool
	divergence uint64
	// A Sentinel's monitored name, its view, its port, and its peers (the other Sentinels'
	// hosts, in declaration order).
	sentinel bool
	name     string
	view     SentinelView
	port     int
	peers    []string
	// noEpoch: SENTINEL MASTER is refused (NOPERM), as for a user without the permission.
	noEpoch bool
	// addrOf, on a Sentinel, maps a data node's id to the address it announces (address.go).
	addrOf func(id string) string
	// replica is a data node's replication state as a replica sees it (replica.go).
	replica replicaState
	// monitored, on a Sentinel, is the group SENTINEL REPLICAS lists (sentinel_replicas.go).
	monitored *Group
}

// MakeSentinel makes n a Sentinel listening on port, monitoring the primary named name, with
// view, and peers the other Sentinels' hosts.
func (n *Node) MakeSentinel(name string, port int, view SentinelView, peers []string) {
	n.sn = &sentinelRole{sentinel: true, name: name, view: view, port: port, peers: append([]string(nil), peers...)}
}

// SetSentinelNoEpoch makes a Sentinel refuse SENTINEL MASTER with NOPERM (no config-epoch).
func (n *Node) SetSentinelNoEpoch(deny bool) {
	if n.sn != nil && n.sn.sentinel {
		n.sn.noEpoch = deny
	}
}

// SentinelView returns a Sentinel's view (the zero view for other nodes).
func (n *Node) SentinelView() SentinelView {
	if n.sn == nil || !n.sn.sentinel {
		return SentinelView{}
	}
	return n.sn.view
}

// UpdateSentinel sets a Sentinel's view to v. When the primary changes and publish is set, the
// Sentinel announces it on +switch-master to its subscribers, as a Sentinel that completed or
// learned a failover does. A killed Sentinel keeps its view: it announces nothing.
func (n *Node) UpdateSentinel(v SentinelView, publish bool) {
	if n.sn == nil || !n.sn.sentinel {
		return
	}
	old := n.sn.view
	n.sn.view = v
	if publish && old.Primary != v.Primary && !n.down {
		p := strconv.Itoa(n.sn.primaryPort())
		n.Announce("+switch-master", n.sn.name+" "+old.Primary+" "+p+" "+v.Primary+" "+p)
	}
}

// SentinelDown makes a Sentinel announce that it sees the primary of its view down: +sdown,
// then +odown with the quorum reached.
func (n *Node) SentinelDown() {
	if n.sn == nil || !n.sn.sentinel || n.down {
		return
	}
	inst := "master " + n.sn.name + " " + n.sn.view.Primary + " " + strconv.Itoa(n.sn.primaryPort())
	n.Announce("+sdown", inst)
	n.Announce("+odown", inst+" #quorum 2/2")
}

// primaryPort is the data nodes' port (the Sentinels' own port minus 20000, as 26379 is to 6379).
func (s *sentinelRole) primaryPort() int { return s.port - 20000 }

// Announce delivers payload on channel to the node's subscribers to that channel, as a Sentinel
// publishes its events (nothing answers it, and the pub/sub records ignore it).
func (n *Node) Announce(channel, payload string) {
	for _, x := range n.conns {
		s := n.ps.subs[x]
		if s == nil || !x.open || !s.channels[channel] {
			continue
		}
		frame := appendEventHeader(nil, 3, x.Session.Proto)
		for _, w := range []string{"message", channel, payload} {
			frame = resp.AppendBulkString(frame, w)
		}
		x.link.Write(frame)
	}
}

// sentinelDataCommands are the commands a Sentinel refuses.
var sentinelDataCommands = map[string]bool{"GET": true, "SET": true, "DEL": true, "INCR": true, "MSET": true,
	"MGET": true, "EXISTS": true}

// sentinelIntercept handles ROLE on every node of a Sentinel deployment, READONLY for a write
// on a replica, and the Sentinel commands of a Sentinel. It reports whether it answered.
func (n *Node) sentinelIntercept(c *Conn, cmd command, known bool) bool {
	args := n.args
	s := n.sn
	if eqFold(args[0], "ROLE") {
		n.reply(c, s.role(n))
		return true
	}
	if !s.sentinel {
		if n.replicaIntercept(c, cmd, known) {
			return true
		}
		if known && writeCommands[cmd.name] && s.group.primary != n && !s.diverged {
			n.errorReply(c, "READONLY You can't write against a read only replica.")
			return true
		}
		return false
	}
	if known && sentinelDataCommands[cmd.name] {
		n.errorReply(c, "ERR unknown command '"+lowerASCII(cmd.name)+"'")
		return true
	}
	if !eqFold(args[0], "SENTINEL") {
		return false
	}
	if len(args) != 3 {
		n.errorReply(c, "ERR wrong number of arguments for 'sentinel' command")
		return true
	}
	if string(args[2]) != s.name {
		if eqFold(args[1], "GET-MASTER-ADDR-BY-NAME") {
			n.reply(c, resp.NullBulk())
		} else {
			n.errorReply(c, "ERR No such master with that name")
		}
		return true
	}
	port := strconv.Itoa(s.primaryPort())
	switch {
	case eqFold(args[1], "GET-MASTER-ADDR-BY-NAME"):
		n.reply(c, resp.ArrayOf(resp.BulkString(s.primaryAddr()), resp.BulkString(port)))
	case eqFold(args[1], "MASTER"):
		if s.noEpoch {
			n.errorReply(c, "NOPERM this user has no permissions to run the 'sentinel|master' command")
			return true
		}
		n.reply(c, fields("name", s.name, "ip", s.primaryAddr(), "port", port, "runid", NodeID(s.view.Primary),
			"flags", s.view.flags(), "config-epoch", strconv.FormatUint(s.view.Epoch, 10),
			"num-other-sentinels", strconv.Itoa(len(s.peers)), "quorum", "2"))
	case eqFold(args[1], "SENTINELS"):
		var peers []resp.Value
		for _, p := range s.peers {
			peers = append(peers, fields("name", NodeID(p), "ip", p, "port", strconv.Itoa(s.port),
				"runid", NodeID(p), "flags", "sentinel"))
		}
		n.reply(c, resp.ArrayOf(peers...))
	case eqFold(args[1], "REPLICAS") || eqFold(args[1], "SLAVES"):
		n.reply(c, s.replicasReply())
	default:
		n.errorReply(c, "ERR Unknown sentinel subcommand '"+string(args[1])+"'")
	}
	return true
}

// flags are the flags SENTINEL MASTER reports for the view's primary.
func (v SentinelView) flags() string {
	if v.InFailover {
		return "master,failover_in_progress"
	}
	return "master"
}

// role is the node's ROLE reply.
func (s *sentinelRole) role(n *Node) resp.Value {
	switch {
	case s.sentinel:
		return resp.ArrayOf(resp.BulkString("sentinel"), resp.ArrayOf(resp.BulkString(s.name)))
	case s.group.primary == n || s.diverged:
		var reps []resp.Value
		for _, r := range s.group.nodes {
			if r != n && !r.down {
				reps = append(reps, resp.ArrayOf(resp.BulkString(r.id), resp.BulkString(strconv.Itoa(s.group.port)), resp.BulkString("0")))
			}
		}
		return resp.ArrayOf(resp.BulkString("master"), resp.Int(0), resp.ArrayOf(reps...))
	}
	return resp.ArrayOf(resp.BulkString("slave"), resp.BulkString(s.group.primary.id), resp.Int(int64(s.group.port)),
		resp.BulkString(s.replica.linkState()), resp.Int(0))
}

// fields is a record reply: an array of field names and values.
func fields(kv ...string) resp.Value {
	vs := make([]resp.Value, len(kv))
	for i, s := range kv {
		vs[i] = resp.BulkString(s)
	}
	return resp.ArrayOf(vs...)
}
