package client_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// Tests of a Cluster client's single commands read by their caller (engine.Engine.SubmitReadOwn
// on a Cluster engine): a lone caller reads its reply on the connection of the node serving the
// command's slot, and a reply that redirects the command, read by the caller, sends it on
// without holding the caller in a read that nothing answers.

// redirectFakes is a scripted two-node Cluster: node A serves slots 0-8191 and node B the
// rest. A GET is answered "A:<key>" or "B:<key>" by the node serving the key's slot, and with
// MOVED by the other. Slots in moved now belong to B (both nodes and CLUSTER SLOTS say so);
// keys in ask get ASK from A, and B serves them after ASKING; keys in tryAgain get one
// TRYAGAIN from A first. gets counts each node's GETs by key.
type redirectFakes struct {
	mu       sync.Mutex
	a, b     *redistest.Fake
	moved    map[int]bool
	ask      map[string]bool
	tryAgain map[string]bool
	asking   map[*redistest.FakeConn]bool
	gets     map[string]int // "A k" -> count
}

func startRedirectFakes(t *testing.T) *redirectFakes {
	f := &redirectFakes{moved: map[int]bool{}, ask: map[string]bool{}, tryAgain: map[string]bool{},
		asking: map[*redistest.FakeConn]bool{}, gets: map[string]int{}}
	f.a = redistest.StartFake(t, func(c *redistest.FakeConn, args []string) { f.serve("A", c, args) })
	f.b = redistest.StartFake(t, func(c *redistest.FakeConn, args []string) { f.serve("B", c, args) })
	return f
}

// ownerOf returns the node serving slot. Called with mu held.
func (f *redirectFakes) ownerOf(slot int) string {
	if slot >= 8192 || f.moved[slot] {
		return "B"
	}
	return "A"
}

func (f *redirectFakes) addr(node string) string {
	if node == "A" {
		return f.a.Addr()
	}
	return f.b.Addr()
}

// slots is the CLUSTER SLOTS reply. Called with mu held.
func (f *redirectFakes) slots() resp.Value {
	entry := func(from, to int, node string) resp.Value {
		fk := f.a
		if node == "B" {
			fk = f.b
		}
		return resp.ArrayOf(resp.Int(int64(from)), resp.Int(int64(to)),
			resp.ArrayOf(resp.BulkString(fk.Host()), resp.Int(int64(fk.Port())), resp.BulkString(strings.Repeat(strings.ToLower(node), 40))))
	}
	moved := make([]int, 0, len(f.moved))
	for s := range f.moved {
		moved = append(moved, s)
	}
	sort.Ints(moved)
	var out []resp.Value
	from := 0
	for _, s := range moved {
		if s > from {
			out = append(out, entry(from, s-1, "A"))
		}
		out = append(out, entry(s, s, "B"))
		from = s + 1
	}
	if from < 8192 {
		out = append(out, entry(from, 8191, "A"))
	}
	return resp.ArrayOf(append(out, entry(8192, 16383, "B"))...)
}

func (f *redirectFakes) serve(node string, c *redistest.FakeConn, args []string) {
	if c.Standard(args) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	name := strings.ToUpper(args[0])
	asking := f.asking[c]
	delete(f.asking, c)
	switch {
	case name == "CLUSTER" && len(args) > 1 && strings.ToUpper(args[1]) == "SLOTS":
		c.Reply(f.slots())
	case name == "ASKING":
		f.asking[c] = true
		c.Reply(resp.SimpleString("OK"))
	case name == "GET" && len(args) == 2:
		key := args[1]
		slot := int(topo.KeySlotString(key))
		f.gets[node+" "+key]++
		owner := f.ownerOf(slot)
		switch {
		case node == "A" && f.ask[key]:
			c.ErrorReply(fmt.Sprintf("ASK %d %s", slot, f.addr("B")))
		case node == "B" && f.ask[key] && asking:
			c.Reply(resp.BulkString("B:" + key))
		case node == "A" && f.tryAgain[key]:
			delete(f.tryAgain, key)
			c.ErrorReply("TRYAGAIN Multiple keys request during rehashing of slot")
		case owner != node:
			c.ErrorReply(fmt.Sprintf("MOVED %d %s", slot, f.addr(owner)))
		default:
			c.Reply(resp.BulkString(node + ":" + key))
		}
	default:
		c.ErrorReply("ERR unknown command '" + args[0] + "'")
	}
}

