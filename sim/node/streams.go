package node

import (
	"strconv"
	"time"

	"github.com/respire-go/respire/netio/resp"
)

// XREAD, the read-only blocking command that blocking reads on replicas send (issue 17). The
// simulated nodes hold no streams (there is no XADD): XREAD finds no entry, answers a null
// array at once without BLOCK, and with BLOCK waits as a blocking pop does (the connection parses
// nothing more meanwhile) until its timeout expires, with a null array, or forever with BLOCK 0.
// The answer is recorded in the apply log like a blocking pop's; a connection that dies while
// blocked never had its XREAD applied. Nothing serves a blocked XREAD but its timeout.

func init() {
	commands["XREAD"] = command{"XREAD", -4}
}

var replyXReadSyntax = resp.ErrorValue("ERR syntax error")

// xread implements XREAD [COUNT n] [BLOCK ms] STREAMS key [key ...] id [id ...]. It reports
// whether the command was applied now.
func (n *Node) xread(c *Conn, args [][]byte, id uint64) bool {
	block := time.Duration(-1)
	i := 1
	for ; i < len(args) && !eqFold(args[i], "STREAMS"); i += 2 {
		if i+1 >= len(args) {
			n.reply(c, replyXReadSyntax)
			return false
		}
		v, err := strconv.ParseInt(string(args[i+1]), 10, 64)
		switch {
		case eqFold(args[i], "COUNT") && err == nil:
		case eqFold(args[i], "BLOCK") && err == nil && v >= 0 && v <= int64(time.Duration(1<<62)/time.Millisecond):
			block = time.Duration(v) * time.Millisecond
		default:
			n.reply(c, replyXReadSyntax)
			return false
		}
	}
	if rest := len(args) - i - 1; i >= len(args) || rest <= 0 || rest%2 != 0 {
		n.reply(c, replyXReadSyntax)
		return false
	}
	if block < 0 || n.lists.inExec {
		n.reply(c, resp.NullArray())
		return true
	}
	bc := &blockedClient{n: n, c: c, db: c.Session.DB, name: "XREAD", id: id, afterHandshake: n.lists.afterHandshake}
	c.blocked = bc
	if block > 0 {
		n.env.After(block, bc.expire)
	}
	return false
}
