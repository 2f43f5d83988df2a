package enginetest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/resp"
)

// Run runs every conformance case against h, each as a subtest, one after another.
func Run(t *testing.T, h Harness) {
	s := &suite{h: h}
	for _, c := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"OpenReportsDialedThenReady", s.openReady},
		{"RoundTrips", s.roundTrips},
		{"PipelinedFIFO", s.pipelinedFIFO},
		{"SendAfterClose", s.sendAfterClose},
		{"CloseCompletesPendingWithoutLost", s.closeWithoutLost},
		{"ServerKillReportsLostOnce", s.serverKill},
		{"RefusedFailsTransient", s.refused},
		{"WrongPasswordFailsPermanent", s.wrongPassword},
		{"CancelBeforeOpen", s.cancelBeforeOpen},
		{"CancelDuringHandshake", s.cancelDuringHandshake},
		{"DrainCompletesPendingThenCloses", s.drain},
		{"DrainIdleClosesAtOnce", s.drainIdle},
		{"OfferRefusedWhileDrainingThenStopped", s.offerWhileDraining},
		{"ReplyOfWrongShapeFailsConnection", s.wrongShape},
	} {
		t.Run(c.name, c.run)
	}
}

// suite carries the harness and the run's counters.
type suite struct {
	h      Harness
	connID atomic.Uint64
	keySeq atomic.Uint64
}

// key returns a key unique in the run.
func (s *suite) key(t testing.TB, what string) string {
	return "enginetest:" + t.Name() + ":" + what + ":" + strconv.FormatUint(s.keySeq.Add(1), 10)
}

// event is one Sink call.
type event struct {
	kind  string // dialed, ready, failed, lost
	id    fsm.ConnID
	conn  engine.Conn
	err   error
	class fsm.FailureClass
}

// recorder is a Sink that records every call. It never blocks and never calls back.
type recorder struct {
	mu     sync.Mutex
	events []event
}

func (r *recorder) add(e event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) Dialed(id fsm.ConnID) { r.add(event{kind: "dialed", id: id}) }
func (r *recorder) Ready(id fsm.ConnID, c engine.Conn) {
	r.add(event{kind: "ready", id: id, conn: c})
}
func (r *recorder) Failed(id fsm.ConnID, err error, class fsm.FailureClass) {
	r.add(event{kind: "failed", id: id, err: err, class: class})
}
func (r *recorder) Lost(id fsm.ConnID, err error) { r.add(event{kind: "lost", id: id, err: err}) }

// snapshot returns a copy of the events so far.
func (r *recorder) snapshot() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event(nil), r.events...)
}

// count returns how many events of kind were recorded.
func (r *recorder) count(kind string) int {
	n := 0
	for _, e := range r.snapshot() {
		if e.kind == kind {
			n++
		}
	}
	return n
}

// first returns the first event of kind.
func (r *recorder) first(kind string) (event, bool) {
	for _, e := range r.snapshot() {
		if e.kind == kind {
			return e, true
		}
	}
	return event{}, false
}

