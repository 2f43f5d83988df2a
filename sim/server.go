package sim

import (
	"context"
	"net"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/node"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// server is a simulated node in the world: the node (sim/node), the world it calls back through
// node.Env, and the fault state the world keeps for it.
type server struct {
	*node.Node
	w *world
	// loseFault is a node-targeted lose-reply fault waiting for the next application command.
	loseFault *faultState
	// kills and pauses count the kill and pause windows holding the node now: windows on one
	// node compose as a union, so it is down while any kill holds it, and runs only when no
	// window holds it (holdKill, holdPause).
	kills, pauses int
	// newRunID says a kill window holding the node asked for a new run id at its restart.
	newRunID bool
	// addr is the address the node listens at: its name (ID) until a restart moves it to
	// moveTo, which a kill window holding the node asked for (kill.move_to).
	addr, moveTo string
	// holeOld says the move black-holes the old address instead of refusing it
	// (kill.old_address: blackhole); holes are the old addresses black-holed so far, and
	// holedMoves the values of moves each such move left (move.go).
	holeOld    bool
	holes      []string
	holedMoves []uint8
	// moves counts the node's moves: a connect that resolved before a move went to the old
	// address (simConn.moves).
	moves uint8
}

var _ node.Env = (*server)(nil)

func newServer(w *world, spec scenario.NodeSpec) *server {
	s := &server{w: w, addr: spec.ID}
	s.Node = node.New(spec.ID, spec.Password, s, &w.nodePlants)
	return s
}

// serverByHost returns the server an endpoint's host names, or nil: a Cluster's shard endpoint
// or DNS name resolves when dialed.
func (w *world) serverByHost(host string) *server {
	if w.cluster != nil {
		if n, ok := w.cluster.Resolve(host); ok {
			return w.serverOf(n)
		}
	}
	for _, s := range w.nodes {
		if s.ID() == host {
			return s
		}
	}
	return nil
}

// dns is the simulated DNS, the engine.Resolver the simulated transport dials through
// (engine.DialAddresses, the function netio's dialer runs): a Cluster's shard endpoint or DNS
// name, or a node's name, resolves to the node's address, which a kill with move_to changes at
// the restart. An address is not a name: the moved node's old address answers nothing.
type dns struct{ w *world }

var _ engine.Resolver = dns{}

// LookupHost implements engine.Resolver. The answer is immediate: lookups take no virtual time.
func (d dns) LookupHost(_ context.Context, host string) ([]string, error) {
	if d.w.cluster != nil {
		if n, ok := d.w.cluster.Resolve(host); ok {
			if s := d.w.serverOf(n); s != nil {
				return []string{s.addr}, nil
			}
		}
	}
	for _, s := range d.w.nodes {
		if s.ID() == host {
			return []string{s.addr}, nil
		}
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// resolver returns the resolver the world's dials go through: the simulated DNS.
func (w *world) resolver() engine.Resolver {
	if w.opts.resolver != nil {
		return w.opts.resolver
	}
	return dns{w}
}

// serverAt returns the server listening at the dial address addr (host:port), or nil.
func (w *world) serverAt(addr string) *server {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	for _, s := range w.nodes {
		if s.addr == host {
			return s
		}
	}
	return nil
}

// conns returns the node's open connections, in accept order.
func (s *server) conns() []*simConn {
	out := make([]*simConn, 0, len(s.Conns()))
	for _, c := range s.Conns() {
		out = append(out, c.Link().(*simConn))
	}
	return out
}

// funcAction runs a function from a scheduler event (node.Env.After).
type funcAction func() bool

func (f funcAction) Run(uint64) bool { return f() }

// Now implements node.Env.
func (s *server) Now() time.Duration { return s.w.k.now }

// After implements node.Env.
func (s *server) After(d time.Duration, fn func() bool) { s.w.k.after(d, funcAction(fn), 0) }

// HandshakeError implements node.Env: the reply of a handshake_error fault on the node.
func (s *server) HandshakeError() (string, bool) {
	for _, fs := range s.w.active {
		if fs.kind == "handshake_error" && fs.node == s {
			return fs.reply, true
		}
	}
	return "", false
}

// CommandError implements node.CommandFaults: the reply of the first active command_error
// fault on the node that refuses the command.
func (s *server) CommandError(name string, args [][]byte) (string, bool) {
	for _, fs := range s.w.active {
		if fs.kind == "command_error" && fs.node == s && fs.f.CommandError.Matches(name, args) {
			if name == "" {
				name = "unknown"
			}
			s.w.tr.End(s.w.tr.Begin("fault refused").Uint("fault", uint64(fs.idx)).Str("node", s.ID()).Word(name))
			return fs.f.CommandError.Reply, true
		}
	}
	return "", false
}

// ReplyFault implements node.ReplyFaults: the busy time of the first active slow_reply fault
// on the node that names the command, and how the first malformed_reply fault that names it
// garbles its reply.
func (s *server) ReplyFault(name string, args [][]byte) (time.Duration, node.Garble) {
	var slow time.Duration
	garble := node.GarbleNone
	for _, fs := range s.w.active {
		if fs.node != s {
			continue
		}
		switch {
		case fs.kind == "slow_reply" && slow == 0 && fs.f.SlowReply.Matches(name, args):
			slow = fs.extra
			s.w.tr.End(s.w.tr.Begin("fault slow").Uint("fault", uint64(fs.idx)).Str("node", s.ID()).Word(name))
		case fs.kind == "malformed_reply" && garble == node.GarbleNone && fs.f.MalformedReply.Matches(name, args):
			what := "fault malformed"
			garble = node.GarbleMalformed
			if fs.f.MalformedReply.WrongKind {
				garble, what = node.GarbleWrongKind, "fault wrong-kind"
			}
			s.w.tr.End(s.w.tr.Begin(what).Uint("fault", uint64(fs.idx)).Str("node", s.ID()).Word(name))
		}
	}
	return slow, garble
}

// SubscribeRefusal implements node.Env: the reply of a subscribe_error fault on the node that
// refuses kind.
func (s *server) SubscribeRefusal(kind fsm.TopicKind) (string, bool) {
	for _, fs := range s.w.active {
		if fs.kind == "subscribe_error" && fs.node == s && fs.f.SubscribeError.Refuses(kind) {
			return fs.reply, true
		}
	}
	return "", false
}

// Applied implements node.Env: the apply log, and its trace line.
func (s *server) Applied(c *node.Conn, id uint64, name string, afterHandshake bool) {
	w := s.w
	w.res.Applies = append(w.res.Applies, record.Apply{Node: s.ID(), CmdID: id, Name: name, Conn: c.ID(), At: w.k.now, AfterHandshake: afterHandshake})
	if w.seg != nil && id != 0 {
		w.seg.applied(id)
	}
	b := w.tr.Begin("apply")
	b = b.Str("node", s.ID())
	b = b.Uint("conn", uint64(c.ID()))
	b = b.Uint("id", id)
	b = b.Word(name)
	if !afterHandshake {
		b = b.Word("before-handshake")
	}
	w.tr.End(b)
}

// Served implements node.Env.
func (s *server) Served(c *node.Conn, id uint64, reply []byte) {
	s.w.recordReply(&s.w.res.Served, id, c.ID(), reply)
}

// Published implements node.Env: the pub/sub records, and a trace line.
func (s *server) Published(shard bool, channel, payload string, conns []fsm.ConnID) {
	w := s.w
	if w.ps == nil {
		return
	}
	w.ps.rec.Published = append(w.ps.rec.Published, record.Published{At: w.k.now, Node: s.ID(), Shard: shard, Channel: channel,
		Payload: payload, Conns: conns})
	w.tr.End(w.tr.Begin("pubsub published").Str("node", s.ID()).Quoted("channel", channel).
		Quoted("payload", payload).Int("receivers", len(conns)))
}

// Acked implements node.Env: the pub/sub records.
func (s *server) Acked(c *node.Conn, t fsm.Topic, unsubscribe bool) {
	w := s.w
	if w.ps == nil {
		return
	}
	w.ps.rec.ServerAcks = append(w.ps.rec.ServerAcks, record.ServerAck{At: w.k.now, Node: s.ID(), Conn: c.ID(), Topic: t, Unsubscribe: unsubscribe})
}

// Planted implements node.Env.
func (s *server) Planted(name string, id uint64) { s.w.tr.Plant(name, id) }

// The node side of a simulated connection: simConn is the node's Link.

var _ node.Link = (*simConn)(nil)

// Inbound implements node.Link: the bytes the up pipe delivered and the node has not parsed.
func (c *simConn) Inbound() ([]byte, uint64) {
	p := &c.up
	return p.data[p.rd:p.ready], p.base + uint64(p.rd)
}

// Consume implements node.Link.
func (c *simConn) Consume(n int) {
	p := &c.up
	if p.dead {
		return
	}
	p.rd += n
	p.compact()
}

// Write implements node.Link.
func (c *simConn) Write(b []byte) { c.down.write(b) }

// LosesReply implements node.Link: a lose-reply fault armed on the connection or its node.
func (c *simConn) LosesReply() bool { return c.loseFault != nil || c.node.loseFault != nil }

// LoseReply implements node.Link: the fault ends, and the node side closes with a reset that
// arrives after the replies already in flight.
func (c *simConn) LoseReply() {
	fs := c.loseFault
	if fs == nil {
		fs = c.node.loseFault
		c.node.loseFault = nil
	}
	c.loseFault = nil
	fs.finish()
	w := c.w
	w.tr.End(w.tr.Begin("conn reset").Uint("conn", uint64(c.id)).Str("reason", "lose-reply"))
	c.up.kill()
	if !c.clientClosed {
		c.down.commit(ctlRST)
	}
	c.node.Remove(&c.srv)
}

// Hangup implements node.Link: the node side closes in order, the replies written so far, then
// EOF.
func (c *simConn) Hangup() {
	c.up.kill()
	if !c.clientClosed {
		c.down.commit(ctlEOF)
	}
	c.node.Remove(&c.srv)
}

// Detached implements node.Link: the faults armed on the connection wait for their target's
// next one, and the connection is forgotten once its client side is closed too.
func (c *simConn) Detached() {
	c.w.releaseArms(c)
	c.maybeFinished()
}