// getsOf returns the GETs of key that node received.
func (f *redirectFakes) getsOf(node, key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets[node+" "+key]
}

// keysOnA returns n keys whose slots node A serves, each in a slot of its own.
func keysOnA(n int) []string {
	var out []string
	seen := map[int]bool{}
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprintf("key:%d", i)
		if s := int(topo.KeySlotString(k)); s < 8192 && !seen[s] {
			seen[s] = true
			out = append(out, k)
		}
	}
	return out
}

// TestClusterSingleCommandsReadByTheirCaller: a lone caller of a Cluster client reads its
// commands' replies on its own goroutine, and a redirect it reads sends the command on at once:
// after MOVED, ASK and TRYAGAIN the GET returns the right node's value well within its command
// timeout (2 s), each node received the command once per redirect, and the caller read the
// redirecting reply itself (an attempt whose redirect the reader goroutine read, after a pause
// longer than the idle side is kept, is repeated with a fresh key, up to five times). Without
// the read's stop once the command has left its connection, the caller would sit in a read of
// the old node until the command timeout.
func TestClusterSingleCommandsReadByTheirCaller(t *testing.T) {
	f := startRedirectFakes(t)
	var mu sync.Mutex
	readers := map[int]int{}
	c, err := client.Connect(context.Background(), client.Options{
		UseCluster: true, Endpoints: []client.Endpoint{{Host: f.a.Host(), Port: f.a.Port()}},
		CommandTimeout: 2 * time.Second, Dialer: readersDialer(&mu, readers)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	me := callerGoroutine()
	keys := keysOnA(64)
	warm, fresh := keys[0], keys[1:]
	// warmUp GETs warm with ctx until the caller reads a reply itself.
	warmUp := func(ctx context.Context) {
		t.Helper()
		for i := 0; ; i++ {
			r := readsOf(&mu, readers, me)
			if v, _, err := c.Get(ctx, warm); err != nil || v != "A:"+warm {
				t.Fatalf("warm-up GET: %q %v", v, err)
			}
			if readsOf(&mu, readers, me) > r {
				return
			}
			if i == 200 {
				t.Fatal("the caller never read its own reply")
			}
		}
	}
	warmUp(context.Background())
	before := readsOf(&mu, readers, me)
	for i := 0; i < 50; i++ {
		if v, _, err := c.Get(context.Background(), warm); err != nil || v != "A:"+warm {
			t.Fatalf("GET %d: %q %v", i, v, err)
		}
	}
	if mine := readsOf(&mu, readers, me) - before; mine < 25 {
		t.Fatalf("the caller read %d replies of 50 itself, want most of them", mine)
	}

	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for pass, ctx := range []context.Context{context.Background(), cancellable} {
		for _, kind := range []string{"MOVED", "ASK", "TRYAGAIN"} {
			read := false
			for attempt := 0; attempt < 5 && !read; attempt++ {
				key := fresh[0]
				fresh = fresh[1:]
				want, wantA, wantB := "B:"+key, 1, 1
				f.mu.Lock()
				switch kind {
				case "MOVED":
					f.moved[int(topo.KeySlotString(key))] = true
				case "ASK":
					f.ask[key] = true
				case "TRYAGAIN":
					f.tryAgain[key] = true
					want, wantA, wantB = "A:"+key, 2, 0
				}
				f.mu.Unlock()
				warmUp(ctx)
				r := readsOf(&mu, readers, me)
				start := time.Now()
				v, _, err := c.Get(ctx, key)
				took := time.Since(start)
				if err != nil || v != want {
					t.Fatalf("pass %d, %s: GET %s = %q %v, want %q", pass, kind, key, v, err, want)
				}
				if took > time.Second {
					t.Fatalf("pass %d, %s: the GET took %v: the caller stayed in a read of the node that redirected it", pass, kind, took)
				}
				if a, b := f.getsOf("A", key), f.getsOf("B", key); a != wantA || b != wantB {
					t.Fatalf("pass %d, %s: node A got %d GETs of %s and node B %d, want %d and %d", pass, kind, a, key, b, wantA, wantB)
				}
				read = readsOf(&mu, readers, me) > r
			}
			if !read {
				t.Fatalf("pass %d, %s: in five attempts the caller never read the redirect itself", pass, kind)
			}
		}
	}
}

// testClusterLoneCallerReads: on a real Cluster, a lone caller reads its commands' replies on
// its own goroutine; when the slot of its key has moved to another primary, the SET it sends
// next gets MOVED from the old owner, read by the caller, and lands on the new owner within a
// fraction of its command timeout (10 s). The caller reads the MOVED itself only when the
// old owner's connection lent it the read side, which a pause longer than the idle side is kept
// (1 ms) undoes: each attempt moves a fresh empty slot, warms the old owner's connection with
// GETs of another of its keys until the caller reads again, then sends the SET; an attempt
// whose MOVED the reader goroutine read is repeated, up to five times.
func testClusterLoneCallerReads(t *testing.T, rc *redistest.Cluster) {
	ctx := context.Background()
	var mu sync.Mutex
	readers := map[int]int{}
	c, err := client.Connect(ctx, client.Options{UseCluster: true,
		Endpoints:      []client.Endpoint{{Host: "127.0.0.1", Port: rc.Node(0).Port()}},
		CommandTimeout: 10 * time.Second, Dialer: readersDialer(&mu, readers)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	owners := rc.SlotOwners(t)
	primaries := rc.Primaries(t)
	from := owners[0]
	var to *redistest.Server
	for _, p := range primaries {
		if p != from {
			to = p
			break
		}
	}
	// Keys of from's slots, each slot holding no key (MoveSlot moves empty slots); the first
	// warms the connection and is never moved.
	var keys []string
	seen := map[int]bool{}
	for i := 0; len(keys) < 6; i++ {
		k := fmt.Sprintf("callread:%d", i)
		s := int(topo.KeySlotString(k))
		if owners[s] == from && !seen[s] && from.Do(t, "CLUSTER", "COUNTKEYSINSLOT", fmt.Sprint(s)) == "0" {
			seen[s] = true
			keys = append(keys, k)
		}
	}
	me := callerGoroutine()
	warmUp := func() {
		t.Helper()
		for i := 0; ; i++ {
			r := readsOf(&mu, readers, me)
			if _, found, err := c.Get(ctx, keys[0]); err != nil || found {
				t.Fatalf("warm-up GET: found %v, %v", found, err)
			}
			if readsOf(&mu, readers, me) > r {
				return
			}
			if i == 400 {
				t.Fatal("the caller never read its own reply")
			}
		}
	}
	warmUp()
	read := false
	for _, key := range keys[1:] {
		rc.MoveSlot(t, int(topo.KeySlotString(key)), to)
		warmUp()
		r := readsOf(&mu, readers, me)
		start := time.Now()
		if err := c.Set(ctx, key, "moved"); err != nil {
			t.Fatalf("SET %s after its slot moved: %v", key, err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Fatalf("the SET after the move took %v: the caller stayed in a read of the old owner", took)
		}
		if got := to.Do(t, "GET", key); got != "moved" {
			t.Fatalf("the new owner holds %q for %s", got, key)
		}
		if v, _, err := c.Get(ctx, key); err != nil || v != "moved" {
			t.Fatalf("GET %s after the move: %q %v", key, v, err)
		}
		if read = readsOf(&mu, readers, me) > r; read {
			break
		}
	}
	if !read {
		t.Fatal("in five attempts the caller never read the MOVED itself")
	}
}
