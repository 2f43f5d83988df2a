package node

import (
	"strconv"

	"github.com/respire-go/respire/netio/resp"
)

// clientKill runs CLIENT KILL with the new-style filters the fences use: CLIENT KILL ID <id>.
// Like Redis, it answers the number of connections killed (0 when none has that id: it is
// already gone) and closes the killed connection at once, so that whatever it had not executed
// yet, in the node's buffers or still on the way, never runs. Other filters are not simulated.
func (n *Node) clientKill(c *Conn, args [][]byte) {
	if len(args) != 4 || !eqFold(args[2], "ID") {
		n.errorReply(c, "ERR syntax error")
		return
	}
	id, err := strconv.ParseUint(string(args[3]), 10, 64)
	if err != nil {
		n.reply(c, replyNotInt)
		return
	}
	killed := int64(0)
	for _, x := range n.conns {
		if x.open && uint64(x.id) == id {
			killed++
			if x == c {
				// Redis closes the caller after the reply.
				n.closing = true
				break
			}
			x.link.Reset("client-killed")
			break
		}
	}
	n.reply(c, resp.Int(killed))
}
