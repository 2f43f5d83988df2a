package sim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/wire"
	"github.com/respire-go/respire/sim/node"
	"github.com/respire-go/respire/sim/scenario"
)

// sinkEvent is one call a transport made on its Sink.
type sinkEvent struct {
	kind  string
	conn  fsm.ConnID
	err   error
	class fsm.FailureClass
	c     engine.Conn
	at    time.Duration
}

// recordingSink records Sink calls with the virtual time.
type recordingSink struct {
	w      *world
	events []sinkEvent
}

func (s *recordingSink) add(e sinkEvent) { e.at = s.w.k.now; s.events = append(s.events, e) }

func (s *recordingSink) Dialed(id fsm.ConnID) { s.add(sinkEvent{kind: "dialed", conn: id}) }
func (s *recordingSink) Ready(id fsm.ConnID, c engine.Conn) {
	s.add(sinkEvent{kind: "ready", conn: id, c: c})
}
func (s *recordingSink) Failed(id fsm.ConnID, err error, class fsm.FailureClass) {
	s.add(sinkEvent{kind: "failed", conn: id, err: err, class: class})
}
func (s *recordingSink) Lost(id fsm.ConnID, err error) {
	s.add(sinkEvent{kind: "lost", conn: id, err: err})
}

func (s *recordingSink) kinds() string {
	var out []string
	for _, e := range s.events {
		out = append(out, e.kind)
	}
	return strings.Join(out, ",")
}

// harness is a world without engine or workload: tests open connections and step the kernel.
type harness struct {
	t    *testing.T
	w    *world
	sink *recordingSink
}

func newHarness(t *testing.T, yaml string) *harness {
	t.Helper()
	sc, err := scenario.Parse([]byte("name: h\nduration: 1h\n" + yaml))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := sc.Resolve(1)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(rs, 1, RunOptions{KeepTrace: true})
	w.buildFaults()
	return &harness{t: t, w: w, sink: &recordingSink{w: w}}
}

func (h *harness) open(ctx context.Context, id fsm.ConnID, slot int) {
	h.w.tp.Open(ctx, engine.OpenRequest{Conn: id, Slot: slot, Endpoint: engine.Endpoint{Host: "r1", Port: scenario.NodePort}, Sink: h.sink})
}

// until runs scheduler events up to virtual time t, writing what each action (and the test
// itself, before) sent, as the runner does.
func (h *harness) until(t time.Duration) {
	h.w.flushAll()
	for {
		at, ok := h.w.k.next()
		if !ok || at > t {
			break
		}
		ev := h.w.k.pop()
		ev.act.Run(ev.arg)
		h.w.flushAll()
	}
	if h.w.k.now < t {
		h.w.k.now = t
	}
}

func (h *harness) ready(i int) engine.Conn {
	h.t.Helper()
	for _, e := range h.sink.events {
		if e.kind == "ready" {
			if i == 0 {
				return e.c
			}
			i--
		}
	}
	h.t.Fatalf("no ready connection (%s)", h.sink.kinds())
	return nil
}

// command builds a command whose completion is recorded in *done.
func command(id uint64, done *[]*engine.Command, args ...string) *engine.Command {
	return &engine.Command{ID: id, Name: args[0], Frame: resp.AppendCommand(nil, args...),
		Done: func(c *engine.Command) { *done = append(*done, c) }}
}

func send(c engine.Conn, cmd *engine.Command) {
	if !cmd.Enqueued() {
		panic("command not queued")
	}
	c.Send(cmd)
}

