package node

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// A simulated Redis Cluster: the nodes of a Cluster share one Cluster value, their common view
// of the slot map (a real Cluster's gossip converges on one; the simulator skips the
// convergence). Each node answers CLUSTER SLOTS from it, and checks every keyed command's slot
// against it before running it:
//
//   - the slot is its shard's and it is the primary: it runs the command, or answers ASK while
//     the slot migrates (the keys move at the migration's start);
//   - it imports the slot and the connection sent ASKING just before: it runs the command;
//   - it is a replica of the slot's shard: MOVED to the primary, or READONLY for a write after
//     a promotion that asked for it;
//   - otherwise MOVED to the slot's primary; CLUSTERDOWN while the Cluster is down, restarting,
//     or has no owner for the slot.
//
// Replication is synchronous: the nodes of a shard share one dataset, so a promotion loses
// nothing, and a replacement takes the dataset with the role. A migration moves the slot's keys
// to the importing shard's dataset.

// Cluster is the shared state of a simulated Redis Cluster.
type Cluster struct {
	port   int
	shards []*Shard
	// owner is each slot's shard (nil: served by none).
	owner [fsm.SlotCount]*Shard
	// importing is each migrating slot's target (nil: not migrating).
	importing [fsm.SlotCount]*Shard
	// down: every keyed command answers CLUSTERDOWN. empty: the nodes restart, CLUSTER SLOTS
	// answers an empty array and keyed commands CLUSTERDOWN.
	down, empty bool
	// dns are the DNS names, in declaration order.
	dns []dnsName
}

// Shard is one shard of a Cluster: a primary, replicas, their shared dataset and an optional
// shard endpoint (a host name that follows the primary).
type Shard struct {
	primary  *Node
	replicas []*Node
	endpoint string
	dbs      [databases]map[string]*entry
}

type dnsName struct {
	name  string
	nodes []*Node
}

// member is a node's Cluster membership.
type member struct {
	c *Cluster
	// shard is the node's shard, or nil outside the Cluster (a spare, a replaced node).
	shard *Shard
	// id is the node's Cluster node ID (40 hex digits).
	id string
	// readOnly: writes answer READONLY instead of MOVED (PromoteAction's "readonly").
	readOnly bool
}

// NewCluster returns an empty Cluster whose nodes listen on port.
func NewCluster(port int) *Cluster { return &Cluster{port: port} }

// NodeID returns the Cluster node ID of a node named name: 40 hexadecimal digits derived from
// the name, so that runs are deterministic and two nodes never share one.
func NodeID(name string) string {
	sum := sha1.Sum([]byte("respire-sim-node:" + name))
	return hex.EncodeToString(sum[:])
}

// Join makes n a node of the Cluster, outside every shard for now (a spare).
func (c *Cluster) Join(n *Node) {
	if n.cl == nil {
		n.cl = &member{c: c, id: NodeID(n.id)}
	}
}

// AddShard adds a shard of primary and replicas serving slots, all joined first. The primary's
// dataset becomes the shard's.
func (c *Cluster) AddShard(primary *Node, replicas []*Node, endpoint string, slots []fsm.SlotRange) *Shard {
	sh := &Shard{primary: primary, replicas: append([]*Node(nil), replicas...), endpoint: endpoint, dbs: primary.dbs}
	for _, n := range append([]*Node{primary}, replicas...) {
		c.Join(n)
		n.cl.shard = sh
		n.dbs = sh.dbs
	}
	c.shards = append(c.shards, sh)
	for _, r := range slots {
		for s := int(r.First); s <= int(r.Last); s++ {
			c.owner[s] = sh
		}
	}
	return sh
}

// AddDNS declares a DNS name resolving to the first of nodes that is not killed.
func (c *Cluster) AddDNS(name string, nodes []*Node) {
	c.dns = append(c.dns, dnsName{name: name, nodes: append([]*Node(nil), nodes...)})
}

// Resolve returns the node a host name stands for: a shard endpoint's primary, or a DNS name's
// first live node (its first one when all are killed). ok is false for other hosts.
func (c *Cluster) Resolve(host string) (n *Node, ok bool) {
	for _, sh := range c.shards {
		if sh.endpoint != "" && sh.endpoint == host {
			return sh.primary, true
		}
	}
	for _, d := range c.dns {
		if d.name != host {
			continue
		}
		for _, x := range d.nodes {
			if !x.down {
				return x, true
			}
		}
		return d.nodes[0], true
	}
	return nil, false
}

// shardOf returns the shard whose primary is n, or nil.
func (c *Cluster) shardOf(n *Node) *Shard {
	if n.cl != nil && n.cl.shard != nil && n.cl.shard.primary == n {
		return n.cl.shard
	}
	return nil
}

