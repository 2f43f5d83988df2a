package topo

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// Rejection names an error reply that proves the command was not executed, so that a client may
// send it again (to another node, or later) without running it twice.
type Rejection uint8

// Rejections, by error code.
const (
	// RejectionNone: any other reply. An error reply of this kind may or may not have had effects
	// (a script error after some writes, say); it is never retried for the command.
	RejectionNone Rejection = iota
	// RejectionMoved (MOVED slot endpoint): the slot belongs to another node, for good.
	RejectionMoved
	// RejectionAsk (ASK slot endpoint): the slot is migrating and the key may already be on the
	// target; send ASKING then the command there, once, without updating the slot map.
	RejectionAsk
	// RejectionClusterDown (CLUSTERDOWN): the Cluster cannot serve the slot now.
	RejectionClusterDown
	// RejectionTryAgain (TRYAGAIN): a multi-key command met a slot in mid-migration.
	RejectionTryAgain
	// RejectionReadOnly (READONLY): the node is a replica now; its shard failed over.
	RejectionReadOnly
	// RejectionMasterDown (MASTERDOWN): a replica lost its primary and serves no stale data.
	RejectionMasterDown
	// RejectionLoading (LOADING): the node is loading its data set.
	RejectionLoading
)

var rejectionNames = [...]string{"none", "MOVED", "ASK", "CLUSTERDOWN", "TRYAGAIN", "READONLY", "MASTERDOWN", "LOADING"}

// String returns the error code ("MOVED", ...) or "none".
func (r Rejection) String() string {
	if int(r) < len(rejectionNames) {
		return rejectionNames[r]
	}
	return "rejection(" + strconv.Itoa(int(r)) + ")"
}

// IsRedirect reports whether r is MOVED or ASK.
func (r Rejection) IsRedirect() bool { return r == RejectionMoved || r == RejectionAsk }

// NotExecuted reports whether r proves that the command was not executed: true for every
// rejection but RejectionNone.
func (r Rejection) NotExecuted() bool { return r != RejectionNone }

// ClassifyRejection returns the rejection an error reply is, from its code (its first word), or
// RejectionNone for any other reply, errors included. It does not allocate.
func ClassifyRejection(v resp.Value) Rejection {
	if !v.IsError() {
		return RejectionNone
	}
	code := v.Str
	if i := bytes.IndexByte(code, ' '); i >= 0 {
		code = code[:i]
	}
	switch string(code) {
	case "MOVED":
		return RejectionMoved
	case "ASK":
		return RejectionAsk
	case "CLUSTERDOWN":
		return RejectionClusterDown
	case "TRYAGAIN":
		return RejectionTryAgain
	case "READONLY":
		return RejectionReadOnly
	case "MASTERDOWN":
		return RejectionMasterDown
	case "LOADING":
		return RejectionLoading
	}
	return RejectionNone
}

// HostForm says how a redirect names its target's host.
type HostForm uint8

// Forms of a redirect's host.
const (
	// HostGiven: an IP address or host name, in Redirect.Target.
	HostGiven HostForm = iota
	// HostSameAsSender: empty ("MOVED 3999 :6381", cluster-preferred-endpoint-type
	// unknown-endpoint): the target is on the host the command was sent to, at the given port.
	HostSameAsSender
	// HostUnknown: "?" (a node told to prefer host names that has none): the target's host is not
	// known; only a topology refresh can find it.
	HostUnknown
)

var hostFormNames = [...]string{"given", "same-as-sender", "unknown"}

// String returns "given", "same-as-sender" or "unknown".
func (f HostForm) String() string {
	if int(f) < len(hostFormNames) {
		return hostFormNames[f]
	}
	return "host-form(" + strconv.Itoa(int(f)) + ")"
}

// Redirect is a parsed MOVED or ASK error.
type Redirect struct {
	// Kind is RejectionMoved or RejectionAsk.
	Kind Rejection
	// Slot is the slot of the command's keys.
	Slot uint16
	// Target is the node to send the command to. Its Host is canonical, and empty unless Host is
	// HostGiven; see Resolve.
	Target fsm.Endpoint
	// Host says how the reply named the target's host.
	Host HostForm
}

