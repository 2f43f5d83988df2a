package topo

import (
	"errors"
	"strings"

	"github.com/respire-go/respire/fsm"
)

// MaxSentinelMessage bounds the payload of a Sentinel event message ParseSentinelMessage
// reads, in bytes. Sentinel's own messages are well under 1 KiB.
const MaxSentinelMessage = 4096

// ErrNotSentinelEvent is returned by ParseSentinelMessage for a channel it does not parse.
var ErrNotSentinelEvent = errors.New("respire: not a +switch-master, +sdown, -sdown, +odown or -odown message")

// sentinelChannels maps the channels ParseSentinelMessage reads to their kinds.
var sentinelChannels = map[string]fsm.MessageKind{
	"+switch-master": fsm.MessageSwitchPrimary,
	"+sdown":         fsm.MessageSubjectivelyDown,
	"-sdown":         fsm.MessageSubjectivelyUp,
	"+odown":         fsm.MessageObjectivelyDown,
	"-odown":         fsm.MessageObjectivelyUp,
}

// ParseSentinelMessage parses a message a Sentinel published on channel:
//
//	+switch-master  <name> <old-ip> <old-port> <new-ip> <new-port>
//	+sdown, -sdown, +odown, -odown
//	                <type> <instance> <ip> <port> [@ <name> <primary-ip> <primary-port>] ...
//
// where type is master, slave or sentinel, and the part after "@" (the primary the instance
// belongs to) is present unless the instance is a primary itself; Sentinel may append more
// words (+odown adds "#quorum 3/2"), which are ignored. Addresses are put in canonical form.
//
// Another channel gives ErrNotSentinelEvent; a malformed payload, or one longer than
// MaxSentinelMessage, a *ReplyError that names the field but never quotes the payload.
func ParseSentinelMessage(channel string, payload []byte) (fsm.SentinelMessage, error) {
	kind, ok := sentinelChannels[channel]
	if !ok {
		return fsm.SentinelMessage{}, ErrNotSentinelEvent
	}
	fail := func(where, reason string) (fsm.SentinelMessage, error) {
		return fsm.SentinelMessage{}, &ReplyError{Command: channel + " message", Where: where, Reason: reason}
	}
	if len(payload) > MaxSentinelMessage {
		return fail("", "longer than 4096 bytes")
	}
	words := strings.Fields(string(payload))
	m := fsm.SentinelMessage{Kind: kind}
	if kind == fsm.MessageSwitchPrimary {
		if len(words) != 5 {
			return fail("", "not a name and two addresses")
		}
		var reason string
		m.Instance, m.Primary = fsm.InstancePrimary, words[0]
		if m.Old, reason = eventAddr(words[1], words[2]); reason != "" {
			return fail("old address", reason)
		}
		if m.Addr, reason = eventAddr(words[3], words[4]); reason != "" {
			return fail("new address", reason)
		}
		return m, nil
	}
	if len(words) < 4 {
		return fail("", "fewer than 4 fields")
	}
	switch words[0] {
	case "master":
		m.Instance = fsm.InstancePrimary
	case "slave":
		m.Instance = fsm.InstanceReplica
	case "sentinel":
		m.Instance = fsm.InstanceSentinel
	default:
		return fail("instance type", "not master, slave or sentinel")
	}
	var reason string
	if m.Addr, reason = eventAddr(words[2], words[3]); reason != "" {
		return fail("address", reason)
	}
	switch {
	case len(words) > 4 && words[4] == "@":
		if len(words) < 8 {
			return fail("primary", "fewer than 3 fields after @")
		}
		m.Primary = words[5]
		if _, reason = eventAddr(words[6], words[7]); reason != "" {
			return fail("primary address", reason)
		}
	case m.Instance == fsm.InstancePrimary:
		m.Primary = words[1]
	default:
		return fail("primary", "missing for a replica or a Sentinel")
	}
	return m, nil
}

// eventAddr parses an address of an event message, or says what is wrong with it.
func eventAddr(host, port string) (fsm.Endpoint, string) {
	h, err := fsm.ParseHost(host)
	if err != nil || h == "" {
		return fsm.Endpoint{}, "neither an IP address nor a host name"
	}
	p, ok := parseDecimal(port, 65535)
	if !ok || p == 0 {
		return fsm.Endpoint{}, "port is not a number from 1 to 65535"
	}
	return fsm.Endpoint{Host: h, Port: int(p)}, ""
}
