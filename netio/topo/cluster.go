package topo

import (
	"strconv"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// nodeIDLength is the length of a Redis Cluster node ID: 40 hexadecimal characters.
const nodeIDLength = 40

// validNodeID reports whether s is 40 lower-case hexadecimal characters, the form Redis gives
// node IDs.
func validNodeID(s string) bool {
	if len(s) != nodeIDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// rejected returns the error for a topology query answered with an error reply, or nil.
func rejected(q fsm.TopologyQuery, v *resp.Value) error {
	if !v.IsError() {
		return nil
	}
	return &TopologyRejectedError{Query: q, Code: v.ErrorCode()}
}

// endpointInfo collects what a reply says about one node's addresses.
type endpointInfo struct {
	// preferred is the preferred endpoint's text when present and not null.
	preferred string
	// preferredNull reports a null preferred endpoint.
	preferredNull bool
	// preferredAbsent reports that the reply has no preferred endpoint field at all.
	preferredAbsent bool
	ip, hostname    string
	port            int64
}

// resolve turns what a reply says about a node's addresses into the node's Addr, IP and Hostname,
// by the rules in the package documentation. asked is the endpoint the query was sent to.
func (e *endpointInfo) resolve(n *fsm.Node, asked fsm.Endpoint) (reason string) {
	ip, err := fsm.ParseHost(e.ip)
	if err != nil {
		return "ip is neither an IP address nor a host name"
	}
	hostname := e.hostname
	if hostname == "?" {
		hostname = ""
	}
	if hostname, err = fsm.ParseHost(hostname); err != nil {
		return "hostname is not a host name"
	}
	var host string
	switch {
	case e.preferredAbsent:
		host = ip
	case e.preferredNull || e.preferred == "":
		host = asked.Host
	case e.preferred == "?":
		host = ip
		if host == "" {
			host = hostname
		}
	default:
		if host, err = fsm.ParseHost(e.preferred); err != nil {
			return "endpoint is neither an IP address nor a host name"
		}
		// The preferred endpoint is the IP address or the host name when the reply does not
		// list that one separately.
		if fsm.IsIPLiteral(host) {
			if ip == "" {
				ip = host
			}
		} else if hostname == "" {
			hostname = host
		}
	}
	if e.port < 0 || e.port > 65535 {
		return "port out of range"
	}
	n.Addr = fsm.Endpoint{Host: host, Port: int(e.port)}
	n.IP, n.Hostname = ip, hostname
	return ""
}

// where formats a location inside a reply: where("entry", 2, "node", 1) is "entry 2, node 1".
func where(parts ...any) string {
	var dst []byte
	for i, p := range parts {
		switch p := p.(type) {
		case string:
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = append(dst, p...)
		case int:
			dst = append(dst, ' ')
			dst = strconv.AppendInt(dst, int64(p), 10)
		}
	}
	return string(dst)
}

// finish validates a reply built by a parser, reporting a broken rule as a *ReplyError.
func finish(r fsm.TopologyReply) (fsm.TopologyReply, error) {
	if err := r.Validate(); err != nil {
		return fsm.TopologyReply{}, &ReplyError{Command: r.Query.String(), Reason: "inconsistent topology", Err: err}
	}
	return r, nil
}
