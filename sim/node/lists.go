package node

import (
	"math"
	"strconv"
	"time"

	"github.com/respire-go/respire/netio/resp"
)

// The simulated node's lists, blocking pops and transactions: what dedicated connections carry.
//
// Lists live in their own keyspace per database: list commands on a key that holds a string
// answer WRONGTYPE, but string commands do not look at lists (the workloads never mix them).
// Every write of a key, string or list, advances the key's version; WATCH remembers versions
// and EXEC aborts (null reply) if one changed.
//
// BLPOP and BRPOP pop at once when a list has an element. Otherwise the connection blocks: the
// node parses nothing more from it until a push serves it (blocked clients of a key are served
// in the order they blocked, right after the pushing command, as Redis does) or its timeout
// expires (a null reply). A blocking pop is recorded in the apply log when it is answered; one
// whose connection dies while blocked took nothing and is never applied.

func init() {
	for _, cmd := range []command{{"LPUSH", -3}, {"RPUSH", -3}, {"LPOP", 2}, {"RPOP", 2}, {"LLEN", 2},
		{"BLPOP", -3}, {"BRPOP", -3}, {"MULTI", -1}, {"EXEC", -1}, {"DISCARD", -1}, {"WATCH", -2}, {"UNWATCH", -1}} {
		commands[cmd.name] = cmd
	}
}

var (
	replyQueued     = resp.SimpleString("QUEUED")
	replyWrongType  = resp.ErrorValue("WRONGTYPE Operation against a key holding the wrong kind of value")
	replyExecAbort  = resp.ErrorValue("EXECABORT Transaction discarded because of previous errors.")
	replyNestedTx   = resp.ErrorValue("ERR MULTI calls can not be nested")
	replyWatchInTx  = resp.ErrorValue("ERR WATCH inside MULTI is not allowed")
	replyExecNoTx   = resp.ErrorValue("ERR EXEC without MULTI")
	replyDiscardNo  = resp.ErrorValue("ERR DISCARD without MULTI")
	replyBadTimeout = resp.ErrorValue("ERR timeout is not a float or out of range")
	replyNegTimeout = resp.ErrorValue("ERR timeout is negative")
)

// list is one list key: its elements, head first, and its version.
type list struct {
	elems   [][]byte
	version uint64
}

// blockedClient is a connection waiting in BLPOP or BRPOP.
type blockedClient struct {
	n              *Node
	c              *Conn
	db             int
	keys           []string
	right          bool
	name           string
	id             uint64
	afterHandshake bool
	done           bool
}

// nodeLists is a node's list keyspace and blocked clients.
type nodeLists struct {
	dbs [databases]map[string]*list
	// waiting holds the blocked clients of each key, in blocking order ("<db>:<key>").
	waiting map[string][]*blockedClient
	// inExec: a transaction is executing; blocking pops answer at once.
	inExec bool
	// afterHandshake is the handshake attribution of the request being executed.
	afterHandshake bool
	buf            []byte
}

// txState is one connection's transaction state.
type txState struct {
	multi   bool
	aborted bool
	queued  []queuedCommand
	watched []watchedKey
}

type queuedCommand struct {
	name           string
	args           [][]byte
	id             uint64
	afterHandshake bool
}

type watchedKey struct {
	db      int
	key     string
	version uint64
}

func waitKey(db int, key string) string { return strconv.Itoa(db) + ":" + key }

// getList returns the list at key in c's database, or nil; create makes an empty one.
func (n *Node) getList(c *Conn, key []byte, create bool) *list {
	db := &n.lists.dbs[c.Session.DB]
	if *db == nil {
		if !create {
			return nil
		}
		*db = make(map[string]*list)
	}
	l := (*db)[string(key)]
	if l == nil && create {
		l = &list{}
		(*db)[string(key)] = l
	}
	return l
}

// keyVersion is the version of key in database db: its string and list writes together.
func (n *Node) keyVersion(db int, key string) uint64 {
	var v uint64
	if e := n.dbs[db][key]; e != nil {
		n.expire(e)
		v += e.version
	}
	if m := n.lists.dbs[db]; m != nil {
		if l := m[key]; l != nil {
			v += l.version
		}
	}
	return v
}

// holdsString reports whether key holds a live string (list commands then answer WRONGTYPE).
func (n *Node) holdsString(c *Conn, key []byte) bool { return n.lookup(c, key) != nil }