// ErrNotRedirect is returned by ParseRedirect for a reply that is not a MOVED or ASK error.
var ErrNotRedirect = errors.New("respire: not a MOVED or ASK reply")

// ParseRedirect parses a MOVED or ASK error reply: "MOVED <slot> <host>:<port>", the host an IP
// address (IPv6 with or without brackets), a host name, empty or "?". It returns ErrNotRedirect
// for other replies and a *ReplyError when the reply is malformed (a slot outside 0 to 16383, a
// port outside 1 to 65535, missing or extra fields, a host no node could have).
func ParseRedirect(v resp.Value) (Redirect, error) {
	kind := ClassifyRejection(v)
	if !kind.IsRedirect() {
		return Redirect{}, ErrNotRedirect
	}
	fail := func(where, reason string) (Redirect, error) {
		return Redirect{}, &ReplyError{Command: kind.String(), Where: where, Reason: reason}
	}
	msg := v.Str[len(kind.String()):]
	if len(msg) == 0 || msg[0] != ' ' {
		return fail("", "no slot")
	}
	msg = msg[1:]
	sp := bytes.IndexByte(msg, ' ')
	if sp < 0 {
		return fail("", "no endpoint")
	}
	slot, ok := parseSlot(msg[:sp])
	if !ok {
		return fail("slot", "not a number from 0 to 16383")
	}
	addr := msg[sp+1:]
	if bytes.IndexByte(addr, ' ') >= 0 {
		return fail("", "more than three fields")
	}
	colon := bytes.LastIndexByte(addr, ':')
	if colon < 0 {
		return fail("endpoint", "no port")
	}
	port, ok := parseDecimal(addr[colon+1:], 65535)
	if !ok || port == 0 {
		return fail("endpoint", "port is not a number from 1 to 65535")
	}
	r := Redirect{Kind: kind, Slot: slot, Target: fsm.Endpoint{Port: int(port)}}
	switch host := addr[:colon]; string(host) {
	case "":
		r.Host = HostSameAsSender
	case "?":
		r.Host = HostUnknown
	default:
		h, err := fsm.ParseHost(string(host))
		if err != nil || h == "" {
			return fail("endpoint", "host is neither an IP address nor a host name")
		}
		r.Target.Host = h
	}
	return r, nil
}

// Resolve returns the endpoint to follow the redirect to. sender is the endpoint the command was
// sent to; its host stands in for an empty one (HostSameAsSender). It reports false when the host
// is unknown (HostUnknown), or empty and sender has no host either.
func (r Redirect) Resolve(sender fsm.Endpoint) (fsm.Endpoint, bool) {
	switch r.Host {
	case HostGiven:
		return r.Target, true
	case HostSameAsSender:
		if sender.Host == "" {
			return fsm.Endpoint{}, false
		}
		return fsm.Endpoint{Host: sender.Host, Port: r.Target.Port}, true
	}
	return fsm.Endpoint{}, false
}

// String returns a deterministic description, such as "MOVED slot=3999 to=127.0.0.1:6381" or
// "ASK slot=12 to=same-as-sender:7002".
func (r Redirect) String() string {
	dst := append([]byte(r.Kind.String()), " slot="...)
	dst = strconv.AppendUint(dst, uint64(r.Slot), 10)
	dst = append(dst, " to="...)
	if r.Host == HostGiven {
		dst = r.Target.AppendTo(dst)
	} else {
		dst = append(dst, r.Host.String()...)
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, int64(r.Target.Port), 10)
	}
	return string(dst)
}

// parseSlot parses a decimal slot from 0 to 16383.
func parseSlot(b []byte) (uint16, bool) {
	n, ok := parseDecimal(b, fsm.SlotCount-1)
	return uint16(n), ok
}

// parseDecimal parses a non-empty run of at most 10 decimal digits whose value is at most limit.
func parseDecimal[B string | []byte](b B, limit int64) (int64, bool) {
	if len(b) == 0 || len(b) > 10 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n <= limit
}
