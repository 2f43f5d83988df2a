package engine

import (
	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// ErrReplicaRole reports that a connection rented from a replica for a blocking read did not
// answer ROLE as a replica (a promoted replica, say): the connection is discarded and the read
// selects again, nothing sent.
var ErrReplicaRole = errors.New("respire: the replica's connection did not answer ROLE as a replica")

// CheckReplicaRole classifies the ROLE reply of a connection rented from a replica for a
// blocking read: nil when the server is a replica, ErrReplicaRole when it is not, or the
// parser's error (a *topo.QueryRejectedError for an error reply, a *topo.ReplyError for a
// malformed one). The client and the simulator both take this rule.
func CheckReplicaRole(reply resp.Value) error {
	r, err := topo.ParseRole(reply)
	switch {
	case err != nil:
		return err
	case r.Role != fsm.RoleReplica:
		return ErrReplicaRole
	}
	return nil
}
