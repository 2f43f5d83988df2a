package sim

import (
	"errors"
	"strconv"
	"time"

	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/sim/scenario"
)

// nodeVersion is the Redis version the simulated nodes report: the project's Redis 7.0.
const nodeVersion = "7.0.15"

// databases is the number of logical databases of a node (SELECT 0..15).
const databases = 16

// staleReadAge is how long ago the current value of a key must have been written for the
// stale-read plant to answer a GET with the previous one: long enough that the writer has seen
// its reply, so that a linearizability checker can tell.
const staleReadAge = 100 * time.Millisecond

// node is a simulated standalone Redis server. It reads requests with resp.ParseCommand from the
// bytes its connections deliver, executes them against an in-memory dataset, and writes replies
// with resp.AppendValue in each connection's protocol.
//
// A node that is killed resets every connection and refuses new ones until it restarts; it keeps
// its dataset across the restart, modelling a persistent server (RDB/AOF). A paused node (SIGSTOP)
// accepts connections (the kernel does) but parses nothing until it resumes.
type node struct {
	w        *world
	id       string
	password string
	down     bool
	paused   bool
	// conns are the node-side open connections, in accept order.
	conns []*simConn
	dbs   [databases]map[string]*entry
	// loseFault is a node-targeted lose-reply fault waiting for the next application command.
	loseFault *faultState
	// lists are the list keys and blocked clients (node_blocking.go).
	lists nodeLists
	// ps are the connections' pub/sub subscriptions (node_pubsub.go).
	ps nodePubSub

	args    [][]byte
	out     []byte
	name    [24]byte
	elems   []resp.Value
	closing bool
}

// serverState is the node's view of one connection.
type serverState struct {
	proto  int
	authed bool
	db     int
	name   string
	// eofPending records an orderly close that arrived while the node was paused.
	eofPending bool
	// blocked is the blocking pop the connection waits in; nothing more is parsed meanwhile.
	blocked *blockedClient
	// tx is the connection's WATCH/MULTI state, or nil.
	tx *txState
}

// entry is one key of a node's dataset. Keys are never removed from the map (a deleted or expired
// key is a tombstone), so the map stays bounded by the key space and its iteration is never needed.
type entry struct {
	val        []byte
	exists     bool
	prev       []byte
	prevExists bool
	hasPrev    bool
	writtenAt  time.Duration
	expireAt   time.Duration
	// version counts the key's writes (WATCH compares it).
	version uint64
}