// kinds lists the recorded kinds in order, for messages.
func (r *recorder) kinds() string {
	var parts []string
	for _, e := range r.snapshot() {
		parts = append(parts, e.kind)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// attempt is one Open with its recorder.
type attempt struct {
	id  fsm.ConnID
	rec *recorder
}

// open starts an attempt to ep with tr.
func (s *suite) open(ctx context.Context, tr engine.Transport, ep engine.Endpoint) *attempt {
	a := &attempt{id: fsm.ConnID(s.connID.Add(1)), rec: &recorder{}}
	tr.Open(ctx, engine.OpenRequest{Conn: a.id, Slot: 0, Attempt: 1, Endpoint: ep, Sink: a.rec})
	return a
}

// settleOutcome waits until the attempt reported Ready or Failed.
func (s *suite) settleOutcome(t testing.TB, a *attempt) {
	t.Helper()
	if !s.h.WaitFor(func() bool { return a.rec.count("ready")+a.rec.count("failed") > 0 }) {
		t.Fatalf("attempt %d: neither Ready nor Failed within the harness bound; events %s", a.id, a.rec.kinds())
	}
}

// connect opens a connection to the Open server and returns it once Ready.
func (s *suite) connect(t testing.TB) (engine.Conn, *attempt) {
	t.Helper()
	a := s.open(context.Background(), s.h.Transport(t, ""), s.h.Endpoint(t, Open))
	s.settleOutcome(t, a)
	ev, ok := a.rec.first("ready")
	if !ok {
		f, _ := a.rec.first("failed")
		t.Fatalf("connecting to the open server failed: %v (events %s)", f.err, a.rec.kinds())
	}
	if ev.id != a.id || ev.conn == nil {
		t.Fatalf("Ready named conn %d with conn %v; want %d and a connection", ev.id, ev.conn, a.id)
	}
	return ev.conn, a
}

// call is one command and its completion.
type call struct {
	cmd  engine.Command
	done atomic.Bool
	// completions counts Done calls; a second one is a violation.
	completions atomic.Int32
	// order is the position of the completion in its log, or -1.
	order int
}

// completionLog records the order in which commands complete.
type completionLog struct {
	mu    sync.Mutex
	calls []*call
}

// newCall builds a command ready for Send (StageBuffered). log may be nil.
func newCall(log *completionLog, args ...string) *call {
	c := &call{order: -1}
	c.cmd.Name = strings.ToUpper(args[0])
	c.cmd.Frame = resp.AppendCommand(nil, args...)
	c.cmd.Reset()
	c.cmd.Enqueued()
	c.cmd.Done = func(*engine.Command) {
		if log != nil {
			log.mu.Lock()
			c.order = len(log.calls)
			log.calls = append(log.calls, c)
			log.mu.Unlock()
		}
		c.completions.Add(1)
		c.done.Store(true)
	}
	return c
}

// waitDone waits until every call completed.
func (s *suite) waitDone(t testing.TB, calls ...*call) {
	t.Helper()
	if !s.h.WaitFor(func() bool {
		for _, c := range calls {
			if !c.done.Load() {
				return false
			}
		}
		return true
	}) {
		n := 0
		for _, c := range calls {
			if c.done.Load() {
				n++
			}
		}
		t.Fatalf("%d of %d commands completed within the harness bound", n, len(calls))
	}
}

// checkOnce fails if a call completed more than once.
func checkOnce(t testing.TB, calls ...*call) {
	t.Helper()
	for i, c := range calls {
		if n := c.completions.Load(); n > 1 {
			t.Fatalf("command %d (%s) completed %d times", i, c.cmd.Name, n)
		}
	}
}

// roundTrip sends one command and waits for its reply.
func (s *suite) roundTrip(t testing.TB, conn engine.Conn, args ...string) *call {
	t.Helper()
	c := newCall(nil, args...)
	conn.Send(&c.cmd)
	s.waitDone(t, c)
	if c.cmd.Err != nil {
		t.Fatalf("%q failed: %v", args, c.cmd.Err)
	}
	if got := c.cmd.FinalStage(); got != engine.StageAwaitingReply {
		t.Fatalf("%q completed with a reply at stage %v, want %v", args, got, engine.StageAwaitingReply)
	}
	return c
}

// expectString checks that v is a simple or bulk string with text want.
func expectString(t testing.TB, what string, v resp.Value, kind resp.Kind, want string) {
	t.Helper()
	if v.Kind != kind || string(v.Str) != want {
		t.Fatalf("%s: reply %v, want %v %q", what, v, kind, want)
	}
}

// closeConn closes conn and checks the attempt reported no Lost because of it.
func (s *suite) closeConn(t testing.TB, conn engine.Conn, a *attempt) {
	t.Helper()
	conn.Close()
	s.h.Settle()
	if n := a.rec.count("lost"); n != 0 {
		t.Fatalf("Close reported Lost %d times; events %s", n, a.rec.kinds())
	}
}

// blocking returns a written command that never gets a reply, when the server can block.
func (s *suite) blocking(t testing.TB, conn engine.Conn) *call {
	t.Helper()
	if s.h.Caps().NoBlocking {
		return nil
	}
	c := newCall(nil, "BLPOP", s.key(t, "never"), "0")
	conn.Send(&c.cmd)
	if !s.h.WaitFor(func() bool { return c.cmd.Stage() == engine.StageAwaitingReply || c.done.Load() }) {
		t.Fatalf("BLPOP was not written within the harness bound (stage %v)", c.cmd.Stage())
	}
	if c.done.Load() {
		t.Fatalf("BLPOP on an empty list completed: err %v reply %v", c.cmd.Err, c.cmd.Reply)
	}
	return c
}

// clientsBaseline returns the Open server's client count once it is stable (connections closed
// by earlier cases may still be going away), or -1 without the capability.
func (s *suite) clientsBaseline(t testing.TB) int {
	if s.h.Caps().NoClientCount {
		return -1
	}
	n := s.h.Clients(t)
	for range 20 {
		s.h.Settle()
		m := s.h.Clients(t)
		if m == n {
			break
		}
		n = m
	}
	return n
}

// expectClients waits until the Open server's client count satisfies ok (no-op for base -1).
// Counts are compared with a stable baseline taken before the case connected; stale connections
// of earlier cases can only lower the count, so "at least" and "at most" checks cannot fail
// because of them.
func (s *suite) expectClients(t testing.TB, base int, ok func(n int) bool, why string) {
	t.Helper()
	if base < 0 {
		return
	}
	got := -1
	if !s.h.WaitFor(func() bool { got = s.h.Clients(t); return ok(got) }) {
		t.Fatalf("%s: the server has %d client connections (baseline %d)", why, got, base)
	}
}

func atLeast(want int) func(int) bool { return func(n int) bool { return n >= want } }
func atMost(want int) func(int) bool  { return func(n int) bool { return n <= want } }

func (s *suite) openReady(t *testing.T) {
	conn, a := s.connect(t)
	s.h.Settle()
	evs := a.rec.snapshot()
	if len(evs) != 2 || evs[0].kind != "dialed" || evs[1].kind != "ready" {
		t.Fatalf("events %s, want [dialed ready]", a.rec.kinds())
	}
	if evs[0].id != a.id {
		t.Fatalf("Dialed named conn %d, want %d", evs[0].id, a.id)
	}
	s.closeConn(t, conn, a)
	if evs := a.rec.snapshot(); len(evs) != 2 {
		t.Fatalf("events after Close %s, want [dialed ready]", a.rec.kinds())
	}
}

func (s *suite) roundTrips(t *testing.T) {
	conn, a := s.connect(t)
	defer s.closeConn(t, conn, a)

	c := s.roundTrip(t, conn, "PING")
	expectString(t, "PING", c.cmd.Reply, resp.KindSimpleString, "PONG")

	k := s.key(t, "k")
	c = s.roundTrip(t, conn, "SET", k, "value-1")
	expectString(t, "SET", c.cmd.Reply, resp.KindSimpleString, "OK")
	c = s.roundTrip(t, conn, "GET", k)
	expectString(t, "GET", c.cmd.Reply, resp.KindBulkString, "value-1")
	c = s.roundTrip(t, conn, "GET", s.key(t, "missing"))
	if !c.cmd.Reply.IsNull() {
		t.Fatalf("GET of a missing key: reply %v, want a null", c.cmd.Reply)
	}
	ctr := s.key(t, "ctr")
	for want := int64(1); want <= 3; want++ {
		c = s.roundTrip(t, conn, "INCR", ctr)
		if c.cmd.Reply.Kind != resp.KindInteger || c.cmd.Reply.Int != want {
			t.Fatalf("INCR: reply %v, want integer %d", c.cmd.Reply, want)
		}
	}
	// A server error reply is a reply: Err stays nil and the connection stays usable.
	c = s.roundTrip(t, conn, "ENGINETEST-NO-SUCH-COMMAND", "x")
	if !c.cmd.Reply.IsError() || c.cmd.Reply.ErrorCode() != "ERR" {
		t.Fatalf("unknown command: reply %v, want an ERR error reply", c.cmd.Reply)
	}
	c = s.roundTrip(t, conn, "PING")
	expectString(t, "PING after an error reply", c.cmd.Reply, resp.KindSimpleString, "PONG")
}

// pipelinedFIFO: eight callers pipeline 1,000 commands on one connection without waiting for
// replies: INCR of one shared counter, and SET then GET of the caller's own key. Strict FIFO
// completion shows in three ways: the INCR replies are 1, 2, 3, ... in completion order; each
// caller's commands complete in the order it sent them; each GET returns the value of the SET
// its caller sent just before it.
func (s *suite) pipelinedFIFO(t *testing.T) {
	conn, a := s.connect(t)
	defer s.closeConn(t, conn, a)

	const callers, total = 8, 1000
	ctr := s.key(t, "ctr")
	var log completionLog
	type sent struct {
		c     *call
		kind  byte // 'i' INCR, 's' SET, 'g' GET
		value string
	}
	perCaller := make([][]sent, callers)
	for i := 0; i < total; i++ {
		caller := i % callers
		n := len(perCaller[caller])
		key := "enginetest:" + t.Name() + ":c" + strconv.Itoa(caller)
		var sn sent
		switch n % 3 {
		case 0:
			sn = sent{c: newCall(&log, "INCR", ctr), kind: 'i'}
		case 1:
			v := "v-" + strconv.Itoa(caller) + "-" + strconv.Itoa(n)
			sn = sent{c: newCall(&log, "SET", key, v), kind: 's', value: v}
		case 2:
			prev := perCaller[caller][n-1]
			sn = sent{c: newCall(&log, "GET", key), kind: 'g', value: prev.value}
		}
		perCaller[caller] = append(perCaller[caller], sn)
	}
	if s.h.Caps().SingleThreaded {
		// Interleaved submissions: one command of each caller in turn.
		for n := 0; ; n++ {
			sentAny := false
			for caller := range perCaller {
				if n < len(perCaller[caller]) {
					conn.Send(&perCaller[caller][n].c.cmd)
					sentAny = true
				}
			}
			if !sentAny {
				break
			}
		}
	} else {
		var wg sync.WaitGroup
		for caller := range perCaller {
			wg.Add(1)
			go func(list []sent) {
				defer wg.Done()
				for _, sn := range list {
					conn.Send(&sn.c.cmd)
				}
			}(perCaller[caller])
		}
		wg.Wait()
	}
	var all []*call
	for _, list := range perCaller {
		for _, sn := range list {
			all = append(all, sn.c)
		}
	}
	s.waitDone(t, all...)
	s.h.Settle()
	checkOnce(t, all...)

	log.mu.Lock()
	order := append([]*call(nil), log.calls...)
	log.mu.Unlock()
	if len(order) != total {
		t.Fatalf("%d completions logged, want %d", len(order), total)
	}
	wantIncr := int64(1)
	for i, c := range order {
		if c.cmd.Err != nil {
			t.Fatalf("completion %d (%s) failed: %v", i, c.cmd.Name, c.cmd.Err)
		}
		if c.cmd.Name == "INCR" {
			if c.cmd.Reply.Kind != resp.KindInteger || c.cmd.Reply.Int != wantIncr {
				t.Fatalf("completion %d: INCR replied %v, want %d: replies are not FIFO", i, c.cmd.Reply, wantIncr)
			}
			wantIncr++
		}
	}
	for caller, list := range perCaller {
		for n, sn := range list {
			if n > 0 && sn.c.order <= list[n-1].c.order {
				t.Fatalf("caller %d: command %d completed at %d, before command %d at %d",
					caller, n, sn.c.order, n-1, list[n-1].c.order)
			}
			switch sn.kind {
			case 's':
				expectString(t, "SET", sn.c.cmd.Reply, resp.KindSimpleString, "OK")
			case 'g':
				expectString(t, "GET after own SET", sn.c.cmd.Reply, resp.KindBulkString, sn.value)
			}
		}
	}
	if n := a.rec.count("lost"); n != 0 {
		t.Fatalf("Lost reported on a healthy connection: %s", a.rec.kinds())
	}
}

// checkRejected checks that c was completed at once with an error at StageBuffered.
func checkRejected(t testing.TB, what string, c *call) {
	t.Helper()
	if !c.done.Load() {
		t.Fatalf("%s: Send did not complete the command at once", what)
	}
	if c.cmd.Err == nil {
		t.Fatalf("%s: completed without an error (reply %v)", what, c.cmd.Reply)
	}
	if got := c.cmd.FinalStage(); got != engine.StageBuffered || c.cmd.MaybeSent() {
		t.Fatalf("%s: final stage %v (MaybeSent %v), want %v", what, got, c.cmd.MaybeSent(), engine.StageBuffered)
	}
}

func (s *suite) sendAfterClose(t *testing.T) {
	conn, a := s.connect(t)
	s.roundTrip(t, conn, "PING")
	s.closeConn(t, conn, a)
	c := newCall(nil, "PING")
	conn.Send(&c.cmd)
	checkRejected(t, "Send after Close", c)
	conn.Close() // idempotent
	s.h.Settle()
	checkOnce(t, c)
	if n := a.rec.count("lost"); n != 0 {
		t.Fatalf("Lost after Close: %s", a.rec.kinds())
	}
}

func (s *suite) closeWithoutLost(t *testing.T) {
	base := s.clientsBaseline(t)
	conn, a := s.connect(t)
	s.expectClients(t, base, atLeast(base+1), "after connecting")
	blocked := s.blocking(t, conn)
	// Commands sent right before Close: each completes by the time Close returns, with a reply
	// or with an error; an error on one that was never written must say so (StageBuffered).
	var burst []*call
	for i := 0; i < 50; i++ {
		c := newCall(nil, "PING")
		burst = append(burst, c)
		conn.Send(&c.cmd)
	}
	conn.Close()
	all := burst
	if blocked != nil {
		all = append(all, blocked)
	}
	for i, c := range all {
		if !c.done.Load() {
			t.Fatalf("command %d (%s) still pending after Close returned", i, c.cmd.Name)
		}
	}
	if blocked != nil {
		if blocked.cmd.Err == nil || !blocked.cmd.MaybeSent() {
			t.Fatalf("written BLPOP after Close: err %v, MaybeSent %v (stage %v); want an error with MaybeSent",
				blocked.cmd.Err, blocked.cmd.MaybeSent(), blocked.cmd.FinalStage())
		}
	}
	for i, c := range burst {
		switch {
		case c.cmd.Err == nil:
			expectString(t, "PING before Close", c.cmd.Reply, resp.KindSimpleString, "PONG")
		case c.cmd.FinalStage() == engine.StageDone || c.cmd.FinalStage() == engine.StageQueued:
			t.Fatalf("command %d failed at impossible stage %v", i, c.cmd.FinalStage())
		}
	}
	s.h.Settle()
	checkOnce(t, all...)
	if n := a.rec.count("lost"); n != 0 {
		t.Fatalf("Close reported Lost: %s", a.rec.kinds())
	}
	s.expectClients(t, base, atMost(base), "after Close")
}

func (s *suite) serverKill(t *testing.T) {
	conn, a := s.connect(t)
	s.roundTrip(t, conn, "PING")
	blocked := s.blocking(t, conn)
	s.h.KillClients(t)
	if !s.h.WaitFor(func() bool { return a.rec.count("lost") > 0 }) {
		t.Fatalf("no Lost after the server killed the connection; events %s", a.rec.kinds())
	}
	lost, _ := a.rec.first("lost")
	if lost.id != a.id || lost.err == nil {
		t.Fatalf("Lost named conn %d with error %v; want conn %d and an error", lost.id, lost.err, a.id)
	}
	if blocked != nil {
		// Lost comes after every pending command completed.
		if !blocked.done.Load() {
			t.Fatalf("pending BLPOP not completed when Lost was reported")
		}
		if blocked.cmd.Err == nil || !blocked.cmd.MaybeSent() {
			t.Fatalf("written BLPOP after the kill: err %v, MaybeSent %v (stage %v); want an unknown outcome",
				blocked.cmd.Err, blocked.cmd.MaybeSent(), blocked.cmd.FinalStage())
		}
	}
	c := newCall(nil, "PING")
	conn.Send(&c.cmd)
	checkRejected(t, "Send after the connection was lost", c)
	conn.Close() // what the engine does after Lost
	s.h.Settle()
	if n := a.rec.count("lost"); n != 1 {
		t.Fatalf("Lost reported %d times, want exactly once; events %s", n, a.rec.kinds())
	}
	if blocked != nil {
		checkOnce(t, blocked, c)
	}
}

func (s *suite) refused(t *testing.T) {
	a := s.open(context.Background(), s.h.Transport(t, ""), s.h.Endpoint(t, Refused))
	s.settleOutcome(t, a)
	s.h.Settle()
	f, ok := a.rec.first("failed")
	if !ok {
		t.Fatalf("refused endpoint: events %s, want Failed", a.rec.kinds())
	}
	if f.id != a.id || f.err == nil || f.class != fsm.Transient {
		t.Fatalf("refused endpoint: Failed(conn %d, %v, %v), want conn %d, an error, transient", f.id, f.err, f.class, a.id)
	}
	if evs := a.rec.snapshot(); len(evs) != 1 {
		t.Fatalf("refused endpoint: events %s, want only [failed]", a.rec.kinds())
	}
}

func (s *suite) wrongPassword(t *testing.T) {
	ep := s.h.Endpoint(t, Protected)
	// Positive control: the right password connects, so the failure below is about the password.
	good := s.open(context.Background(), s.h.Transport(t, s.h.Password()), ep)
	s.settleOutcome(t, good)
	ready, ok := good.rec.first("ready")
	if !ok {
		f, _ := good.rec.first("failed")
		t.Fatalf("the right password did not connect: %v", f.err)
	}
	c := s.roundTrip(t, ready.conn, "PING")
	expectString(t, "PING on the protected server", c.cmd.Reply, resp.KindSimpleString, "PONG")
	s.closeConn(t, ready.conn, good)

	const wrong = "enginetest-wrong-password-3f9a"
	bad := s.open(context.Background(), s.h.Transport(t, wrong), ep)
	s.settleOutcome(t, bad)
	s.h.Settle()
	f, ok := bad.rec.first("failed")
	if !ok {
		t.Fatalf("wrong password: events %s, want Failed", bad.rec.kinds())
	}
	if f.class != fsm.Permanent {
		t.Fatalf("wrong password failed %v (%v), want permanent", f.class, f.err)
	}
	var he *netio.HandshakeError
	if !errors.As(f.err, &he) || he.Code != "WRONGPASS" {
		t.Fatalf("wrong password: error %v (%T), want a *netio.HandshakeError with code WRONGPASS", f.err, f.err)
	}
	if strings.Contains(f.err.Error(), wrong) || strings.Contains(f.err.Error(), s.h.Password()) {
		t.Fatalf("the error reveals a password: %q", f.err.Error())
	}
	if n := bad.rec.count("ready"); n != 0 {
		t.Fatalf("wrong password: events %s", bad.rec.kinds())
	}
}

func (s *suite) cancelBeforeOpen(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := s.open(ctx, s.h.Transport(t, ""), s.h.Endpoint(t, Open))
	s.settleOutcome(t, a)
	s.h.Settle()
	f, ok := a.rec.first("failed")
	if !ok {
		t.Fatalf("cancelled attempt: events %s, want Failed", a.rec.kinds())
	}
	if !errors.Is(f.err, context.Canceled) {
		t.Fatalf("cancelled attempt failed with %v, want an error wrapping context.Canceled", f.err)
	}
	if n := a.rec.count("ready"); n != 0 {
		t.Fatalf("cancelled attempt: events %s", a.rec.kinds())
	}
}

func (s *suite) cancelDuringHandshake(t *testing.T) {
	if s.h.Caps().NoStalled {
		t.Skip("harness has Caps.NoStalled")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := s.open(ctx, s.h.Transport(t, ""), s.h.Endpoint(t, Stalled))
	if !s.h.WaitFor(func() bool { return a.rec.count("dialed") > 0 || a.rec.count("failed") > 0 }) {
		t.Fatalf("stalled endpoint: no Dialed; events %s", a.rec.kinds())
	}
	s.h.Settle()
	if n := a.rec.count("failed") + a.rec.count("ready"); n != 0 {
		t.Fatalf("stalled endpoint: the handshake ended by itself; events %s", a.rec.kinds())
	}
	cancel()
	s.settleOutcome(t, a)
	s.h.Settle()
	f, ok := a.rec.first("failed")
	if !ok {
		t.Fatalf("cancelled handshake: events %s, want Failed", a.rec.kinds())
	}
	if !errors.Is(f.err, context.Canceled) {
		t.Fatalf("cancelled handshake failed with %v, want an error wrapping context.Canceled", f.err)
	}
	if evs := a.rec.snapshot(); len(evs) != 2 {
		t.Fatalf("cancelled handshake: events %s, want [dialed failed]", a.rec.kinds())
	}
}

func (s *suite) drain(t *testing.T) {
	base := s.clientsBaseline(t)
	conn, a := s.connect(t)
	ctr := s.key(t, "ctr")
	var log completionLog
	var calls []*call
	for i := 0; i < 100; i++ {
		c := newCall(&log, "INCR", ctr)
		calls = append(calls, c)
		conn.Send(&c.cmd)
	}
	// A real-time transport may receive every INCR reply before Drain runs; a blocking pop that
	// waits 200 ms is certainly still pending then, so Drain provably has something to finish.
	// (A single-threaded harness makes no progress before WaitFor: all 100 are pending.)
	var blocked *call
	if caps := s.h.Caps(); !caps.NoBlocking && !caps.SingleThreaded {
		blocked = newCall(nil, "BLPOP", s.key(t, "empty"), "0.2")
		conn.Send(&blocked.cmd)
	}
	conn.Drain()
	late := newCall(nil, "PING")
	conn.Send(&late.cmd)
	checkRejected(t, "Send after Drain", late)
	s.waitDone(t, calls...)
	if blocked != nil {
		s.waitDone(t, blocked)
		if blocked.cmd.Err != nil || !blocked.cmd.Reply.IsNull() {
			t.Fatalf("the blocking pop pending at Drain: reply %v, err %v; Drain must let it finish", blocked.cmd.Reply, blocked.cmd.Err)
		}
		calls = append(calls, blocked)
	}
	for i, c := range calls[:100] {
		if c.cmd.Err != nil {
			t.Fatalf("command %d accepted before Drain failed: %v", i, c.cmd.Err)
		}
		if c.cmd.Reply.Kind != resp.KindInteger || c.cmd.Reply.Int != int64(i+1) || c.order != i {
			t.Fatalf("command %d: reply %v at completion %d, want integer %d at %d", i, c.cmd.Reply, c.order, i+1, i)
		}
	}
	s.expectClients(t, base, atMost(base), "after Drain completed")
	s.h.Settle()
	if n := a.rec.count("lost"); n != 0 {
		t.Fatalf("Drain reported Lost: %s", a.rec.kinds())
	}
	conn.Close() // harmless after Drain
	checkOnce(t, append(calls, late)...)
}

func (s *suite) drainIdle(t *testing.T) {
	base := s.clientsBaseline(t)
	conn, a := s.connect(t)
	s.roundTrip(t, conn, "PING")
	s.expectClients(t, base, atLeast(base+1), "after connecting")
	conn.Drain()
	late := newCall(nil, "PING")
	conn.Send(&late.cmd)
	checkRejected(t, "Send after an idle Drain", late)
	s.expectClients(t, base, atMost(base), "after an idle Drain")
	s.h.Settle()
	if n := a.rec.count("lost"); n != 0 {
		t.Fatalf("Drain reported Lost: %s", a.rec.kinds())
	}
	conn.Close()
}

// offerWhileDraining: both transports implement engine.Offerer and engine.Stopper. An open
// connection takes an offered command; a draining one refuses it without touching it (so that the
// engine can route it elsewhere), finishes what it accepted, and then reports that it stopped.
func (s *suite) offerWhileDraining(t *testing.T) {
	conn, _ := s.connect(t)
	offer, ok := conn.(engine.Offerer)
	stopper, ok2 := conn.(engine.Stopper)
	if !ok || !ok2 {
		t.Fatalf("%T does not implement engine.Offerer and engine.Stopper", conn)
	}
	var log completionLog
	taken := newCall(&log, "PING")
	if !offer.Offer(&taken.cmd) {
		t.Fatal("an open connection refused an offered command")
	}
	if stopper.Stopped() {
		t.Fatal("an open connection reports that it stopped")
	}
	conn.Drain()
	refused := newCall(nil, "PING")
	if offer.Offer(&refused.cmd) {
		t.Fatal("a draining connection took an offered command")
	}
	s.waitDone(t, taken)
	if taken.cmd.Err != nil {
		t.Fatalf("the command accepted before Drain failed: %v", taken.cmd.Err)
	}
	s.h.Settle()
	deadline := time.Now().Add(10 * time.Second)
	for !stopper.Stopped() {
		if time.Now().After(deadline) {
			t.Fatal("a drained connection never reported that it stopped")
		}
		time.Sleep(time.Millisecond)
		s.h.Settle()
	}
	if refused.cmd.Stage() != engine.StageBuffered || refused.cmd.Err != nil {
		t.Fatalf("the refused command was touched: stage %v, err %v", refused.cmd.Stage(), refused.cmd.Err)
	}
	conn.Close()
}

// wrongShape: a reply that does not fit its command's Expect fails the connection at once. SET,
// then GET expecting an integer (the bulk reply does not fit), then GET expecting anything, are
// pipelined: SET completes with its reply; the first GET completes with a protocol error at
// StageAwaitingReply (an unknown outcome, never a value); the second GET, whose reply was on
// its way, fails too instead of being paired with it; Lost is reported once, with the protocol
// error.
func (s *suite) wrongShape(t *testing.T) {
	conn, a := s.connect(t)
	key := s.key(t, "k")
	var log completionLog
	set := newCall(&log, "SET", key, "v")
	set.cmd.Expect = engine.ShapeOf(resp.KindSimpleString).Text("OK")
	bad := newCall(&log, "GET", key)
	bad.cmd.Expect = engine.ShapeOf(resp.KindInteger)
	after := newCall(&log, "GET", key)
	conn.Send(&set.cmd)
	conn.Send(&bad.cmd)
	conn.Send(&after.cmd)
	s.waitDone(t, set, bad, after)
	if !s.h.WaitFor(func() bool { return a.rec.count("lost") > 0 }) {
		t.Fatalf("no Lost after a reply of the wrong shape; events %s", a.rec.kinds())
	}
	conn.Close() // what the engine does after Lost
	s.h.Settle()
	checkOnce(t, set, bad, after)
	if set.cmd.Err != nil {
		t.Fatalf("SET before the bad reply failed: %v", set.cmd.Err)
	}
	expectString(t, "SET", set.cmd.Reply, resp.KindSimpleString, "OK")
	if !errors.Is(bad.cmd.Err, resp.ErrProtocol) || !bad.cmd.MaybeSent() {
		t.Fatalf("GET with a wrong-shape reply: err %v, MaybeSent %v; want a protocol error and an unknown outcome",
			bad.cmd.Err, bad.cmd.MaybeSent())
	}
	if after.cmd.Err == nil {
		t.Fatalf("GET after the bad reply completed with %v: the connection kept pairing replies", after.cmd.Reply)
	}
	if after.order < bad.order {
		t.Fatalf("GET after the bad reply completed first")
	}
	lost, _ := a.rec.first("lost")
	if n := a.rec.count("lost"); n != 1 || !errors.Is(lost.err, resp.ErrProtocol) {
		t.Fatalf("Lost %d times with %v; want once with the protocol error", n, lost.err)
	}
}