// TestTransportHandshakeAndFIFO: a connection dials, handshakes and completes commands in order
// with their replies; stages advance through buffered, writing and awaiting-reply.
func TestTransportHandshakeAndFIFO(t *testing.T) {
	h := newHarness(t, "")
	h.open(context.Background(), 1, 0)
	h.until(10 * time.Millisecond)
	if got := h.sink.kinds(); got != "dialed,ready" {
		t.Fatalf("sink calls %s", got)
	}
	c := h.ready(0)
	var done []*engine.Command
	a := command(1, &done, "SET", "k", "v1")
	b := command(2, &done, "GET", "k")
	x := command(3, &done, "INCR", "k")
	send(c, a)
	send(c, b)
	send(c, x)
	if a.Stage() != engine.StageBuffered {
		t.Fatalf("stage before the flush: %s", a.Stage())
	}
	h.until(h.w.k.now) // the flush at the same instant
	if a.Stage() != engine.StageAwaitingReply || x.Stage() != engine.StageAwaitingReply {
		t.Fatalf("stages after the flush: %s %s", a.Stage(), x.Stage())
	}
	h.until(20 * time.Millisecond)
	if len(done) != 3 || done[0] != a || done[1] != b || done[2] != x {
		t.Fatalf("completions out of order: %v", done)
	}
	if a.Err != nil || string(a.Reply.Str) != "OK" || string(b.Reply.Str) != "v1" {
		t.Fatalf("replies: %v %v", a.Reply, b.Reply)
	}
	if x.Err != nil || !x.Reply.IsError() || x.Reply.ErrorCode() != "ERR" {
		t.Fatalf("INCR of a string: %v", x.Reply)
	}
	if len(h.w.res.Sends) != 3 || len(h.w.res.Applies) != 3 {
		t.Fatalf("sends %d applies %d", len(h.w.res.Sends), len(h.w.res.Applies))
	}
	for i, ap := range h.w.res.Applies {
		if ap.CmdID != uint64(i+1) || ap.Conn != 1 || !ap.AfterHandshake {
			t.Fatalf("apply %d: %+v", i, ap)
		}
	}
}

// TestTransportCloseFailsPendingWithStages: Close fails unwritten commands at StageBuffered
// (definite) and written ones at StageAwaitingReply (unknown), reports no Lost, and later sends
// fail at once.
func TestTransportCloseFailsPendingWithStages(t *testing.T) {
	h := newHarness(t, "")
	h.open(context.Background(), 1, 0)
	h.until(10 * time.Millisecond)
	c := h.ready(0)
	var done []*engine.Command
	written := command(1, &done, "SET", "k", "v")
	send(c, written)
	h.until(h.w.k.now)
	buffered := command(2, &done, "GET", "k")
	send(c, buffered)
	c.Close()
	if len(done) != 2 || done[0] != written || done[1] != buffered {
		t.Fatalf("completions %v", done)
	}
	if !written.MaybeSent() || buffered.MaybeSent() {
		t.Fatalf("written: maybe sent %v (%s); buffered: maybe sent %v (%s)",
			written.MaybeSent(), written.FinalStage(), buffered.MaybeSent(), buffered.FinalStage())
	}
	if !errors.Is(written.Err, wire.ErrClosed) {
		t.Fatalf("close error %v", written.Err)
	}
	late := command(3, &done, "GET", "k")
	send(c, late)
	if len(done) != 3 || late.MaybeSent() || !errors.Is(late.Err, wire.ErrClosed) {
		t.Fatalf("send after close: %v", late.Err)
	}
	h.until(time.Second)
	if strings.Contains(h.sink.kinds(), "lost") {
		t.Fatal("Close must not report Lost")
	}
	c.Close() // idempotent
	if len(h.w.conns) != 0 {
		t.Fatal("the closed connection was not forgotten")
	}
}

// TestTransportLostOnce: a reset fails every pending command and reports Lost exactly once.
func TestTransportLostOnce(t *testing.T) {
	h := newHarness(t, "faults:\n  - {at: 1s, drop: {client_slot: 0}}\n")
	h.open(context.Background(), 1, 0)
	h.until(999 * time.Millisecond)
	c := h.ready(0)
	var done []*engine.Command
	send(c, command(1, &done, "PING"))
	h.until(h.w.k.now) // written; the reply would arrive after the drop
	h.until(2 * time.Second)
	if got := h.sink.kinds(); got != "dialed,ready,lost" {
		t.Fatalf("sink calls %s", got)
	}
	lost := h.sink.events[2]
	var ioe *wire.IOError
	if !errors.As(lost.err, &ioe) || !strings.Contains(lost.err.Error(), "connection reset") {
		t.Fatalf("lost error %v", lost.err)
	}
	if len(done) != 1 || !done[0].MaybeSent() {
		t.Fatalf("the written command must fail with an unknown outcome: %v", done)
	}
	c.Close()
	h.until(3 * time.Second)
	if got := h.sink.kinds(); got != "dialed,ready,lost" {
		t.Fatalf("sink calls after Close: %s", got)
	}
}