// intercept runs before every request: it remembers the request's handshake attribution (for
// a pop that blocks) and, inside MULTI, queues the request (QUEUED) or refuses it (and marks the
// transaction for EXECABORT). It reports whether it handled the request: not for EXEC and
// DISCARD, which run.
func (n *Node) intercept(c *Conn, cmd command, known bool, id uint64, afterHandshake bool) bool {
	n.lists.afterHandshake = afterHandshake
	tx := c.tx
	if tx == nil || !tx.multi {
		return false
	}
	args := n.args
	switch name := cmd.name; {
	case known && (name == "EXEC" || name == "DISCARD"):
		return false
	case !known:
		tx.aborted = true
		n.unknownCommand(c, args)
		return true
	case name == "MULTI":
		n.reply(c, replyNestedTx)
		return true
	case name == "WATCH":
		tx.aborted = true
		n.reply(c, replyWatchInTx)
		return true
	case !cmd.arityOK(len(args)):
		tx.aborted = true
		n.arity(c, name)
		return true
	}
	q := queuedCommand{name: cmd.name, id: id, afterHandshake: afterHandshake, args: make([][]byte, len(args))}
	for i, a := range args {
		q.args[i] = append([]byte(nil), a...)
	}
	tx.queued = append(tx.queued, q)
	n.reply(c, replyQueued)
	return true
}

// execLists runs the list, blocking and transaction commands. It reports whether the command
// was applied now (a blocked pop is applied when it is answered).
func (n *Node) execLists(c *Conn, name string, args [][]byte, id uint64) bool {
	switch name {
	case "LPUSH", "RPUSH", "LPOP", "RPOP", "LLEN":
		if n.holdsString(c, args[1]) {
			n.reply(c, replyWrongType)
			return false
		}
	}
	switch name {
	case "MULTI":
		if c.tx == nil {
			c.tx = &txState{}
		}
		c.tx.multi = true
		n.reply(c, replyOK)
	case "EXEC":
		return n.execTx(c)
	case "DISCARD":
		if c.tx == nil || !c.tx.multi {
			n.reply(c, replyDiscardNo)
			return false
		}
		c.tx = nil
		n.reply(c, replyOK)
	case "WATCH":
		if c.tx == nil {
			c.tx = &txState{}
		}
		for _, k := range args[1:] {
			key := string(k)
			c.tx.watched = append(c.tx.watched, watchedKey{db: c.Session.DB, key: key, version: n.keyVersion(c.Session.DB, key)})
		}
		n.reply(c, replyOK)
	case "UNWATCH":
		if c.tx != nil {
			c.tx.watched = nil
		}
		n.reply(c, replyOK)
	case "LPUSH", "RPUSH":
		l := n.getList(c, args[1], true)
		for _, v := range args[2:] {
			elem := append([]byte(nil), v...)
			if name == "LPUSH" {
				l.elems = append(l.elems, nil)
				copy(l.elems[1:], l.elems)
				l.elems[0] = elem
			} else {
				l.elems = append(l.elems, elem)
			}
		}
		l.version++
		n.reply(c, resp.Int(int64(len(l.elems))))
		n.serveBlocked(c.Session.DB, string(args[1]))
	case "LPOP", "RPOP":
		l := n.getList(c, args[1], false)
		if l == nil || len(l.elems) == 0 {
			n.reply(c, replyNull)
			return true
		}
		n.reply(c, resp.Bulk(l.pop(name == "RPOP")))
	case "LLEN":
		count := 0
		if l := n.getList(c, args[1], false); l != nil {
			count = len(l.elems)
		}
		n.reply(c, resp.Int(int64(count)))
	case "BLPOP", "BRPOP":
		return n.blockingPop(c, name, args, id)
	}
	return true
}

// pop removes and returns the head (or the tail) of l.
func (l *list) pop(tail bool) []byte {
	var v []byte
	if tail {
		v = l.elems[len(l.elems)-1]
		l.elems = l.elems[:len(l.elems)-1]
	} else {
		v = l.elems[0]
		copy(l.elems, l.elems[1:])
		l.elems = l.elems[:len(l.elems)-1]
	}
	l.version++
	return v
}

