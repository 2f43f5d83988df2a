package fsm

import (
	"slices"
	"strconv"
)

// NodeID is a Cluster node's name: the 40 hexadecimal characters Redis gives each node. It tells
// apart two nodes that use the same address one after the other.
type NodeID string

// Role is a node's place in its shard.
type Role uint8

// Node roles.
const (
	RoleUnknown Role = iota
	// RolePrimary: the node serves its shard's slots (a "master" in Redis's replies).
	RolePrimary
	// RoleReplica: the node replicates its shard's primary.
	RoleReplica
)

var roleNames = [...]string{"unknown", "primary", "replica"}

// String returns "primary", "replica" or "unknown".
func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return "role(" + strconv.Itoa(int(r)) + ")"
}

// Health is what a reply says about a node's state.
type Health uint8

// Node health, as CLUSTER SHARDS and CLUSTER NODES report it. CLUSTER SLOTS says nothing about
// health (it leaves failed replicas out instead), so its nodes are HealthUnknown.
const (
	HealthUnknown Health = iota
	// HealthOnline: the node is reachable and serving.
	HealthOnline
	// HealthLoading: the node is loading its data set (a replica during a full sync).
	HealthLoading
	// HealthSuspect: the answering node cannot reach it, but the cluster has not agreed that it
	// failed ("fail?" in CLUSTER NODES).
	HealthSuspect
	// HealthFailed: the cluster agreed that the node failed.
	HealthFailed
)

var healthNames = [...]string{"unknown", "online", "loading", "suspect", "failed"}

// String returns the lower-case name of the health.
func (h Health) String() string {
	if int(h) < len(healthNames) {
		return healthNames[h]
	}
	return "health(" + strconv.Itoa(int(h)) + ")"
}

// Node is one member of a Cluster as a topology reply describes it.
//
// A node is known by several endpoints, its aliases (see Node.Aliases): its preferred endpoint
// Addr, and its announced IP address and host name at the same port. A redirect or a configured
// seed naming any of them names this node. Node values are comparable with ==.
type Node struct {
	// ID is the node's name; never empty in a valid reply.
	ID NodeID
	// Addr is the endpoint to dial: the server's preferred endpoint from CLUSTER SLOTS or CLUSTER
	// SHARDS, or the IP address and port from CLUSTER NODES. Its Host is empty when the reply
	// gives no usable host (an address-less node), and it is the zero Endpoint when the reply
	// gives neither host nor port.
	Addr Endpoint
	// IP is the node's announced IP address in canonical form, or "" when not known.
	IP string
	// Hostname is the node's announced host name in canonical (lower-case) form, or "" when it
	// announces none.
	Hostname string
	// Role is RolePrimary or RoleReplica.
	Role Role
	// Primary is the ID of the primary a replica replicates, or "" for a primary.
	Primary NodeID
	// Health is the node's state as the reply reports it.
	Health Health
}

// Aliases returns the endpoints that name n, sorted and without duplicates: Addr when it is
// dialable, and IP and Hostname at Addr's port.
func (n Node) Aliases() []Endpoint {
	var buf [3]Endpoint
	return slices.Clone(n.appendAliases(buf[:0]))
}

// appendAliases appends n's aliases, sorted and without duplicates, to dst.
func (n *Node) appendAliases(dst []Endpoint) []Endpoint {
	start := len(dst)
	if n.Addr.Dialable() {
		dst = append(dst, n.Addr)
	}
	if n.Addr.Port > 0 {
		if n.IP != "" {
			dst = append(dst, Endpoint{Host: n.IP, Port: n.Addr.Port})
		}
		if n.Hostname != "" {
			dst = append(dst, Endpoint{Host: n.Hostname, Port: n.Addr.Port})
		}
	}
	added := dst[start:]
	slices.SortFunc(added, CompareEndpoints)
	return append(dst[:start], slices.Compact(added)...)
}

// Matches reports whether ep is one of n's aliases. ep must be canonical (see MakeEndpoint).
func (n Node) Matches(ep Endpoint) bool {
	if ep.Host == "" || ep.Port != n.Addr.Port || ep.Port == 0 {
		return false
	}
	return ep.Host == n.Addr.Host || ep.Host == n.IP || ep.Host == n.Hostname
}

// String returns a deterministic one-line description of n.
func (n Node) String() string { return string(n.AppendTo(nil)) }

// AppendTo appends the String form of n to dst, for example
//
//	primary 07c37dfeb235213a872192d90877d0cd55635b91 addr=127.0.0.1:30004 host=node-4.example health=online
func (n *Node) AppendTo(dst []byte) []byte {
	dst = append(dst, n.Role.String()...)
	dst = append(dst, ' ')
	dst = append(dst, n.ID...)
	dst = append(dst, " addr="...)
	dst = n.Addr.AppendTo(dst)
	if n.IP != "" && n.IP != n.Addr.Host {
		dst = append(dst, " ip="...)
		dst = append(dst, n.IP...)
	}
	if n.Hostname != "" && n.Hostname != n.Addr.Host {
		dst = append(dst, " host="...)
		dst = append(dst, n.Hostname...)
	}
	if n.Role == RoleReplica && n.Primary != "" {
		dst = append(dst, " of="...)
		dst = append(dst, n.Primary...)
	}
	if n.Health != HealthUnknown {
		dst = append(dst, " health="...)
		dst = append(dst, n.Health.String()...)
	}
	return dst
}

// compareNodeIDs orders nodes by ID.
func compareNodeIDs(a, b Node) int {
	switch {
	case a.ID < b.ID:
		return -1
	case a.ID > b.ID:
		return 1
	}
	return 0
}
