package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// ownClusterConn is a fake Cluster node connection that also takes its callers' own groups and
// lets them read (OwnGroupOfferer, CallerReader). Its commands complete inside the offer, so a
// redirect has already sent a command on when its caller asks to read.
type ownClusterConn struct {
	*fakeClusterConn
	mu    sync.Mutex
	own   int        // groups taken as their caller's own
	reads []*Command // the lead of every ReadOwn
}

func (c *ownClusterConn) OfferOwnGroup(cmds []*Command) bool {
	c.mu.Lock()
	c.own++
	c.mu.Unlock()
	return c.OfferGroup(cmds)
}

func (c *ownClusterConn) MayRead(*Command) bool { return true }

func (c *ownClusterConn) ReadOwn(_ context.Context, lead, last *Command, _ time.Time) bool {
	c.mu.Lock()
	c.reads = append(c.reads, lead)
	c.mu.Unlock()
	return last.Stage() == StageDone
}

// ownClusterHarness is a clusterHarness whose connections are ownClusterConns, listed by node.
func ownClusterHarness(t *testing.T) (*clusterHarness, func(addr string) []*ownClusterConn) {
	h := newClusterHarness(t, 3)
	var mu sync.Mutex
	var conns []*ownClusterConn
	h.tr.wrap = func(c *fakeClusterConn) Conn {
		oc := &ownClusterConn{fakeClusterConn: c}
		mu.Lock()
		conns = append(conns, oc)
		mu.Unlock()
		return oc
	}
	return h, func(addr string) []*ownClusterConn {
		mu.Lock()
		defer mu.Unlock()
		var out []*ownClusterConn
		for _, c := range conns {
			if c.addr == addr {
				out = append(out, c)
			}
		}
		return out
	}
}

// ownCounts sums the own offers and the reads asked of conns.
func ownCounts(conns []*ownClusterConn) (own, reads int) {
	for _, c := range conns {
		c.mu.Lock()
		own, reads = own+c.own, reads+len(c.reads)
		c.mu.Unlock()
	}
	return own, reads
}

// submitReadOwn submits args with SubmitReadOwn and returns the command and what it reported.
func submitReadOwn(eng *Engine, args ...string) (*Command, bool) {
	var frame []byte
	frame = resp.AppendArrayHeader(frame, len(args))
	for _, a := range args {
		frame = resp.AppendBulkString(frame, a)
	}
	cmd := &Command{Name: strings.ToUpper(args[0]), Frame: frame, Done: func(*Command) {}}
	done, _ := eng.SubmitReadOwn(context.Background(), []*Command{cmd}, nil)
	return cmd, done
}

// TestClusterSubmitReadOwnAsksTheNodeConnection: on a Cluster engine SubmitReadOwn routes a
// command by its slot, as Submit does, offers it to the node's connection as its caller's own
// and asks that connection, and no other, to let the caller read. A command whose reply moved it
// (MOVED) is asked of the connection that took it first, and follows the redirect to the new
// owner, which takes it as a plain command; the caller is not asked to read there. Before any
// connection is ready, nobody is asked.
func TestClusterSubmitReadOwnAsksTheNodeConnection(t *testing.T) {
	h, connsOf := ownClusterHarness(t)
	if _, read := submitReadOwn(h.eng, "SET", "k", "v"); read {
		t.Fatal("SubmitReadOwn reported a read before any connection was ready")
	}
	for _, addr := range h.fc.order {
		if own, reads := ownCounts(connsOf(addr)); own != 0 || reads != 0 {
			t.Fatalf("%s: %d own offers, %d reads before discovery", addr, own, reads)
		}
	}
	h.do("SET", "warm", "1") // discovery, then every node's connection
	slot := int(topo.KeySlotString("k"))
	from := h.fc.owner[slot]
	cmd, read := submitReadOwn(h.eng, "SET", "k", "v1")
	if !read || replyText(cmd) != "OK" {
		t.Fatalf("SubmitReadOwn: read %v, reply %s", read, replyText(cmd))
	}
	for _, addr := range h.fc.order {
		own, reads := ownCounts(connsOf(addr))
		want := 0
		if addr == from {
			want = 1
		}
		if own != want || reads != want {
			t.Fatalf("%s: %d own offers and %d reads, want %d of each (the slot's owner is %s)", addr, own, reads, want, from)
		}
	}

	to := h.fc.order[0]
	if to == from {
		to = h.fc.order[1]
	}
	h.fc.mu.Lock()
	h.fc.owner[slot] = to
	h.fc.mu.Unlock()
	beforeFrom, _ := ownCounts(connsOf(from))
	beforeTo, readsTo := ownCounts(connsOf(to))
	n := h.sentCount()
	cmd, read = submitReadOwn(h.eng, "SET", "k", "v2")
	if !read || replyText(cmd) != "OK" || cmd.Redirects() != 1 {
		t.Fatalf("after the move: read %v, reply %s after %d redirects", read, replyText(cmd), cmd.Redirects())
	}
	if sent := h.sentSince(n); len(sent) != 2 || !strings.HasPrefix(sent[0], from+" ") || !strings.HasPrefix(sent[1], to+" ") {
		t.Fatalf("sends %v, want the old owner then the new", sent)
	}
	if own, _ := ownCounts(connsOf(from)); own != beforeFrom+1 {
		t.Fatalf("the old owner took %d own offers, want 1", own-beforeFrom)
	}
	if own, reads := ownCounts(connsOf(to)); own != beforeTo || reads != readsTo {
		t.Fatalf("the new owner took %d own offers and %d reads for the redirected command, want none", own-beforeTo, reads-readsTo)
	}
	if h.fc.data["k"] != "v2" {
		t.Fatalf("k holds %q after the redirected SET", h.fc.data["k"])
	}
}