// TestTransportDrain: Drain takes no new commands and closes once the accepted ones completed.
func TestTransportDrain(t *testing.T) {
	h := newHarness(t, "")
	h.open(context.Background(), 1, 0)
	h.until(10 * time.Millisecond)
	c := h.ready(0)
	var done []*engine.Command
	a := command(1, &done, "SET", "k", "v")
	send(c, a)
	c.Drain()
	b := command(2, &done, "GET", "k")
	send(c, b)
	if len(done) != 1 || done[0] != b || b.MaybeSent() {
		t.Fatal("a draining connection must reject new commands at once")
	}
	h.until(20 * time.Millisecond)
	if len(done) != 2 || done[1] != a || a.Err != nil {
		t.Fatalf("the accepted command must complete normally: %v", a.Err)
	}
	h.until(30 * time.Millisecond)
	if len(h.w.conns) != 0 || len(h.w.nodes[0].Conns()) != 0 {
		t.Fatal("a drained connection must close on both sides")
	}
	if strings.Contains(h.sink.kinds(), "lost") {
		t.Fatal("Drain must not report Lost")
	}
}

// TestTransportCancel: cancelling an attempt's context fails it and releases the node side.
func TestTransportCancel(t *testing.T) {
	h := newHarness(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	h.open(ctx, 1, 0)
	h.until(700 * time.Microsecond) // the node accepted; the SYN-ACK is in flight
	if len(h.w.nodes[0].Conns()) != 1 {
		t.Fatal("the node did not accept")
	}
	cancel()
	h.w.tp.sweep()
	if got := h.sink.kinds(); got != "failed" {
		t.Fatalf("sink calls %s", got)
	}
	if e := h.sink.events[0]; !errors.Is(e.err, context.Canceled) || e.class != fsm.Transient {
		t.Fatalf("cancel error %v class %s", e.err, e.class)
	}
	h.until(time.Second)
	if len(h.w.nodes[0].Conns()) != 0 || len(h.w.conns) != 0 || len(h.w.tp.attempts) != 0 {
		t.Fatal("a cancelled attempt must release everything")
	}
	if got := h.sink.kinds(); got != "failed" {
		t.Fatalf("sink calls after cancel: %s", got)
	}
}

// TestTransportConnectFailures: refused, black-holed and handshake-rejected attempts report
// Failed once with the right class and error.
func TestTransportConnectFailures(t *testing.T) {
	cases := []struct {
		name, yaml, text string
		class            fsm.FailureClass
		at               time.Duration
	}{
		{"refused", "faults:\n  - {at: 0s, refuse: {node: r1}}\n", "connection refused", fsm.Transient, time.Millisecond},
		{"blackholed", "client: {connect_timeout: 2s}\nfaults:\n  - {at: 0s, blackhole: {node: r1}}\n", "dial timed out after 2s", fsm.Transient, 2 * time.Second},
		{"handshake timeout", "client: {command_timeout: 3s}\nfaults:\n  - {at: 0s, pause: {node: r1}}\n", "handshake timed out after 3s", fsm.Transient, 3*time.Second + time.Millisecond},
		{"noperm", "faults:\n  - {at: 0s, handshake_error: {node: r1, reply: \"NOPERM this user has no permissions\"}}\n", "NOPERM", fsm.Permanent, 2 * time.Millisecond},
		{"noauth", "topology: {nodes: [{id: r1, password: pw}]}\n", "NOAUTH", fsm.Permanent, 2 * time.Millisecond},
		{"wrong password", "topology: {nodes: [{id: r1, password: pw}]}\nclient: {password: nope}\n", "WRONGPASS", fsm.Permanent, 2 * time.Millisecond},
		{"killed", "faults:\n  - {at: 0s, kill: {node: r1}}\n", "connection refused", fsm.Transient, time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.yaml)
			h.until(0)
			h.open(context.Background(), 1, 0)
			h.until(10 * time.Second)
			var failed []sinkEvent
			for _, e := range h.sink.events {
				if e.kind == "failed" {
					failed = append(failed, e)
				}
				if e.kind == "ready" || e.kind == "lost" {
					t.Fatalf("unexpected %s", e.kind)
				}
			}
			if len(failed) != 1 {
				t.Fatalf("sink calls %s", h.sink.kinds())
			}
			f := failed[0]
			var ce *wire.ConnectError
			if !errors.As(f.err, &ce) || !strings.Contains(f.err.Error(), tc.text) || f.class != tc.class || f.at != tc.at {
				t.Fatalf("failed at %v with %v (%s), want %q %s at %v", f.at, f.err, f.class, tc.text, tc.class, tc.at)
			}
			// A paused node closes its side when it resumes; a black-holed FIN arrives on heal.
			if len(h.w.conns) != 0 && tc.name != "blackholed" && tc.name != "handshake timeout" {
				t.Fatal("a failed attempt must release its connection")
			}
		})
	}
}

