package topo

import (
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// RoleReply is a parsed ROLE reply.
type RoleReply struct {
	// Role is fsm.RolePrimary ("master"), fsm.RoleReplica ("slave"), or fsm.RoleUnknown for a
	// Sentinel (Sentinel is then set).
	Role fsm.Role
	// Sentinel reports a Sentinel's ROLE ("sentinel").
	Sentinel bool
	// ReplOffset is the replication offset: the primary's, or the replica's (-1 while it has
	// none yet).
	ReplOffset int64
	// Replicas are a primary's connected replicas with their acknowledged offsets, at most
	// MaxSentinelReplicas.
	Replicas []ReplicaOffset
	// Primary is a replica's primary, and LinkState the state of its link ("connect",
	// "connecting", "sync", "connected", ...).
	Primary   fsm.Endpoint
	LinkState string
	// Primaries are the names a Sentinel monitors, at most MaxSentinelPrimaries.
	Primaries []string
}

// ReplicaOffset is a replica in a primary's ROLE reply.
type ReplicaOffset struct {
	Addr   fsm.Endpoint
	Offset int64
}

// ParseRole parses a ROLE reply in its three forms:
//
//	["master", offset, [[ip, port, offset], ...]]
//	["slave", primary-ip, primary-port, link-state, offset]
//	["sentinel", [name, ...]]
//
// An error reply gives a *QueryRejectedError (matching ErrPermissionDenied for NOPERM: grant
// ROLE to the data credentials); any other shape a *ReplyError.
func ParseRole(v resp.Value) (RoleReply, error) {
	const command = "ROLE"
	if err := queryRejected(command, &v); err != nil {
		return RoleReply{}, err
	}
	fail := func(where, reason string) (RoleReply, error) {
		return RoleReply{}, &ReplyError{Command: command, Where: where, Reason: reason}
	}
	if v.Kind != resp.KindArray || v.Len() == 0 {
		return fail("", "not an array beginning with a role")
	}
	first := v.Elem(0)
	switch {
	case isText(&first, "master"):
		if v.Len() < 3 {
			return fail("", "a primary's ROLE has fewer than 3 elements")
		}
		r := RoleReply{Role: fsm.RolePrimary}
		off := v.Elem(1)
		var ok bool
		if r.ReplOffset, ok = integer(&off); !ok || r.ReplOffset < 0 {
			return fail("offset", "not a non-negative integer")
		}
		list := v.Elem(2)
		if list.Kind != resp.KindArray {
			return fail("replicas", "not an array")
		}
		n := min(list.Len(), MaxSentinelReplicas)
		for i := 0; i < n; i++ {
			e := list.Elem(i)
			if e.Kind != resp.KindArray || e.Len() < 3 {
				return fail(where("replica", i), "not an array of an address, a port and an offset")
			}
			host, port, offset := e.Elem(0), e.Elem(1), e.Elem(2)
			h, ok := text(&host)
			h, err := fsm.ParseHost(h)
			if !ok || err != nil || h == "" {
				return fail(where("replica", i, "address"), "neither an IP address nor a host name")
			}
			p, ok := decimal(&port)
			if !ok || p < 1 || p > 65535 {
				return fail(where("replica", i, "port"), "not a number from 1 to 65535")
			}
			o, ok := decimal(&offset)
			if !ok || o < 0 {
				return fail(where("replica", i, "offset"), "not a non-negative number")
			}
			r.Replicas = append(r.Replicas, ReplicaOffset{Addr: fsm.Endpoint{Host: h, Port: int(p)}, Offset: o})
		}
		return r, nil
	case isText(&first, "slave"):
		if v.Len() < 5 {
			return fail("", "a replica's ROLE has fewer than 5 elements")
		}
		r := RoleReply{Role: fsm.RoleReplica}
		host, port, state, offset := v.Elem(1), v.Elem(2), v.Elem(3), v.Elem(4)
		h, ok := text(&host)
		if !ok {
			return fail("primary address", "not a string")
		}
		h, err := fsm.ParseHost(h)
		if err != nil || h == "" {
			return fail("primary address", "neither an IP address nor a host name")
		}
		p, ok := decimal(&port)
		if !ok || p < 1 || p > 65535 {
			return fail("primary port", "not a number from 1 to 65535")
		}
		r.Primary = fsm.Endpoint{Host: h, Port: int(p)}
		if r.LinkState, ok = text(&state); !ok || !isWord(r.LinkState) {
			return fail("link state", "not a word")
		}
		if r.ReplOffset, ok = decimal(&offset); !ok || r.ReplOffset < -1 {
			return fail("offset", "not a number from -1")
		}
		return r, nil
	case isText(&first, "sentinel"):
		if v.Len() < 2 {
			return fail("", "a Sentinel's ROLE has no list of primaries")
		}
		list := v.Elem(1)
		if list.Kind != resp.KindArray {
			return fail("primaries", "not an array")
		}
		r := RoleReply{Sentinel: true}
		n := min(list.Len(), MaxSentinelPrimaries)
		for i := 0; i < n; i++ {
			e := list.Elem(i)
			name, ok := text(&e)
			if !ok {
				return fail(where("primary", i), "not a string")
			}
			r.Primaries = append(r.Primaries, name)
		}
		return r, nil
	}
	return fail("role", "not master, slave or sentinel")
}

// isWord reports whether s is 1 to 32 lower-case letters, the form of a link state.
func isWord(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
