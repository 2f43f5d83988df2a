package node

import "time"

// ReplyFaults is implemented by an Env whose faults act on replies: a slow command that keeps
// the node busy before it answers, or a malformed reply. New looks for it once.
type ReplyFaults interface {
	// ReplyFault returns what a fault does to the reply of the command args (name is its
	// canonical upper-case name), which the node just executed: slow > 0 keeps the node busy
	// that long before the reply is written (Redis runs one command at a time: nothing else is
	// served meanwhile), and garble replaces the reply.
	ReplyFault(name string, args [][]byte) (slow time.Duration, garble Garble)
}

// Garble says how a fault replaces a reply.
type Garble uint8

const (
	// GarbleNone keeps the reply.
	GarbleNone Garble = iota
	// GarbleMalformed replaces it with bytes no RESP parser accepts (malformedReply).
	GarbleMalformed
	// GarbleWrongKind replaces it with a well-formed reply of another kind (wrongKind).
	GarbleWrongKind
)

// malformedReply is what a malformed-reply fault writes: a frame with an unknown type byte.
var malformedReply = []byte("?malformed\r\n")

// wrongKindInt and wrongKindArray are what a wrong-kind reply fault writes, both well formed
// under RESP2 and RESP3 (wrongKind picks one).
var wrongKindInt, wrongKindArray = []byte(":0\r\n"), []byte("*0\r\n")

// wrongKind returns what a wrong-kind reply fault writes in place of reply: an integer, or an
// empty array when the command answered an integer. The reply shapes of the workload's commands
// (engine.ShapeBulk for GET, ShapeOK for SET and MSET, ShapeInt for INCR and DEL, ShapeArray for
// MGET) each refuse it.
func wrongKind(reply []byte) []byte {
	if len(reply) > 0 && reply[0] == ':' {
		return wrongKindArray
	}
	return wrongKindInt
}

// replyState is the node's state of a slow command: the node is busy, with the reply held.
type replyState struct {
	faults ReplyFaults
	busy   bool
}

// replyFault applies a reply fault to the reply of the command just executed on c (its reply
// starts at n.out[mark:]), and reports whether the node became busy (Serve then stops).
func (n *Node) replyFault(c *Conn, name string, id uint64, mark int) {
	if n.rf.faults == nil {
		return
	}
	slow, garble := n.rf.faults.ReplyFault(name, n.args)
	switch garble {
	case GarbleMalformed:
		n.out = append(n.out[:mark], malformedReply...)
	case GarbleWrongKind:
		n.out = append(n.out[:mark], wrongKind(n.out[mark:])...)
	}
	if slow <= 0 {
		return
	}
	held := append([]byte(nil), n.out[mark:]...)
	n.out = n.out[:mark]
	n.rf.busy = true
	n.env.After(slow, func() bool {
		n.rf.busy = false
		if n.down {
			return false
		}
		if c.open {
			if id != 0 {
				n.env.Served(c, id, held)
			}
			c.link.Write(held)
		}
		if !n.paused {
			n.serveAll()
		}
		return true
	})
}

// serveAll serves every connection's queued requests, then the orderly closes that arrived,
// as when a pause ends.
func (n *Node) serveAll() {
	conns := append([]*Conn(nil), n.conns...)
	for _, c := range conns {
		if c.open && !n.rf.busy {
			n.Serve(c)
		}
	}
	for _, c := range conns {
		if c.open && c.eofPending && !n.rf.busy {
			n.ClientClosed(c)
		}
	}
}
