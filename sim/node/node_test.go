package node

import (
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// testEnv is a node's world for tests: a clock moved by hand, timers run by fire, and the
// records the node reports.
type testEnv struct {
	now     time.Duration
	timers  []testTimer
	applied []string
	served  []uint64
	planted []string
	refuse  string
}

type testTimer struct {
	at time.Duration
	fn func() bool
}

func (e *testEnv) Now() time.Duration { return e.now }
func (e *testEnv) After(d time.Duration, fn func() bool) {
	e.timers = append(e.timers, testTimer{e.now + d, fn})
}
func (e *testEnv) HandshakeError() (string, bool) { return e.refuse, e.refuse != "" }
func (e *testEnv) SubscribeRefusal(fsm.TopicKind) (string, bool) {
	return "", false
}
func (e *testEnv) Applied(c *Conn, id uint64, name string, afterHandshake bool) {
	e.applied = append(e.applied, name)
}
func (e *testEnv) Served(c *Conn, id uint64, reply []byte)      { e.served = append(e.served, id) }
func (e *testEnv) Published(bool, string, string, []fsm.ConnID) {}
func (e *testEnv) Acked(*Conn, fsm.Topic, bool)                 {}
func (e *testEnv) Planted(name string, id uint64)               { e.planted = append(e.planted, name) }

// fire advances the clock to t, running the timers due by then in order.
func (e *testEnv) fire(t time.Duration) {
	for {
		next := -1
		for i, tm := range e.timers {
			if tm.at <= t && (next < 0 || tm.at < e.timers[next].at) {
				next = i
			}
		}
		if next < 0 {
			e.now = t
			return
		}
		tm := e.timers[next]
		e.timers = append(e.timers[:next], e.timers[next+1:]...)
		e.now = tm.at
		tm.fn()
	}
}

// testLink is one connection's network side for tests: requests written by the test, every
// request carrying command id 1, 2, 3... in order, and the replies the node wrote.
type testLink struct {
	n        *Node
	c        *Conn
	in       []byte
	base     uint64
	starts   []uint64
	out      []byte
	hungUp   bool
	reset    string
	detached bool
	lose     bool
}

func (l *testLink) Inbound() ([]byte, uint64) { return l.in, l.base }
func (l *testLink) Consume(n int)             { l.in, l.base = l.in[n:], l.base+uint64(n) }
func (l *testLink) Command(start uint64) (uint64, bool) {
	for i, s := range l.starts {
		if s == start {
			return uint64(i + 1), true
		}
	}
	return 0, true
}
func (l *testLink) Write(b []byte)      { l.out = append(l.out, b...) }
func (l *testLink) Hangup()             { l.hungUp = true; l.n.Remove(l.c) }
func (l *testLink) Reset(reason string) { l.reset = reason; l.n.Remove(l.c) }
func (l *testLink) LosesReply() bool    { return l.lose }
func (l *testLink) LoseReply()          { l.lose = false; l.n.Remove(l.c) }
func (l *testLink) Detached()           { l.detached = true }

// send queues one request.
func (l *testLink) send(args ...string) {
	l.starts = append(l.starts, l.base+uint64(len(l.in)))
	l.in = resp.AppendCommand(l.in, args...)
}

// replies parses and clears what the node wrote.
func (l *testLink) replies(t *testing.T) []string {
	t.Helper()
	var out []string
	for len(l.out) > 0 {
		var v resp.Value
		n, err := resp.Parse(l.out, &v, nil)
		if err != nil {
			t.Fatalf("reply %q: %v", l.out, err)
		}
		out = append(out, v.String())
		l.out = l.out[n:]
	}
	return out
}

func newTestNode(t *testing.T, password string) (*Node, *testEnv, *Conn, *testLink) {
	t.Helper()
	env := &testEnv{}
	n := New("r1", password, env, &Plants{})
	c := &Conn{}
	l := &testLink{n: n, c: c}
	n.Accept(c, 7, l)
	return n, env, c, l
}

// TestNodeOverItsSeams drives a node through Env and Link alone, without a network: replies in
// order, the apply log and the served replies by command id, CLIENT ID from the connection id,
// and QUIT hanging up after its reply.
func TestNodeOverItsSeams(t *testing.T) {
	n, env, c, l := newTestNode(t, "")
	l.send("SET", "k", "v")
	l.send("GET", "k")
	l.send("CLIENT", "ID")
	l.send("GE")
	n.Serve(c)
	got := strings.Join(l.replies(t), " | ")
	if !strings.HasPrefix(got, `simple:"OK" | "v" | int:7 | error:"ERR unknown command 'GE'`) {
		t.Fatalf("replies: %s", got)
	}
	if strings.Join(env.applied, ",") != "SET,GET,CLIENT" || len(env.served) != 4 {
		t.Fatalf("applied %v, served %v", env.applied, env.served)
	}
	l.send("QUIT")
	n.Serve(c)
	if r := l.replies(t); len(r) != 1 || r[0] != `simple:"OK"` || !l.hungUp || len(l.in) != 0 {
		t.Fatalf("QUIT: replies %v, hung up %v, unparsed %d", r, l.hungUp, len(l.in))
	}
	if !l.detached || c.Open() || len(n.Conns()) != 0 {
		t.Fatal("the hang-up must close the node's side and tell the link")
	}
}

// TestNodeSeamFaults: a paused node parses nothing until it resumes; a lost reply is dropped and
// the link told; a killed node resets its connections; a blocking pop times out through Env.After.
func TestNodeSeamFaults(t *testing.T) {
	n, env, c, l := newTestNode(t, "")
	n.Pause()
	l.send("PING")
	n.Serve(c)
	if len(l.out) != 0 {
		t.Fatal("a paused node answered")
	}
	n.Resume()
	if r := l.replies(t); len(r) != 1 || r[0] != `simple:"PONG"` {
		t.Fatalf("after resume: %v", r)
	}
	l.lose = true
	l.send("SET", "k", "v")
	n.Serve(c)
	if len(l.out) != 0 || l.lose || env.applied[len(env.applied)-1] != "SET" || c.Open() {
		t.Fatalf("lost reply: out %q, fault still armed %v, applied %v, open %v", l.out, l.lose, env.applied, c.Open())
	}
	c = &Conn{}
	l = &testLink{n: n, c: c}
	n.Accept(c, 8, l)
	l.send("BLPOP", "list", "1")
	n.Serve(c)
	if len(l.out) != 0 {
		t.Fatal("BLPOP on an empty list answered at once")
	}
	env.fire(time.Second)
	if r := l.replies(t); len(r) != 1 || r[0] != "null" {
		t.Fatalf("BLPOP timeout: %v", r)
	}
	n.Kill()
	if l.reset != "node-killed" || !n.Down() {
		t.Fatalf("kill: reset %q, down %v", l.reset, n.Down())
	}
}

// TestNodeHandshakeFault: a handshake fault answers HELLO and AUTH with its error, through Env.
func TestNodeHandshakeFault(t *testing.T) {
	n, env, c, l := newTestNode(t, "secret")
	env.refuse = "LOADING Redis is loading the dataset in memory"
	l.send("HELLO", "3", "AUTH", "default", "secret")
	l.send("GET", "k")
	n.Serve(c)
	r := l.replies(t)
	if len(r) != 2 || !strings.Contains(r[0], "LOADING") || !strings.Contains(r[1], "NOAUTH") {
		t.Fatalf("replies %v", r)
	}
	env.refuse = ""
	l.send("HELLO", "3", "AUTH", "default", "secret")
	n.Serve(c)
	if l.replies(t); c.Session != (Session{Proto: 3, Authed: true}) {
		t.Fatalf("session %+v", c.Session)
	}
}

// TestNodeArity: one arity table checks commands run at once and commands queued in MULTI alike,
// as Redis checks arity when it queues: a short SELECT is refused in both, and then aborts the
// transaction.
func TestNodeArity(t *testing.T) {
	n, env, c, l := newTestNode(t, "")
	for _, args := range [][]string{{"SELECT"}, {"MSET", "a", "1", "b"}, {"PING", "a", "b"}, {"CLIENT"}, {"BLPOP", "l"},
		{"MULTI"}, {"SELECT"}, {"SET", "a", "1"}, {"EXEC"}} {
		l.send(args...)
	}
	n.Serve(c)
	want := []string{"for 'select'", "for 'mset'", "for 'ping'", "for 'client'", "for 'blpop'", `simple:"OK"`, "for 'select'",
		"QUEUED", "EXECABORT"}
	got := l.replies(t)
	if len(got) != len(want) {
		t.Fatalf("replies %v", got)
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Fatalf("reply %d is %s, want it to mention %s", i, got[i], want[i])
		}
	}
	if strings.Join(env.applied, " ") != "MULTI EXEC" {
		t.Fatalf("applied %v: commands with the wrong arity must never be", env.applied)
	}
}