// TestTransportAuthenticatedHandshakes: the handshake authenticates, names the connection and
// selects the database over RESP2 and RESP3, with and without HELLO fallback.
func TestTransportAuthenticatedHandshakes(t *testing.T) {
	for _, proto := range []string{"auto", "resp2", "resp3"} {
		h := newHarness(t, "topology: {nodes: [{id: r1, password: pw}]}\nclient: {password: pw, client_name: app, database: 3, protocol: "+proto+"}\n")
		h.open(context.Background(), 1, 0)
		h.until(10 * time.Millisecond)
		c := h.ready(0)
		sc := c.(*simConn)
		want := 3
		if proto == "resp2" {
			want = 2
		}
		if s := sc.srv.Session; s != (node.Session{Proto: want, Authed: true, DB: 3, Name: "app"}) {
			t.Fatalf("%s: node state %+v", proto, s)
		}
		var done []*engine.Command
		cmd := command(1, &done, "GET", "missing")
		send(c, cmd)
		h.until(20 * time.Millisecond)
		if len(done) != 1 || cmd.Err != nil || !cmd.Reply.IsNull() {
			t.Fatalf("%s: GET of a missing key: %v %v", proto, cmd.Err, cmd.Reply)
		}
	}
}

// TestTransportPushesNeverComplete: a RESP3 push arriving before a reply is skipped; the command
// completes with its own reply.
func TestTransportPushesNeverComplete(t *testing.T) {
	h := newHarness(t, "")
	h.open(context.Background(), 1, 0)
	h.until(10 * time.Millisecond)
	c := h.ready(0)
	var done []*engine.Command
	cmd := command(1, &done, "GET", "k")
	send(c, cmd)
	// Inject a push from the node ahead of the reply.
	sc := c.(*simConn)
	sc.down.write(resp.AppendValue(nil, resp.PushOf(resp.BulkString("invalidate"), resp.BulkString("k")), 3))
	h.until(20 * time.Millisecond)
	if len(done) != 1 || cmd.Err != nil || !cmd.Reply.IsNull() {
		t.Fatalf("the push must not complete the command: %v %v", cmd.Reply, cmd.Err)
	}
	push := command(2, &done, "PING")
	sc.down.write(resp.AppendValue(nil, resp.PushOf(resp.BulkString("message")), 3))
	h.until(30 * time.Millisecond)
	send(c, push)
	h.until(40 * time.Millisecond)
	if len(done) != 2 || string(push.Reply.Str) != "PONG" {
		t.Fatalf("a push with no command pending must be ignored: %v", push.Reply)
	}
}