var (
	replyOK        = resp.SimpleString("OK")
	replyPong      = resp.SimpleString("PONG")
	replyNull      = resp.NullValue()
	replyNoAuth    = resp.ErrorValue("NOAUTH Authentication required.")
	replyHelloAuth = resp.ErrorValue("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
	replyWrongPass = resp.ErrorValue("WRONGPASS invalid username-password pair or user is disabled.")
	replyNoPass    = resp.ErrorValue("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	replyNoProto   = resp.ErrorValue("NOPROTO unsupported protocol version")
	replyProtoNaN  = resp.ErrorValue("ERR Protocol version is not an integer or out of range")
	replySyntax    = resp.ErrorValue("ERR syntax error")
	replyNotInt    = resp.ErrorValue("ERR value is not an integer or out of range")
	replyOverflow  = resp.ErrorValue("ERR increment or decrement would overflow")
	replyDBRange   = resp.ErrorValue("ERR DB index is out of range")
	replyBadExpire = resp.ErrorValue("ERR invalid expire time in 'set' command")
)

func newNode(w *world, spec scenario.NodeSpec) *node {
	n := &node{w: w, id: spec.ID, password: spec.Password}
	for i := range n.dbs {
		n.dbs[i] = make(map[string]*entry)
	}
	return n
}

// accept opens the node side of c.
func (n *node) accept(c *simConn) {
	c.srvOpen = true
	c.srv = serverState{proto: 2, authed: n.password == ""}
	n.conns = append(n.conns, c)
	n.w.armPending(c)
}

// remove closes the node side of c.
func (n *node) remove(c *simConn) {
	if !c.srvOpen {
		return
	}
	c.srvOpen = false
	for i, x := range n.conns {
		if x == c {
			n.conns = append(n.conns[:i], n.conns[i+1:]...)
			break
		}
	}
	n.w.releaseArms(c)
	n.ps.drop(c)
	c.maybeFinished()
}

// kill resets every connection; new connects are refused until restart.
func (n *node) kill() {
	n.down = true
	n.paused = false
	for len(n.conns) > 0 {
		n.conns[0].cut("node-killed")
	}
}

// restart brings a killed node back with its dataset.
func (n *node) restart() { n.down = false }

// resume ends a pause: queued requests are processed, then orderly closes that arrived.
func (n *node) resume() {
	n.paused = false
	conns := append([]*simConn(nil), n.conns...)
	for _, c := range conns {
		if c.srvOpen {
			n.serve(c)
		}
	}
	for _, c := range conns {
		if c.srvOpen && c.srv.eofPending {
			n.closeOrderly(c)
		}
	}
}

// closeOrderly handles the client's orderly close (FIN) of c.
func (n *node) closeOrderly(c *simConn) {
	if n.paused {
		c.srv.eofPending = true
		return
	}
	c.down.kill()
	n.remove(c)
}

// serve parses and executes every complete request c delivered, writing the replies as one chunk.
func (n *node) serve(c *simConn) {
	if n.paused || !c.srvOpen {
		return
	}
	p := &c.up
	n.out = n.out[:0]
	n.closing = false
	for p.rd < p.ready && c.srvOpen && !n.closing && c.srv.blocked == nil {
		used, err := resp.ParseCommand(p.data[p.rd:p.ready], &n.args, nil)
		if errors.Is(err, resp.ErrIncomplete) {
			break
		}
		if err != nil {
			// Redis answers a malformed request with an error and closes the connection.
			n.errorReply(c, "ERR Protocol error: "+err.Error())
			n.closing = true
			break
		}
		start := p.base + uint64(p.rd)
		p.rd += used
		id, afterHandshake := c.takeFrame(start)
		if len(n.args) == 0 {
			continue
		}
		mark := len(n.out)
		n.exec(c, id, afterHandshake)
		if id != 0 && len(n.out) > mark {
			n.w.recordReply(&n.w.res.Served, id, c, n.out[mark:])
		}
	}
	p.compact()
	if len(n.out) > 0 && c.srvOpen {
		c.down.write(n.out)
	}
	n.out = n.out[:0]
	if n.closing && c.srvOpen {
		c.serverCloses()
	}
	n.closing = false
}

// canonical returns the static upper-case name of a known command, without allocating.
func (n *node) canonical(b []byte) (string, bool) {
	if len(b) > len(n.name) {
		return "", false
	}
	for i, ch := range b {
		if 'a' <= ch && ch <= 'z' {
			ch -= 'a' - 'A'
		}
		n.name[i] = ch
	}
	name, ok := commandNames[string(n.name[:len(b)])]
	return name, ok
}

// eqFold reports whether b equals the upper-case ASCII word s, ignoring case.
func eqFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i, ch := range b {
		if 'a' <= ch && ch <= 'z' {
			ch -= 'a' - 'A'
		}
		if ch != s[i] {
			return false
		}
	}
	return true
}

func (n *node) reply(c *simConn, v resp.Value) {
	n.out = resp.AppendValue(n.out, v, c.srv.proto)
}

func (n *node) errorReply(c *simConn, msg string) { n.reply(c, resp.ErrorValue(msg)) }

func (n *node) arity(c *simConn, name string) {
	n.errorReply(c, "ERR wrong number of arguments for '"+lowerASCII(name)+"' command")
}

// exec executes one request. id is the command id the client attached out of band (0 for
// handshake and untracked commands).
func (n *node) exec(c *simConn, id uint64, afterHandshake bool) {
	args := n.args
	canonical, known := n.canonical(args[0])
	if !c.srv.authed && canonical != "AUTH" && canonical != "HELLO" {
		n.reply(c, replyNoAuth)
		return
	}
	if n.intercept(c, canonical, known, id, afterHandshake) {
		return
	}
	if n.execPubSub(c) {
		return
	}
	if !known {
		n.unknownCommand(c, args)
		return
	}
	mark := len(n.out)
	w := n.w
	lose := false
	if id != 0 {
		if c.loseFault != nil || n.loseFault != nil {
			lose = true
		}
		if w.plants.early && !w.plants.earlyUsed {
			w.plants.earlyUsed = true
			afterHandshake = false
			w.tracePlant("command-before-handshake", id)
		}
	}
	applied := n.execKnown(c, canonical, args, id)
	if id != 0 && applied {
		w.recordApply(n, c, id, canonical, afterHandshake)
	}
	if lose {
		// The reply is lost: drop it, then reset the connection after the replies before it.
		n.out = n.out[:mark]
		fs := c.loseFault
		if fs == nil {
			fs = n.loseFault
			n.loseFault = nil
		}
		c.loseFault = nil
		if len(n.out) > 0 {
			c.down.write(n.out)
			n.out = n.out[:0]
		}
		fs.finish()
		c.resetAfterReplies("lose-reply")
	}
}

// commandNames maps upper-case command names to their canonical (static) strings.
var commandNames = map[string]string{
	"PING": "PING", "HELLO": "HELLO", "AUTH": "AUTH", "SELECT": "SELECT", "CLIENT": "CLIENT",
	"GET": "GET", "SET": "SET", "DEL": "DEL", "EXISTS": "EXISTS", "INCR": "INCR", "MGET": "MGET",
	"MSET": "MSET", "QUIT": "QUIT",
}

func (n *node) unknownCommand(c *simConn, args [][]byte) {
	msg := "ERR unknown command '" + string(args[0]) + "', with args beginning with: "
	for i, a := range args[1:] {
		if i == 16 {
			break
		}
		msg += "'" + string(a) + "' "
	}
	n.errorReply(c, msg)
}

// execKnown runs a known command and reports whether it was applied (executed, whatever its
// reply): the commands that reach the apply log when they carry an id.
func (n *node) execKnown(c *simConn, name string, args [][]byte, id uint64) bool {
	switch name {
	case "PING":
		switch len(args) {
		case 1:
			n.reply(c, replyPong)
		case 2:
			n.reply(c, resp.Bulk(args[1]))
		default:
			n.arity(c, name)
			return false
		}
	case "QUIT":
		n.reply(c, replyOK)
		n.closing = true
	case "HELLO":
		n.hello(c, args)
		return false
	case "AUTH":
		n.auth(c, args)
		return false
	case "SELECT":
		if len(args) != 2 {
			n.arity(c, name)
			return false
		}
		db, err := strconv.Atoi(string(args[1]))
		if err != nil {
			n.reply(c, replyNotInt)
			return false
		}
		if db < 0 || db >= databases {
			n.reply(c, replyDBRange)
			return false
		}
		c.srv.db = db
		n.reply(c, replyOK)
	case "CLIENT":
		n.client(c, args)
	case "LPUSH", "RPUSH", "LPOP", "RPOP", "LLEN", "BLPOP", "BRPOP", "MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH":
		return n.execLists(c, name, args, id)
	case "GET":
		if len(args) != 2 {
			n.arity(c, name)
			return false
		}
		n.get(c, args[1], id)
	case "SET":
		return n.set(c, args, id)
	case "DEL", "EXISTS":
		if len(args) < 2 {
			n.arity(c, name)
			return false
		}
		count := int64(0)
		for _, k := range args[1:] {
			if e := n.lookup(c, k); e != nil {
				count++
				if name == "DEL" {
					n.write(e, nil, false)
				}
			}
		}
		n.reply(c, resp.Int(count))
	case "INCR":
		if len(args) != 2 {
			n.arity(c, name)
			return false
		}
		n.incr(c, args[1])
	case "MGET":
		if len(args) < 2 {
			n.arity(c, name)
			return false
		}
		n.elems = n.elems[:0]
		for _, k := range args[1:] {
			if e := n.lookup(c, k); e != nil {
				n.elems = append(n.elems, resp.Bulk(e.val))
			} else {
				n.elems = append(n.elems, replyNull)
			}
		}
		n.reply(c, resp.ArrayOf(n.elems...))
	case "MSET":
		if len(args) < 3 || len(args)%2 == 0 {
			n.arity(c, name)
			return false
		}
		if n.skipWrite(c, id) {
			return false
		}
		for i := 1; i < len(args); i += 2 {
			n.write(n.entry(c, args[i]), args[i+1], true)
		}
		n.reply(c, replyOK)
	}
	return true
}

// skipWrite implements the ok-without-apply plant: the first acknowledged write of the run is
// answered OK without being applied (and without reaching the apply log).
func (n *node) skipWrite(c *simConn, id uint64) bool {
	pl := &n.w.plants
	if id == 0 || !pl.okWithoutApply || pl.okWithoutApplyUsed {
		return false
	}
	pl.okWithoutApplyUsed = true
	n.w.tracePlant("ok-without-apply", id)
	n.reply(c, replyOK)
	return true
}

func (n *node) hello(c *simConn, args [][]byte) {
	proto := c.srv.proto
	if len(args) >= 2 {
		v, err := strconv.Atoi(string(args[1]))
		if err != nil {
			n.reply(c, replyProtoNaN)
			return
		}
		if v != 2 && v != 3 {
			n.reply(c, replyNoProto)
			return
		}
		proto = v
	}
	if text, ok := n.w.handshakeReply(n); ok {
		n.errorReply(c, text)
		return
	}
	authed := c.srv.authed
	name := ""
	for i := 2; i < len(args); i++ {
		switch opt := args[i]; {
		case eqFold(opt, "AUTH") && i+2 < len(args):
			if !n.checkAuth(args[i+1], args[i+2]) {
				n.reply(c, replyWrongPass)
				return
			}
			authed = true
			i += 2
		case eqFold(opt, "SETNAME") && i+1 < len(args):
			name = string(args[i+1])
			i++
		default:
			n.errorReply(c, "ERR Syntax error in HELLO option '"+string(args[i])+"'")
			return
		}
	}
	if !authed {
		n.reply(c, replyHelloAuth)
		return
	}
	c.srv.authed = true
	c.srv.proto = proto
	if name != "" {
		c.srv.name = name
	}
	n.reply(c, resp.MapOf(
		resp.BulkString("server"), resp.BulkString("redis"),
		resp.BulkString("version"), resp.BulkString(nodeVersion),
		resp.BulkString("proto"), resp.Int(int64(proto)),
		resp.BulkString("id"), resp.Int(int64(c.id)),
		resp.BulkString("mode"), resp.BulkString("standalone"),
		resp.BulkString("role"), resp.BulkString("master"),
		resp.BulkString("modules"), resp.ArrayOf(),
	))
}

// checkAuth checks a username and password against the node's default user.
func (n *node) checkAuth(user, pass []byte) bool {
	if string(user) != "default" {
		return false
	}
	return n.password == "" || string(pass) == n.password
}

func (n *node) auth(c *simConn, args [][]byte) {
	if text, ok := n.w.handshakeReply(n); ok {
		n.errorReply(c, text)
		return
	}
	switch len(args) {
	case 2:
		if n.password == "" {
			n.reply(c, replyNoPass)
			return
		}
		if string(args[1]) != n.password {
			n.reply(c, replyWrongPass)
			return
		}
	case 3:
		if !n.checkAuth(args[1], args[2]) {
			n.reply(c, replyWrongPass)
			return
		}
	default:
		n.arity(c, "AUTH")
		return
	}
	c.srv.authed = true
	n.reply(c, replyOK)
}

func (n *node) client(c *simConn, args [][]byte) {
	if len(args) < 2 {
		n.arity(c, "CLIENT")
		return
	}
	switch sub := args[1]; {
	case eqFold(sub, "SETNAME"):
		if len(args) != 3 {
			n.arity(c, "CLIENT|SETNAME")
			return
		}
		c.srv.name = string(args[2])
		n.reply(c, replyOK)
	case eqFold(sub, "GETNAME"):
		if c.srv.name == "" {
			n.reply(c, replyNull)
		} else {
			n.reply(c, resp.BulkString(c.srv.name))
		}
	case eqFold(sub, "ID"):
		n.reply(c, resp.Int(int64(c.id)))
	default:
		// Redis 7.0 has no CLIENT SETINFO (added in 7.2).
		n.errorReply(c, "ERR unknown subcommand '"+string(args[1])+"'. Try CLIENT HELP.")
	}
}

// entry returns the entry of key in c's database, creating a tombstone if needed.
func (n *node) entry(c *simConn, key []byte) *entry {
	db := n.dbs[c.srv.db]
	if e := db[string(key)]; e != nil {
		n.expire(e)
		return e
	}
	e := &entry{}
	db[string(key)] = e
	return e
}

// lookup returns the live entry of key, or nil.
func (n *node) lookup(c *simConn, key []byte) *entry {
	e := n.dbs[c.srv.db][string(key)]
	if e == nil {
		return nil
	}
	n.expire(e)
	if !e.exists {
		return nil
	}
	return e
}

func (n *node) expire(e *entry) {
	if e.exists && e.expireAt != 0 && n.w.k.now >= e.expireAt {
		n.write(e, nil, false)
	}
}

// write sets (exists) or deletes a key, remembering the previous state.
func (n *node) write(e *entry, val []byte, exists bool) {
	e.prev, e.val = e.val, e.prev
	e.prevExists, e.hasPrev = e.exists, true
	e.val = append(e.val[:0], val...)
	e.exists = exists
	e.writtenAt = n.w.k.now
	e.expireAt = 0
	e.version++
}

func (n *node) get(c *simConn, key []byte, id uint64) {
	e := n.lookup(c, key)
	pl := &n.w.plants
	if id != 0 && pl.staleRead && !pl.staleReadUsed {
		if e2 := n.dbs[c.srv.db][string(key)]; e2 != nil && e2.hasPrev && n.w.k.now-e2.writtenAt >= staleReadAge &&
			(e2.exists != e2.prevExists || string(e2.val) != string(e2.prev)) {
			pl.staleReadUsed = true
			n.w.tracePlant("stale-read", id)
			if e2.prevExists {
				n.reply(c, resp.Bulk(e2.prev))
			} else {
				n.reply(c, replyNull)
			}
			return
		}
	}
	if e == nil {
		n.reply(c, replyNull)
		return
	}
	n.reply(c, resp.Bulk(e.val))
}

// set implements SET key value [NX|XX] [GET] [EX s|PX ms|KEEPTTL].
func (n *node) set(c *simConn, args [][]byte, id uint64) bool {
	if len(args) < 3 {
		n.arity(c, "SET")
		return false
	}
	var nx, xx, get, keepTTL bool
	var ttl time.Duration
	for i := 3; i < len(args); i++ {
		switch opt := args[i]; {
		case eqFold(opt, "NX"):
			nx = true
		case eqFold(opt, "XX"):
			xx = true
		case eqFold(opt, "GET"):
			get = true
		case eqFold(opt, "KEEPTTL"):
			keepTTL = true
		case eqFold(opt, "EX") || eqFold(opt, "PX"):
			if i+1 >= len(args) || ttl != 0 {
				n.reply(c, replySyntax)
				return false
			}
			v, err := strconv.ParseInt(string(args[i+1]), 10, 64)
			if err != nil {
				n.reply(c, replyNotInt)
				return false
			}
			if v <= 0 {
				n.reply(c, replyBadExpire)
				return false
			}
			unit := time.Second
			if eqFold(opt, "PX") {
				unit = time.Millisecond
			}
			ttl = time.Duration(v) * unit
			i++
		default:
			n.reply(c, replySyntax)
			return false
		}
	}
	if (nx && xx) || (keepTTL && ttl != 0) {
		n.reply(c, replySyntax)
		return false
	}
	if !get && !nx && !xx && n.skipWrite(c, id) {
		return false
	}
	e := n.entry(c, args[1])
	existed := e.exists
	if get {
		if existed {
			n.reply(c, resp.Bulk(e.val))
		} else {
			n.reply(c, replyNull)
		}
	}
	if (nx && existed) || (xx && !existed) {
		if !get {
			n.reply(c, replyNull)
		}
		return true
	}
	oldExpire := e.expireAt
	n.write(e, args[2], true)
	switch {
	case ttl != 0:
		e.expireAt = n.w.k.now + ttl
	case keepTTL:
		e.expireAt = oldExpire
	}
	if !get {
		n.reply(c, replyOK)
	}
	return true
}

func (n *node) incr(c *simConn, key []byte) {
	e := n.entry(c, key)
	var v int64
	if e.exists {
		var err error
		if v, err = strconv.ParseInt(string(e.val), 10, 64); err != nil {
			n.reply(c, replyNotInt)
			return
		}
	}
	if v == 1<<63-1 {
		n.reply(c, replyOverflow)
		return
	}
	v++
	var tmp [20]byte
	expire := e.expireAt
	n.write(e, strconv.AppendInt(tmp[:0], v, 10), true)
	e.expireAt = expire
	n.reply(c, resp.Int(v))
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if 'A' <= ch && ch <= 'Z' {
			b[i] = ch + 'a' - 'A'
		}
	}
	return string(b)
}