// Migrate moves slots to the shard whose primary is to; a spare to becomes the primary of a new
// shard. The keys move now. With ask the slots stay their source's, MIGRATING to the target, until
// FinishMigration; otherwise they are the target's at once.
func (c *Cluster) Migrate(slots []fsm.SlotRange, to *Node, ask bool) {
	target := c.shardOf(to)
	if target == nil {
		c.Join(to)
		if to.cl.shard != nil { // a replica: it leaves its shard to lead a new one
			to.cl.shard.removeReplica(to)
		}
		// A new shard starts empty: the node may still hold the dataset of a shard it served
		// (as a replica, or before a replacement), which stays that shard's.
		for db := range to.dbs {
			to.dbs[db] = make(map[string]*entry)
		}
		target = c.AddShard(to, nil, "", nil)
	}
	for _, r := range slots {
		for s := int(r.First); s <= int(r.Last); s++ {
			src := c.owner[s]
			// The keys are where the slot's last migration put them: on its importing shard
			// while it migrates (a migration may start while another is under way).
			holder := src
			if c.importing[s] != nil {
				holder = c.importing[s]
			}
			if holder != nil && holder != target {
				moveSlotKeys(holder, target, s)
			}
			switch {
			case src == target:
				c.importing[s] = nil // back to its owner: the migration under way is undone
			case ask && src != nil:
				c.importing[s] = target
			default:
				c.owner[s], c.importing[s] = target, nil
			}
		}
	}
}

// FinishMigration gives the slots that are migrating among slots to their targets.
func (c *Cluster) FinishMigration(slots []fsm.SlotRange) {
	for _, r := range slots {
		for s := int(r.First); s <= int(r.Last); s++ {
			if t := c.importing[s]; t != nil {
				c.owner[s], c.importing[s] = t, nil
			}
		}
	}
}

// moveSlotKeys moves the keys of slot from one shard's dataset to another's.
func moveSlotKeys(from, to *Shard, slot int) {
	for db := range from.dbs {
		for k, e := range from.dbs[db] {
			if int(topo.KeySlotString(k)) == slot {
				to.dbs[db][k] = e
				delete(from.dbs[db], k)
			}
		}
	}
}

// Promote makes the replica n its shard's primary; the old primary becomes a replica, which
// answers writes READONLY when readOnly is set (MOVED otherwise). It reports false when n is
// not a replica.
func (c *Cluster) Promote(n *Node, readOnly bool) bool {
	if n.cl == nil || n.cl.shard == nil || n.cl.shard.primary == n {
		return false
	}
	sh := n.cl.shard
	old := sh.primary
	sh.removeReplica(n)
	sh.primary = n
	sh.replicas = append(sh.replicas, old)
	n.cl.readOnly = false
	old.cl.readOnly = readOnly
	return true
}

func (sh *Shard) removeReplica(n *Node) {
	for i, r := range sh.replicas {
		if r == n {
			sh.replicas = append(sh.replicas[:i], sh.replicas[i+1:]...)
			return
		}
	}
}

// Replace puts by in old's place: its role, its slots, its dataset and the DNS names that named
// it. old leaves the Cluster (it keeps answering MOVED from its last view if it still runs). It
// reports false, changing nothing, when old is not in a shard or by is a shard's primary.
func (c *Cluster) Replace(old, by *Node) bool {
	if old.cl == nil || old.cl.shard == nil || c.shardOf(by) != nil {
		return false
	}
	sh := old.cl.shard
	c.Join(by)
	if by.cl.shard != nil && by.cl.shard != sh {
		by.cl.shard.removeReplica(by)
	}
	if sh.primary == old {
		sh.primary = by
	} else {
		for i, r := range sh.replicas {
			if r == old {
				sh.replicas[i] = by
			}
		}
	}
	by.cl.shard, by.cl.readOnly = sh, old.cl.readOnly
	by.dbs = sh.dbs
	old.cl.shard = nil
	for i := range c.dns {
		for j, x := range c.dns[i].nodes {
			if x == old {
				c.dns[i].nodes[j] = by
			}
		}
	}
	return true
}

// SetDown starts or ends a CLUSTERDOWN window.
func (c *Cluster) SetDown(down bool) { c.down = down }

// SetEmpty starts or ends the window of a restart in which the nodes answer CLUSTER SLOTS with
// an empty array and keyed commands with CLUSTERDOWN.
func (c *Cluster) SetEmpty(empty bool) { c.empty = empty }

// Nodes returns the nodes of every shard, primaries first in shard order, then replicas.
func (c *Cluster) Nodes() []*Node {
	var out []*Node
	for _, sh := range c.shards {
		out = append(out, sh.primary)
	}
	for _, sh := range c.shards {
		out = append(out, sh.replicas...)
	}
	return out
}

// host is the endpoint host the Cluster announces for n: its shard endpoint when it is the
// primary of a shard that has one, its announced address otherwise (its name, or the address it
// moved to: SetAnnounced).
func (c *Cluster) host(n *Node) string {
	if sh := c.shardOf(n); sh != nil && sh.endpoint != "" {
		return sh.endpoint
	}
	return n.Announced()
}

