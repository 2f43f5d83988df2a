package topo

import (
	"errors"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// SentinelCommand returns the arguments of query q about the primary monitored as name, for a
// Query effect of the fsm Sentinel resolution. ROLE takes no name.
func SentinelCommand(q fsm.SentinelQuery, name string) []string {
	switch q {
	case fsm.SentinelQueryPrimary:
		return []string{"SENTINEL", "MASTER", name}
	case fsm.SentinelQueryPrimaryAddr:
		return []string{"SENTINEL", "GET-MASTER-ADDR-BY-NAME", name}
	case fsm.SentinelQueryPeers:
		return []string{"SENTINEL", "SENTINELS", name}
	case fsm.SentinelQueryRole:
		return []string{"ROLE"}
	}
	return nil
}

// AnswerSentinel parses v, the reply to query q, into the payload of an fsm.Answered event and
// the event's error. The payload is never nil. On an error it carries only the query, and
// Denied when the server refused the query for want of permission (NOPERM), which makes the
// resolution fall back from SENTINEL MASTER to GET-MASTER-ADDR-BY-NAME.
func AnswerSentinel(q fsm.SentinelQuery, v resp.Value) (*fsm.SentinelData, error) {
	d := &fsm.SentinelData{Query: q}
	var err error
	switch q {
	case fsm.SentinelQueryPrimary:
		var p SentinelPrimary
		if p, err = ParseSentinelMaster(v); err == nil {
			d.Primary, d.Epoch, d.EpochKnown = p.Addr, p.ConfigEpoch, p.HasConfigEpoch
			// The Sentinel leading a failover gives the promoted replica's epoch with the old
			// primary's address until the failover ends: the resolution must know.
			d.InFailover = p.Flags.Has(FlagFailoverInProgress)
		}
	case fsm.SentinelQueryPrimaryAddr:
		d.Primary, err = ParseSentinelPrimaryAddr(v)
	case fsm.SentinelQueryPeers:
		var peers []SentinelPeer
		if peers, err = ParseSentinelSentinels(v); err == nil {
			d.Peers = make([]fsm.Endpoint, len(peers))
			for i := range peers {
				d.Peers[i] = peers[i].Addr
			}
		}
	case fsm.SentinelQueryRole:
		var r RoleReply
		if r, err = ParseRole(v); err == nil {
			d.Role = r.Role
		}
	default:
		err = &ReplyError{Command: q.String(), Reason: "not a Sentinel query"}
	}
	if err != nil {
		return &fsm.SentinelData{Query: q, Denied: errors.Is(err, ErrPermissionDenied)}, err
	}
	return d, nil
}

// NotifySentinel parses a Sentinel event message into the payload of an fsm.Notified event (see
// ParseSentinelMessage).
func NotifySentinel(channel string, payload []byte) (*fsm.SentinelData, error) {
	m, err := ParseSentinelMessage(channel, payload)
	if err != nil {
		return nil, err
	}
	return &fsm.SentinelData{Message: m}, nil
}
