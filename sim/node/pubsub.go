package node

import (
	"maps"
	"slices"
	"sort"
	"strconv"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// connSubs is a node's view of one connection's subscriptions: the ground truth the pub/sub
// checkers compare the client's desired subscriptions with.
type connSubs struct {
	channels map[string]bool
	patterns map[string]bool
	shards   map[string]bool
}

func (s *connSubs) set(kind fsm.TopicKind) map[string]bool {
	switch kind {
	case fsm.TopicPattern:
		return s.patterns
	case fsm.TopicShard:
		return s.shards
	}
	return s.channels
}

// count is what Redis reports in acknowledgements: channels plus patterns, or shard channels.
func (s *connSubs) count(kind fsm.TopicKind) int {
	if kind == fsm.TopicShard {
		return len(s.shards)
	}
	return len(s.channels) + len(s.patterns)
}

func (s *connSubs) empty() bool {
	return len(s.channels) == 0 && len(s.patterns) == 0 && len(s.shards) == 0
}

// topics returns the connection's subscriptions, sorted.
func (s *connSubs) topics() []fsm.Topic {
	var out []fsm.Topic
	for kind := fsm.TopicChannel; kind <= fsm.TopicShard; kind++ {
		for name := range s.set(kind) {
			out = append(out, fsm.Topic{Kind: kind, Name: name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// nodePubSub is a node's pub/sub state: the subscriptions of each of its connections.
type nodePubSub struct {
	subs map[*Conn]*connSubs
	// peers are the nodes whose channels are this node's too (ShareChannels): a message
	// published on either reaches the subscribers of both.
	peers []*Node
}

// ShareChannels makes n and from one pub/sub bus: a message published on either node reaches
// the subscribers of both, as two endpoints of one managed database do while a MOVING notice
// moves the endpoint (the subscribers that stay on the old endpoint still hear what is published
// through the new one).
func (n *Node) ShareChannels(from *Node) {
	if n == from || slices.Contains(n.ps.peers, from) {
		return
	}
	n.ps.peers = append(n.ps.peers, from)
	from.ps.peers = append(from.ps.peers, n)
}

func (p *nodePubSub) of(c *Conn) *connSubs {
	if p.subs == nil {
		p.subs = map[*Conn]*connSubs{}
	}
	s := p.subs[c]
	if s == nil {
		s = &connSubs{channels: map[string]bool{}, patterns: map[string]bool{}, shards: map[string]bool{}}
		p.subs[c] = s
	}
	return s
}

// Subscriptions returns the topics c is subscribed to, sorted: the ground truth the pub/sub
// checkers compare the client's desired subscriptions with.
func (n *Node) Subscriptions(c *Conn) []fsm.Topic {
	if s := n.ps.subs[c]; s != nil {
		return s.topics()
	}
	return nil
}

// drop forgets the subscriptions of a connection the node closed.
func (p *nodePubSub) drop(c *Conn) { delete(p.subs, c) }

// subscribed reports whether c is in subscriber mode (on RESP2 it then accepts only the
// subscription commands, PING, QUIT and RESET).
func (p *nodePubSub) subscribed(c *Conn) bool {
	s := p.subs[c]
	return s != nil && !s.empty()
}

// pubsubCommand is one of the (un)subscription commands.
type pubsubCommand struct {
	name        string
	kind        fsm.TopicKind
	unsubscribe bool
}

var pubsubCommands = []pubsubCommand{
	{"SUBSCRIBE", fsm.TopicChannel, false}, {"PSUBSCRIBE", fsm.TopicPattern, false}, {"SSUBSCRIBE", fsm.TopicShard, false},
	{"UNSUBSCRIBE", fsm.TopicChannel, true}, {"PUNSUBSCRIBE", fsm.TopicPattern, true}, {"SUNSUBSCRIBE", fsm.TopicShard, true},
}

var ackWords = [2][3]string{{"subscribe", "psubscribe", "ssubscribe"}, {"unsubscribe", "punsubscribe", "sunsubscribe"}}

// replyNoPermChannels is Redis's ACL refusal of a subscription.
const replyNoPermChannels = "NOPERM this user has no permissions to access one of the channels used as arguments"

// execPubSub executes the pub/sub commands (SUBSCRIBE and its kin, PUBLISH, SPUBLISH) and the
// restrictions of subscriber mode; it reports whether it handled the request. It runs for every
// request, so it compares names without allocating.
func (n *Node) execPubSub(c *Conn) bool {
	args := n.args
	name := args[0]
	for _, pc := range pubsubCommands {
		if eqFold(name, pc.name) {
			n.subscribeCommand(c, pc.name, pc.kind, pc.unsubscribe)
			return true
		}
	}
	if shard := eqFold(name, "SPUBLISH"); shard || eqFold(name, "PUBLISH") {
		cmd := "PUBLISH"
		if shard {
			cmd = "SPUBLISH"
		}
		if len(args) != 3 {
			n.arity(c, cmd)
			return true
		}
		n.publish(c, shard, string(args[1]), string(args[2]))
		return true
	}
	if c.Session.Proto != 2 || !n.ps.subscribed(c) {
		return false
	}
	switch {
	case eqFold(name, "PING"):
		// Subscriber mode answers PING with a pub/sub-shaped array.
		payload := []byte{}
		if len(args) > 1 {
			payload = args[1]
		}
		n.out = resp.AppendArrayHeader(n.out, 2)
		n.out = resp.AppendBulkString(n.out, "pong")
		n.out = resp.AppendBulk(n.out, payload)
		return true
	case eqFold(name, "QUIT"), eqFold(name, "RESET"):
		return false
	}
	n.errorReply(c, "ERR Can't execute '"+lowerASCII(string(name))+"': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
	return true
}

// appendEventHeader starts a pub/sub event of n elements: a push on RESP3, an array on RESP2.
func appendEventHeader(dst []byte, n, proto int) []byte {
	if proto >= 3 {
		dst = append(dst, '>')
		dst = strconv.AppendInt(dst, int64(n), 10)
		return append(dst, '\r', '\n')
	}
	return resp.AppendArrayHeader(dst, n)
}

// subscribeCommand executes a (P|S)(UN)SUBSCRIBE: one acknowledgement per name, or one error
// reply when a subscribe-error fault refuses the whole command (as an ACL denial does).
func (n *Node) subscribeCommand(c *Conn, name string, kind fsm.TopicKind, unsubscribe bool) {
	args := n.args[1:]
	if !unsubscribe && len(args) == 0 {
		n.arity(c, name)
		return
	}
	if !unsubscribe {
		if reply, ok := n.env.SubscribeRefusal(kind); ok {
			if reply == "" {
				reply = replyNoPermChannels
			}
			n.errorReply(c, reply)
			return
		}
	}
	s := n.ps.of(c)
	set := s.set(kind)
	u := 0
	if unsubscribe {
		u = 1
	}
	word := ackWords[u][kind]
	names := make([]string, 0, len(args))
	for _, a := range args {
		names = append(names, string(a))
	}
	if unsubscribe && len(names) == 0 {
		names = slices.Sorted(maps.Keys(set)) // without arguments: every subscription of that kind
		if len(names) == 0 {
			n.out = appendEventHeader(n.out, 3, c.Session.Proto)
			n.out = resp.AppendBulkString(n.out, word)
			n.out = resp.AppendValue(n.out, resp.NullValue(), c.Session.Proto)
			n.out = resp.AppendValue(n.out, resp.Int(int64(s.count(kind))), c.Session.Proto)
			return
		}
	}
	for _, ch := range names {
		if unsubscribe {
			delete(set, ch)
		} else {
			set[ch] = true
		}
		n.out = appendEventHeader(n.out, 3, c.Session.Proto)
		n.out = resp.AppendBulkString(n.out, word)
		n.out = resp.AppendBulkString(n.out, ch)
		n.out = resp.AppendValue(n.out, resp.Int(int64(s.count(kind))), c.Session.Proto)
		n.env.Acked(c, fsm.Topic{Kind: kind, Name: ch}, unsubscribe)
	}
}

// publish delivers a message to the node's subscribers (channels and matching patterns, or shard
// channels), then to those of the nodes it shares its channels with (ShareChannels), and
// answers the number of receivers. Deliveries to other connections are written at once; one to
// the publishing connection itself goes with its replies.
func (n *Node) publish(c *Conn, shard bool, channel, payload string) {
	receivers := 0
	var conns []fsm.ConnID
	self := [1]*Node{n}
	for _, node := range append(self[:], n.ps.peers...) {
		n.deliver(node, c, shard, channel, payload, &receivers, &conns)
	}
	n.reply(c, resp.Int(int64(receivers)))
	n.env.Published(shard, channel, payload, conns)
}

// deliver writes a message published on n to the matching subscribers of node (n itself, or a
// node it shares its channels with), counting them in receivers and conns.
func (n *Node) deliver(node *Node, c *Conn, shard bool, channel, payload string, receivers *int, conns *[]fsm.ConnID) {
	for _, x := range node.conns {
		s := node.ps.subs[x]
		if s == nil || !x.open {
			continue
		}
		var frame []byte
		event := func(words ...string) { // one message event: kind, (pattern,) channel, payload
			frame = appendEventHeader(frame, len(words), x.Session.Proto)
			for _, w := range words {
				frame = resp.AppendBulkString(frame, w)
			}
			*receivers++
		}
		switch {
		case shard && s.shards[channel]:
			event("smessage", channel, payload)
		case !shard && s.channels[channel]:
			event("message", channel, payload)
		}
		if !shard {
			for _, p := range slices.Sorted(maps.Keys(s.patterns)) {
				if globMatch(p, channel) {
					event("pmessage", p, channel, payload)
				}
			}
		}
		if len(frame) == 0 {
			continue
		}
		*conns = append(*conns, x.id)
		if x == c {
			n.out = append(n.out, frame...)
		} else {
			x.link.Write(frame)
		}
	}
}

// globMatch reports whether s matches the Redis glob pattern p: '*' any run, '?' any byte,
// '[...]' a class (with '^' negation and 'a-z' ranges), '\' escaping the next byte.
func globMatch(p, s string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatch(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			p, s = p[1:], s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			end := 1
			negate := end < len(p) && p[end] == '^'
			if negate {
				end++
			}
			matched := false
			for end < len(p) && p[end] != ']' {
				switch {
				case p[end] == '\\' && end+1 < len(p):
					matched = matched || p[end+1] == s[0]
					end += 2
				case end+2 < len(p) && p[end+1] == '-' && p[end+2] != ']':
					lo, hi := p[end], p[end+2]
					if lo > hi {
						lo, hi = hi, lo
					}
					matched = matched || (lo <= s[0] && s[0] <= hi)
					end += 3
				default:
					matched = matched || p[end] == s[0]
					end++
				}
			}
			if negate {
				matched = !matched
			}
			if !matched {
				return false
			}
			if end < len(p) {
				end++ // the closing bracket
			}
			p, s = p[end:], s[1:]
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || p[0] != s[0] {
				return false
			}
			p, s = p[1:], s[1:]
		}
	}
	return len(s) == 0
}