// addr is n's announced endpoint, "host:port".
func (c *Cluster) addr(n *Node) string { return c.host(n) + ":" + strconv.Itoa(c.port) }

// route decides a keyed command on n for slot: "" runs it, anything else is the error reply.
func (c *Cluster) route(n *Node, slot int, write, asking bool) string {
	switch {
	case c.empty:
		return "CLUSTERDOWN Hash slot not served"
	case c.down:
		return "CLUSTERDOWN The cluster is down"
	}
	owner := c.owner[slot]
	if owner == nil {
		return "CLUSTERDOWN Hash slot not served"
	}
	s := strconv.Itoa(slot)
	sh := n.cl.shard
	imp := c.importing[slot]
	switch {
	case sh == owner && owner.primary == n && imp != nil:
		return "ASK " + s + " " + c.addr(imp.primary)
	case sh == owner && owner.primary == n:
		return ""
	case sh == owner && n.cl.readOnly && write:
		return "READONLY You can't write against a read only replica."
	case imp != nil && sh == imp && imp.primary == n && asking:
		return ""
	}
	return "MOVED " + s + " " + c.addr(owner.primary)
}

// slotsReply is the CLUSTER SLOTS reply: contiguous ranges of one owner, each with its primary
// and its replicas that are not killed.
func (c *Cluster) slotsReply() resp.Value {
	if c.empty {
		return resp.ArrayOf()
	}
	var ranges []resp.Value
	for s := 0; s < fsm.SlotCount; {
		sh := c.owner[s]
		e := s
		for e+1 < fsm.SlotCount && c.owner[e+1] == sh {
			e++
		}
		if sh != nil {
			entry := []resp.Value{resp.Int(int64(s)), resp.Int(int64(e)), c.nodeEntry(sh.primary)}
			for _, r := range sh.replicas {
				if !r.down {
					entry = append(entry, c.nodeEntry(r))
				}
			}
			ranges = append(ranges, resp.ArrayOf(entry...))
		}
		s = e + 1
	}
	return resp.ArrayOf(ranges...)
}

func (c *Cluster) nodeEntry(n *Node) resp.Value {
	return resp.ArrayOf(resp.BulkString(c.host(n)), resp.Int(int64(c.port)), resp.BulkString(n.cl.id))
}

// mode is the server mode HELLO reports.
func (n *Node) mode() string {
	if n.cl != nil {
		return "cluster"
	}
	return "standalone"
}

// writeCommands are the keyed commands that write.
var writeCommands = map[string]bool{"SET": true, "DEL": true, "INCR": true, "MSET": true}

// clusterIntercept handles, on a Cluster node, the Cluster commands (CLUSTER SLOTS, ASKING,
// READONLY, READWRITE) and the slot check of keyed commands and shard channels (SSUBSCRIBE,
// SPUBLISH). It reports whether it answered.
func (n *Node) clusterIntercept(c *Conn, cmd command, known bool) bool {
	args := n.args
	asking := c.asking
	c.asking = false
	switch {
	case eqFold(args[0], "CLUSTER"):
		if len(args) == 2 && eqFold(args[1], "SLOTS") {
			n.reply(c, n.cl.c.slotsReply())
		} else {
			n.errorReply(c, "ERR unknown subcommand or wrong number of arguments for 'cluster' command")
		}
		return true
	case eqFold(args[0], "ASKING"):
		c.asking = true
		n.reply(c, replyOK)
		return true
	case eqFold(args[0], "READONLY"), eqFold(args[0], "READWRITE"):
		n.reply(c, replyOK)
		return true
	}
	first, step := 1, 1
	switch {
	case (eqFold(args[0], "SSUBSCRIBE") || eqFold(args[0], "SPUBLISH")) && len(args) >= 2:
		// Shard channels route like keys: SSUBSCRIBE's every channel, SPUBLISH's channel.
		if eqFold(args[0], "SPUBLISH") {
			step = len(args)
		}
		return n.clusterRoute(c, args, first, step, false, asking)
	case !known || !cmd.arityOK(len(args)):
		return false
	}
	switch cmd.name {
	case "GET", "SET", "INCR":
		step = len(args)
	case "DEL", "EXISTS", "MGET":
	case "MSET":
		step = 2
	default:
		return false // keyless
	}
	return n.clusterRoute(c, args, first, step, writeCommands[cmd.name], asking)
}

// clusterRoute checks the slot of the keys args[first], args[first+step]...: it answers
// CROSSSLOT or a redirect and reports true, or reports false to let the command run.
func (n *Node) clusterRoute(c *Conn, args [][]byte, first, step int, write, asking bool) bool {
	slot := int(topo.KeySlot(args[first]))
	for i := first + step; i < len(args); i += step {
		if int(topo.KeySlot(args[i])) != slot {
			n.errorReply(c, "CROSSSLOT Keys in request don't hash to the same slot")
			return true
		}
	}
	if msg := n.cl.c.route(n, slot, write, asking); msg != "" {
		n.errorReply(c, msg)
		return true
	}
	return false
}
