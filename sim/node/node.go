// Package node is the simulated Redis server: a standalone Redis 7.0 node that reads requests
// from the bytes its connections deliver (resp.ParseCommand), executes them against an
// in-memory dataset and writes its replies in each connection's protocol (resp.AppendValue).
//
// A node knows nothing of the network or the scheduler: the world gives it an Env (virtual time,
// timers, the faults that act inside a server, and the records the checkers read), and each
// connection a Link (its bytes in both directions, the command ids the client attached out of
// band, and how it closes). So one node type serves every runtime of the simulator, and a
// Cluster or Sentinel node is another file here over the same two seams.
//
// node.go has the server and its strings, lists.go its lists, blocking pops and transactions,
// and pubsub.go its subscriptions and messages.
package node

import (
	"errors"
	"strconv"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// nodeVersion is the Redis version the simulated nodes report: the project's Redis 7.0.
const nodeVersion = "7.0.15"

// databases is the number of logical databases of a node (SELECT 0..15).
const databases = 16

// staleReadAge is how long ago the current value of a key must have been written for the
// stale-read plant to answer a GET with the previous one: long enough that the writer has seen
// its reply, so that a linearizability checker can tell.
const staleReadAge = 100 * time.Millisecond

// Env is a node's world: virtual time and timers, the faults that act inside a server, its
// plants' trace, and the records the checkers read.
type Env interface {
	// Now returns the virtual time.
	Now() time.Duration
	// After runs fn in a scheduler event of its own, d of virtual time later. fn reports whether
	// it did anything.
	After(d time.Duration, fn func() bool)
	// HandshakeError returns the error reply a fault makes HELLO and AUTH answer, if any.
	HandshakeError() (string, bool)
	// SubscribeRefusal returns the error reply a fault makes subscriptions of kind answer, if
	// any; an empty reply stands for Redis's ACL refusal (NOPERM).
	SubscribeRefusal(kind fsm.TopicKind) (string, bool)
	// Applied records that the node executed command id, which arrived on c (the apply log).
	Applied(c *Conn, id uint64, name string, afterHandshake bool)
	// Served records the reply the node wrote for command id.
	Served(c *Conn, id uint64, reply []byte)
	// Published records a message the node delivered, and the connections it went to.
	Published(shard bool, channel, payload string, conns []fsm.ConnID)
	// Acked records an (un)subscription the node acknowledged.
	Acked(c *Conn, t fsm.Topic, unsubscribe bool)
	// Planted records that a plant acted on command id.
	Planted(name string, id uint64)
}

// Link is the network side of one connection, as its node sees it.
type Link interface {
	// Inbound returns the bytes that reached the node and are not parsed yet, and the stream
	// offset of the first of them.
	Inbound() ([]byte, uint64)
	// Consume marks the first n inbound bytes parsed.
	Consume(n int)
	// Command returns the command id the client attached, out of band, to the request that
	// starts at stream offset start, and whether the client wrote it after its handshake: 0 and
	// true for a request without one.
	Command(start uint64) (id uint64, afterHandshake bool)
	// Write sends b to the client.
	Write(b []byte)
	// Hangup closes the connection in order: the replies written so far, then the end of stream.
	// Like Reset and LoseReply, it closes the node's side too (Node.Remove).
	Hangup()
	// Reset resets the connection at once.
	Reset(reason string)
	// LosesReply reports whether a lose-reply fault waits for the connection's next application
	// command.
	LosesReply() bool
	// LoseReply fires that fault: the node dropped the command's reply and wrote the replies
	// before it, and the connection resets after them.
	LoseReply()
	// Detached reports that the node closed its side of the connection.
	Detached()
}

// Plants are the node's deliberate bugs, positive controls of the checkers that read the apply
// log and the replies. Each acts once and is then cleared; the nodes of a run share one set.
type Plants struct {
	// EarlyCommand records one application command as arriving before its connection's
	// handshake finished.
	EarlyCommand bool
	// OKWithoutApply answers one write OK without applying it.
	OKWithoutApply bool
	// StaleRead answers one GET with the key's previous value.
	StaleRead bool
}

// Node is a simulated standalone Redis server.
//
// A node that is killed resets every connection and refuses new ones until it restarts; it keeps
// its dataset across the restart, modelling a persistent server (RDB/AOF). A paused node (SIGSTOP)
// accepts connections (the kernel does) but parses nothing until it resumes.
type Node struct {
	env      Env
	plants   *Plants
	id       string
	password string
	down     bool
	paused   bool
	// conns are the node-side open connections, in accept order.
	conns []*Conn
	dbs   [databases]map[string]*entry
	// lists are the list keys and blocked clients (lists.go).
	lists nodeLists
	// ps are the connections' pub/sub subscriptions (pubsub.go).
	ps nodePubSub
	// cl is the node's membership of a simulated Cluster (cluster.go), or nil.
	cl *member
	// sn is the node's part in a simulated Sentinel deployment (sentinel.go), or nil.
	sn *sentinelRole

	// cmdFaults is env's CommandFaults, or nil (commandfault.go).
	cmdFaults CommandFaults
	// rf is the state of reply faults (replyfault.go).
	rf replyState

	args    [][]byte
	out     []byte
	name    [24]byte
	elems   []resp.Value
	closing bool

	// runID is the run id of the node's current process, or "" for its first (runid.go);
	// incarnation counts its restarts as a new process.
	runID       string
	incarnation int

	// announced is the address the node's deployment announces for it (address.go), or "".
	announced string
}

// Conn is a node's side of one connection.
type Conn struct {
	// Session is what the connection's commands set (the node writes it).
	Session Session
	id      fsm.ConnID
	link    Link
	open    bool
	// eofPending records an orderly close that arrived while the node was paused.
	eofPending bool
	// blocked is the blocking pop the connection waits in; nothing more is parsed meanwhile.
	blocked *blockedClient
	// tx is the connection's WATCH/MULTI state, or nil.
	tx *txState
	// asking: the connection sent ASKING, which lets its next command into an importing slot.
	asking bool
}

// Session is a connection's protocol, authentication, database and name, as its commands set
// them.
type Session struct {
	// Proto is the protocol version: 2, or 3 after HELLO 3.
	Proto int
	// Authed says the connection authenticated (or the node needs no password).
	Authed bool
	// DB is the selected database.
	DB int
	// Name is the client name (HELLO SETNAME, CLIENT SETNAME).
	Name string
	// Maint says the connection opted in to maintenance notifications (maint.go).
	Maint bool
}

// Open reports whether the node's side of the connection is open.
func (c *Conn) Open() bool { return c.open }

// ID returns the connection's id.
func (c *Conn) ID() fsm.ConnID { return c.id }

// Link returns the connection's network side.
func (c *Conn) Link() Link { return c.link }

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

// New returns a node named id, requiring password when it is not empty, in env. Its plants are
// shared with the run's other nodes.
func New(id, password string, env Env, plants *Plants) *Node {
	n := &Node{env: env, plants: plants, id: id, password: password}
	n.cmdFaults, _ = env.(CommandFaults)
	n.rf.faults, _ = env.(ReplyFaults)
	for i := range n.dbs {
		n.dbs[i] = make(map[string]*entry)
	}
	return n
}

// ID returns the node's id.
func (n *Node) ID() string { return n.id }

// Down reports whether the node is killed.
func (n *Node) Down() bool { return n.down }

// Paused reports whether the node is paused.
func (n *Node) Paused() bool { return n.paused }

// Conns returns the node's open connections, in accept order. The slice is the node's: it
// changes as connections come and go.
func (n *Node) Conns() []*Conn { return n.conns }

// Accept opens the node's side of connection id, whose network side is link, in c.
func (n *Node) Accept(c *Conn, id fsm.ConnID, link Link) {
	*c = Conn{Session: Session{Proto: 2, Authed: n.password == ""}, id: id, link: link, open: true}
	n.conns = append(n.conns, c)
}

// Remove closes the node's side of c, and tells its link.
func (n *Node) Remove(c *Conn) {
	if !c.open {
		return
	}
	c.open = false
	for i, x := range n.conns {
		if x == c {
			n.conns = append(n.conns[:i], n.conns[i+1:]...)
			break
		}
	}
	n.ps.drop(c)
	c.link.Detached()
}

// Kill resets every connection; new connects are refused until Restart.
func (n *Node) Kill() {
	n.down = true
	n.paused = false
	for len(n.conns) > 0 {
		n.conns[0].link.Reset("node-killed")
	}
}

// Restart brings a killed node back with its dataset.
func (n *Node) Restart() { n.down = false }

// Pause stops the node from parsing anything until Resume.
func (n *Node) Pause() { n.paused = true }

// Resume ends a pause: queued requests are processed, then orderly closes that arrived.
func (n *Node) Resume() {
	n.paused = false
	conns := append([]*Conn(nil), n.conns...)
	for _, c := range conns {
		if c.open {
			n.Serve(c)
		}
	}
	for _, c := range conns {
		if c.open && c.eofPending {
			n.ClientClosed(c)
		}
	}
}

// ClientClosed handles the client's orderly close (FIN) of c: the node closes its side, once it
// runs again if it is paused. (The client closed its own side first, and reads nothing more.)
func (n *Node) ClientClosed(c *Conn) {
	if n.paused || n.rf.busy {
		c.eofPending = true
		return
	}
	n.Remove(c)
}

// Serve parses and executes every complete request c delivered, writing the replies as one chunk.
func (n *Node) Serve(c *Conn) {
	if n.paused || n.rf.busy || !c.open {
		return
	}
	in, base := c.link.Inbound()
	used := 0
	n.out = n.out[:0]
	n.closing = false
	for used < len(in) && c.open && !n.closing && c.blocked == nil && !n.rf.busy {
		size, err := resp.ParseCommand(in[used:], &n.args, nil)
		if errors.Is(err, resp.ErrIncomplete) {
			break
		}
		if err != nil {
			// Redis answers a malformed request with an error and closes the connection.
			n.errorReply(c, "ERR Protocol error: "+err.Error())
			n.closing = true
			break
		}
		start := base + uint64(used)
		used += size
		id, afterHandshake := c.link.Command(start)
		if len(n.args) == 0 {
			continue
		}
		mark := len(n.out)
		n.exec(c, id, afterHandshake)
		if id != 0 && len(n.out) > mark {
			n.env.Served(c, id, n.out[mark:])
		}
	}
	c.link.Consume(used)
	if len(n.out) > 0 && c.open {
		c.link.Write(n.out)
	}
	n.out = n.out[:0]
	if n.closing && c.open {
		c.link.Hangup()
	}
	n.closing = false
}

// canonical returns the command a name stands for, its name static and upper-case, without
// allocating.
func (n *Node) canonical(b []byte) (command, bool) {
	if len(b) > len(n.name) {
		return command{}, false
	}
	for i, ch := range b {
		if 'a' <= ch && ch <= 'z' {
			ch -= 'a' - 'A'
		}
		n.name[i] = ch
	}
	cmd, ok := commands[string(n.name[:len(b)])]
	return cmd, ok
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

func (n *Node) reply(c *Conn, v resp.Value) {
	n.out = resp.AppendValue(n.out, v, c.Session.Proto)
}

func (n *Node) errorReply(c *Conn, msg string) { n.reply(c, resp.ErrorValue(msg)) }

func (n *Node) arity(c *Conn, name string) {
	n.errorReply(c, "ERR wrong number of arguments for '"+lowerASCII(name)+"' command")
}

// exec executes one request. id is the command id the client attached out of band (0 for
// handshake and untracked commands).
func (n *Node) exec(c *Conn, id uint64, afterHandshake bool) {
	args := n.args
	cmd, known := n.canonical(args[0])
	canonical := cmd.name
	if !c.Session.Authed && canonical != "AUTH" && canonical != "HELLO" {
		n.reply(c, replyNoAuth)
		return
	}
	if n.commandError(c, canonical) {
		return
	}
	if n.cl != nil && n.clusterIntercept(c, cmd, known) {
		return
	}
	if n.sn != nil && n.sentinelIntercept(c, cmd, known) {
		return
	}
	if n.intercept(c, cmd, known, id, afterHandshake) {
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
	lose := false
	if id != 0 {
		lose = c.link.LosesReply()
		if n.plants.EarlyCommand {
			n.plants.EarlyCommand = false
			afterHandshake = false
			n.env.Planted("command-before-handshake", id)
		}
	}
	applied := false
	if cmd.arityOK(len(args)) {
		applied = n.execKnown(c, canonical, args, id)
	} else {
		n.arity(c, canonical)
	}
	if id != 0 && applied {
		n.env.Applied(c, id, canonical, afterHandshake)
	}
	n.replyFault(c, canonical, id, mark)
	if lose {
		// The reply is lost: drop it, then reset the connection after the replies before it.
		n.out = n.out[:mark]
		if len(n.out) > 0 {
			c.link.Write(n.out)
			n.out = n.out[:0]
		}
		c.link.LoseReply()
	}
}

// command is a command the node knows: its canonical (static) name, and its arity, Redis's way:
// n for exactly n arguments (the name included), -n for at least n.
type command struct {
	name  string
	arity int
}

// commands maps upper-case names to the commands the node knows (lists.go adds its own).
var commands = map[string]command{}

func init() {
	for _, cmd := range []command{{"PING", -1}, {"HELLO", -1}, {"AUTH", -1}, {"SELECT", 2}, {"CLIENT", -2},
		{"GET", 2}, {"SET", -3}, {"DEL", -2}, {"EXISTS", -2}, {"INCR", 2}, {"MGET", -2}, {"MSET", -3}, {"QUIT", -1}, {"INFO", -1}} {
		commands[cmd.name] = cmd
	}
}

// arityOK reports whether argc arguments suit the command; PING takes at most one argument and
// MSET pairs, as Redis checks in those commands. AUTH checks its own, after a handshake fault.
func (cmd command) arityOK(argc int) bool {
	switch {
	case cmd.name == "PING" && argc > 2, cmd.name == "MSET" && argc%2 == 0:
		return false
	case cmd.arity > 0:
		return argc == cmd.arity
	}
	return argc >= -cmd.arity
}

func (n *Node) unknownCommand(c *Conn, args [][]byte) {
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
func (n *Node) execKnown(c *Conn, name string, args [][]byte, id uint64) bool {
	switch name {
	case "PING":
		if len(args) == 2 {
			n.reply(c, resp.Bulk(args[1]))
		} else {
			n.reply(c, replyPong)
		}
	case "QUIT":
		n.reply(c, replyOK)
		n.closing = true
	case "INFO":
		if n.sn != nil {
			// A Sentinel process: its data nodes answered in replicaIntercept.
			n.unknownCommand(c, args)
			return false
		}
		n.reply(c, resp.BulkString(n.infoServer()))
		return false
	case "HELLO":
		n.hello(c, args)
		return false
	case "AUTH":
		n.auth(c, args)
		return false
	case "SELECT":
		db, err := strconv.Atoi(string(args[1]))
		if err != nil {
			n.reply(c, replyNotInt)
			return false
		}
		if db < 0 || db >= databases {
			n.reply(c, replyDBRange)
			return false
		}
		c.Session.DB = db
		n.reply(c, replyOK)
	case "CLIENT":
		n.client(c, args)
	case "LPUSH", "RPUSH", "LPOP", "RPOP", "LLEN", "BLPOP", "BRPOP", "MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH":
		return n.execLists(c, name, args, id)
	case "XREAD":
		return n.xread(c, args, id)
	case "GET":
		n.get(c, args[1], id)
	case "SET":
		return n.set(c, args, id)
	case "DEL", "EXISTS":
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
		n.incr(c, args[1])
	case "MGET":
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
func (n *Node) skipWrite(c *Conn, id uint64) bool {
	if id == 0 || !n.plants.OKWithoutApply {
		return false
	}
	n.plants.OKWithoutApply = false
	n.env.Planted("ok-without-apply", id)
	n.reply(c, replyOK)
	return true
}

func (n *Node) hello(c *Conn, args [][]byte) {
	proto := c.Session.Proto
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
	if text, ok := n.env.HandshakeError(); ok {
		n.errorReply(c, text)
		return
	}
	authed := c.Session.Authed
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
	c.Session.Authed = true
	c.Session.Proto = proto
	if name != "" {
		c.Session.Name = name
	}
	n.reply(c, resp.MapOf(
		resp.BulkString("server"), resp.BulkString("redis"),
		resp.BulkString("version"), resp.BulkString(nodeVersion),
		resp.BulkString("proto"), resp.Int(int64(proto)),
		resp.BulkString("id"), resp.Int(int64(c.id)),
		resp.BulkString("mode"), resp.BulkString(n.mode()),
		resp.BulkString("role"), resp.BulkString("master"),
		resp.BulkString("modules"), resp.ArrayOf(),
	))
}

// checkAuth checks a username and password against the node's default user.
func (n *Node) checkAuth(user, pass []byte) bool {
	if string(user) != "default" {
		return false
	}
	return n.password == "" || string(pass) == n.password
}

func (n *Node) auth(c *Conn, args [][]byte) {
	if text, ok := n.env.HandshakeError(); ok {
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
	c.Session.Authed = true
	n.reply(c, replyOK)
}

func (n *Node) client(c *Conn, args [][]byte) {
	switch sub := args[1]; {
	case eqFold(sub, "SETNAME"):
		if len(args) != 3 {
			n.arity(c, "CLIENT|SETNAME")
			return
		}
		c.Session.Name = string(args[2])
		n.reply(c, replyOK)
	case eqFold(sub, "GETNAME"):
		if c.Session.Name == "" {
			n.reply(c, replyNull)
		} else {
			n.reply(c, resp.BulkString(c.Session.Name))
		}
	case eqFold(sub, "ID"):
		n.reply(c, resp.Int(int64(c.id)))
	case eqFold(sub, "KILL"):
		n.clientKill(c, args)
	case eqFold(sub, "MAINT_NOTIFICATIONS") && n.maintAcks():
		n.maintOptIn(c, args)
	default:
		// Redis 7.0 has no CLIENT SETINFO (added in 7.2).
		n.errorReply(c, "ERR unknown subcommand '"+string(args[1])+"'. Try CLIENT HELP.")
	}
}

// entry returns the entry of key in c's database, creating a tombstone if needed.
func (n *Node) entry(c *Conn, key []byte) *entry {
	db := n.dbs[c.Session.DB]
	if e := db[string(key)]; e != nil {
		n.expire(e)
		return e
	}
	e := &entry{}
	db[string(key)] = e
	return e
}

// lookup returns the live entry of key, or nil.
func (n *Node) lookup(c *Conn, key []byte) *entry {
	e := n.dbs[c.Session.DB][string(key)]
	if e == nil {
		return nil
	}
	n.expire(e)
	if !e.exists {
		return nil
	}
	return e
}

func (n *Node) expire(e *entry) {
	if e.exists && e.expireAt != 0 && n.env.Now() >= e.expireAt {
		n.write(e, nil, false)
	}
}

// write sets (exists) or deletes a key, remembering the previous state.
func (n *Node) write(e *entry, val []byte, exists bool) {
	e.prev, e.val = e.val, e.prev
	e.prevExists, e.hasPrev = e.exists, true
	e.val = append(e.val[:0], val...)
	e.exists = exists
	e.writtenAt = n.env.Now()
	e.expireAt = 0
	e.version++
}

func (n *Node) get(c *Conn, key []byte, id uint64) {
	e := n.lookup(c, key)
	if id != 0 && n.plants.StaleRead {
		if e2 := n.dbs[c.Session.DB][string(key)]; e2 != nil && e2.hasPrev && n.env.Now()-e2.writtenAt >= staleReadAge &&
			(e2.exists != e2.prevExists || string(e2.val) != string(e2.prev)) {
			n.plants.StaleRead = false
			n.env.Planted("stale-read", id)
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
func (n *Node) set(c *Conn, args [][]byte, id uint64) bool {
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
		e.expireAt = n.env.Now() + ttl
	case keepTTL:
		e.expireAt = oldExpire
	}
	if !get {
		n.reply(c, replyOK)
	}
	return true
}

func (n *Node) incr(c *Conn, key []byte) {
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