// blockingPop implements BLPOP and BRPOP key [key ...] timeout.
func (n *Node) blockingPop(c *Conn, name string, args [][]byte, id uint64) bool {
	secs, err := strconv.ParseFloat(string(args[len(args)-1]), 64)
	switch {
	case err != nil || math.IsNaN(secs) || math.IsInf(secs, 0):
		n.reply(c, replyBadTimeout)
		return false
	case secs < 0:
		n.reply(c, replyNegTimeout)
		return false
	}
	keys := args[1 : len(args)-1]
	for _, k := range keys {
		if n.holdsString(c, k) {
			n.reply(c, replyWrongType)
			return false
		}
	}
	right := name == "BRPOP"
	for _, k := range keys {
		if l := n.getList(c, k, false); l != nil && len(l.elems) > 0 {
			n.reply(c, resp.ArrayOf(resp.Bulk(k), resp.Bulk(l.pop(right))))
			return true
		}
	}
	if n.lists.inExec {
		// Inside a transaction a blocking pop never blocks.
		n.reply(c, resp.NullArray())
		return true
	}
	bc := &blockedClient{n: n, c: c, db: c.Session.DB, right: right, name: name, id: id, afterHandshake: n.lists.afterHandshake}
	for _, k := range keys {
		bc.keys = append(bc.keys, string(k))
	}
	if n.lists.waiting == nil {
		n.lists.waiting = make(map[string][]*blockedClient)
	}
	for _, k := range bc.keys {
		wk := waitKey(bc.db, k)
		q := n.lists.waiting[wk][:0]
		for _, other := range n.lists.waiting[wk] {
			if !other.done && other.c.open {
				q = append(q, other)
			}
		}
		n.lists.waiting[wk] = append(q, bc)
	}
	c.blocked = bc
	if secs > 0 {
		n.env.After(time.Duration(secs*float64(time.Second)), bc.expire)
	}
	return false
}

// serveBlocked serves the clients blocked on key, in blocking order, while the list has
// elements: each gets its element as its reply, and its connection resumes.
func (n *Node) serveBlocked(db int, key string) {
	wk := waitKey(db, key)
	q := n.lists.waiting[wk]
	if len(q) == 0 {
		return
	}
	l := n.lists.dbs[db][key]
	for len(q) > 0 && l != nil && len(l.elems) > 0 {
		bc := q[0]
		q = q[1:]
		if bc.done || !bc.c.open {
			continue
		}
		v := l.pop(bc.right)
		n.answerBlocked(bc, resp.ArrayOf(resp.BulkString(key), resp.Bulk(v)))
	}
	if len(q) == 0 {
		delete(n.lists.waiting, wk)
	} else {
		n.lists.waiting[wk] = q
	}
}

// answerBlocked writes a blocked client's reply, records the pop in the apply log, and lets its
// connection go on with the requests that queued up behind it.
func (n *Node) answerBlocked(bc *blockedClient, v resp.Value) {
	bc.done = true
	c := bc.c
	c.blocked = nil
	n.lists.buf = resp.AppendValue(n.lists.buf[:0], v, c.Session.Proto)
	c.link.Write(n.lists.buf)
	if bc.id != 0 {
		n.env.Applied(c, bc.id, bc.name, bc.afterHandshake)
	}
	n.env.After(0, func() bool {
		// Parse what the connection sent while it was blocked.
		if !c.open || c.blocked != nil {
			return false
		}
		n.Serve(c)
		return true
	})
}

// expire ends a blocking pop whose timeout expired with a null reply.
func (bc *blockedClient) expire() bool {
	n := bc.n
	if bc.done || !bc.c.open {
		return false
	}
	if n.paused {
		// A stopped server times nothing out: try again once it may have resumed.
		n.env.After(10*time.Millisecond, bc.expire)
		return false
	}
	n.answerBlocked(bc, resp.NullArray())
	return true
}

// execTx implements EXEC: EXECABORT after a queue error, a null reply when a watched key
// changed, otherwise every queued command in order, their replies in one array. Each queued
// command with an id is recorded in the apply log as it runs.
func (n *Node) execTx(c *Conn) bool {
	tx := c.tx
	if tx == nil || !tx.multi {
		n.reply(c, replyExecNoTx)
		return false
	}
	c.tx = nil
	if tx.aborted {
		n.reply(c, replyExecAbort)
		return true
	}
	for _, wk := range tx.watched {
		if n.keyVersion(wk.db, wk.key) != wk.version {
			n.reply(c, resp.NullArray())
			return true
		}
	}
	n.out = resp.AppendArrayHeader(n.out, len(tx.queued))
	n.lists.inExec = true
	for i := range tx.queued {
		q := &tx.queued[i]
		applied := n.execKnown(c, q.name, q.args, q.id)
		if q.id != 0 && applied {
			n.env.Applied(c, q.id, q.name, q.afterHandshake)
		}
	}
	n.lists.inExec = false
	return true
}
