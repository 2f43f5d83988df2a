package netio_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// Tests of a pipeline sent as one command (engine.Multi) over real sockets: its replies pair
// with it across reads and runs, with other callers' commands before and after it in the
// flight; a failure in the middle leaves the replies that arrived; a misfit in a run completes
// everything once; a caller may read its pipeline's replies itself.

// multiOf returns a pipeline command of n GETs whose completions are counted in *count.
func multiOf(n int, count *atomic.Int32) *cmd {
	c := &cmd{done: make(chan struct{})}
	c.Name = "PIPELINE"
	for i := range n {
		c.Frame = resp.AppendCommand(c.Frame, "GET", "k"+strconv.Itoa(i))
	}
	c.Multi = &engine.Multi{}
	c.Multi.Reset(n)
	c.Reset()
	c.Enqueued()
	c.Done = func(*engine.Command) {
		if count.Add(1) == 1 {
			close(c.done)
		}
	}
	return c
}

// counted returns a single command whose completions are counted in *count.
func counted(count *atomic.Int32, args ...string) *cmd {
	c := newCmd(args...)
	c.Done = func(*engine.Command) {
		if count.Add(1) == 1 {
			close(c.done)
		}
	}
	return c
}

// mixedReply returns the wire form of the i-th reply of a varied stream: integers, short and
// long bulk strings (the arena takes the first, not the second), simple strings, arrays, nulls.
func mixedReply(i int) string {
	s := strconv.Itoa(i)
	switch i % 6 {
	case 0:
		return ":" + s + "\r\n"
	case 1:
		return "$" + strconv.Itoa(len("v"+s)) + "\r\nv" + s + "\r\n"
	case 2:
		return "+OK" + s + "\r\n"
	case 3:
		long := strings.Repeat("L", 300) + s
		return "$" + strconv.Itoa(len(long)) + "\r\n" + long + "\r\n"
	case 4:
		return "*2\r\n$1\r\na\r\n:" + s + "\r\n"
	default:
		return "$-1\r\n"
	}
}

// wantReply returns the value of mixedReply(i).
func wantReply(t *testing.T, i int) resp.Value {
	t.Helper()
	var v resp.Value
	if _, err := resp.Parse([]byte(mixedReply(i)), &v, nil); err != nil {
		t.Fatal(err)
	}
	return v
}

// answerThenClose returns a fake server's handler that reads n commands, writes replies in one
// write, then closes the connection.
func answerThenClose(n int, replies string) func(net.Conn) {
	return func(c net.Conn) {
		rd := resp.NewReader(c, nil)
		var args [][]byte
		for range n {
			if err := rd.ReadCommand(&args); err != nil {
				return
			}
		}
		_, _ = c.Write([]byte(replies))
		_ = c.Close()
	}
}

// sipConn hands the reader at most limit bytes per Read (0: no limit) and counts the reads.
type sipConn struct {
	net.Conn
	limit int
	reads atomic.Int64
}

func (s *sipConn) Read(p []byte) (int, error) {
	if s.limit > 0 && len(p) > s.limit {
		p = p[:s.limit]
	}
	s.reads.Add(1)
	return s.Conn.Read(p)
}

// TestMultiPairsAcrossReadsAndRuns: a pipeline of 200 commands between another caller's
// command before it and one after it, all answered in one server write, read in 7-byte pieces
// (replies split across reads, paired one by one) or whole (paired in runs): every reply lands
// in its slot in order, the three commands complete once each in the order sent, and the
// connection stays healthy.
func TestMultiPairsAcrossReadsAndRuns(t *testing.T) {
	const n = 200
	for _, limit := range []int{7, 0} {
		t.Run("read limit "+strconv.Itoa(limit), func(t *testing.T) {
			var all strings.Builder
			all.WriteString("+before\r\n")
			for i := range n {
				all.WriteString(mixedReply(i))
			}
			all.WriteString("+after\r\n")
			_, ep := startFake(t, answerInOneWrite(n+2, all.String()))
			var sc *sipConn
			cfg := livenessConfig(0, 0)
			cfg.Dialer = wrappingDialer(func(nc net.Conn) net.Conn {
				sc = &sipConn{Conn: nc, limit: limit}
				return sc
			})
			conn, s := mustConnect(t, netio.NewTransport(cfg), ep)

			var na, nm, nb atomic.Int32
			var mu sync.Mutex
			var order []string
			note := func(name string, c *cmd) {
				inner := c.Done
				c.Done = func(cm *engine.Command) {
					mu.Lock()
					order = append(order, name)
					mu.Unlock()
					inner(cm)
				}
			}
			a, m, b := counted(&na, "GET", "a"), multiOf(n, &nm), counted(&nb, "GET", "b")
			note("a", a)
			note("m", m)
			note("b", b)
			readsBefore := sc.reads.Load()
			conn.Send(&a.Command)
			conn.Send(&m.Command)
			conn.Send(&b.Command)
			b.wait(t)
			m.wait(t)
			a.wait(t)
			if a.Err != nil || string(a.Reply.Str) != "before" || b.Err != nil || string(b.Reply.Str) != "after" {
				t.Fatalf("single commands: %v %q, %v %q", a.Err, a.Reply.Str, b.Err, b.Reply.Str)
			}
			if m.Err != nil || m.Multi.Stored() != n || m.FinalStage() != engine.StageAwaitingReply {
				t.Fatalf("pipeline: err %v, stored %d, final %v", m.Err, m.Multi.Stored(), m.FinalStage())
			}
			for i := range n {
				if want := wantReply(t, i); !resp.Equal(m.Multi.Replies[i], want) {
					t.Fatalf("reply %d = %v, want %v", i, m.Multi.Replies[i], want)
				}
			}
			mu.Lock()
			got := strings.Join(order, ",")
			mu.Unlock()
			if got != "a,m,b" || na.Load() != 1 || nm.Load() != 1 || nb.Load() != 1 {
				t.Fatalf("completions %s (counts %d %d %d), want a,m,b once each", got, na.Load(), nm.Load(), nb.Load())
			}
			reads := sc.reads.Load() - readsBefore
			if limit > 0 && reads < int64(len(all.String())/limit) {
				t.Fatalf("%d reads for %d bytes in pieces of %d: the replies were not split", reads, all.Len(), limit)
			}
			if limit == 0 && netio.ReplyRuns(conn) == 0 {
				t.Fatal("no run of replies: the run path was not exercised")
			}
			if conn.Err() != nil || s.losts.Load() != 0 {
				t.Fatalf("the connection failed: %v", conn.Err())
			}
		})
	}
}

// TestMultiConnectionLostMidway: the server answers k of a pipeline's n commands and closes. The
// pipeline completes once with the connection's *IOError as an unknown outcome, its first k
// replies stored; the command sent after it fails once, unknown too; a command sent after the
// failure fails definitely; Lost is reported once.
func TestMultiConnectionLostMidway(t *testing.T) {
	const n, k = 100, 67
	var replies strings.Builder
	for i := range k {
		replies.WriteString(mixedReply(i))
	}
	_, ep := startFake(t, answerThenClose(n+1, replies.String()))
	conn, s := mustConnect(t, netio.NewTransport(livenessConfig(0, 0)), ep)

	var nm, nb, nc atomic.Int32
	m, b := multiOf(n, &nm), counted(&nb, "GET", "after")
	conn.Send(&m.Command)
	conn.Send(&b.Command)
	m.wait(t)
	b.wait(t)
	var ioe *netio.IOError
	if !errors.As(m.Err, &ioe) || !m.MaybeSent() || m.Multi.Stored() != k {
		t.Fatalf("pipeline: err %v, maybe sent %v, stored %d; want an unknown outcome with %d stored", m.Err, m.MaybeSent(), m.Multi.Stored(), k)
	}
	for i := range k {
		if want := wantReply(t, i); !resp.Equal(m.Multi.Replies[i], want) {
			t.Fatalf("reply %d = %v, want %v", i, m.Multi.Replies[i], want)
		}
	}
	if !errors.As(b.Err, &ioe) || !b.MaybeSent() {
		t.Fatalf("command after: err %v, maybe sent %v", b.Err, b.MaybeSent())
	}
	s.awaitLost(t)
	c := counted(&nc, "GET", "late")
	conn.Send(&c.Command)
	c.wait(t)
	if c.Err == nil || c.MaybeSent() {
		t.Fatalf("command sent after the failure: err %v, maybe sent %v; want a definite failure", c.Err, c.MaybeSent())
	}
	time.Sleep(20 * time.Millisecond) // room for a second completion to show
	if nm.Load() != 1 || nb.Load() != 1 || nc.Load() != 1 || s.losts.Load() != 1 {
		t.Fatalf("completions %d %d %d, Lost %d; want one each", nm.Load(), nb.Load(), nc.Load(), s.losts.Load())
	}
}

// misfitCase is a flight for TestMultiMisfitInARun.
type misfitCase struct {
	name string
	// flight: 0 a single command, n a pipeline of n commands, in the order sent.
	flight []int
	// bad is the command whose reply misfits; replies is what the server answers.
	bad     int
	replies string
	// stored is the number of replies each pipeline keeps.
	stored map[int]int
}

// TestMultiMisfitInARun: a reply that does not fit its command, read with other replies, fails
// the connection; every command completes exactly once, in order: those before with their
// replies, the misfit's command with the *resp.ProtocolError (bare for a single command, wrapped
// in the connection's *IOError for a pipeline, which keeps the replies stored before it), the
// rest with the connection's error as unknown outcomes, whether their replies were in the run
// (handleRun's failRun) or not (finish). Each case runs in runs and one reply at a time
// (handle).
func TestMultiMisfitInARun(t *testing.T) {
	bulks := func(n int) string { return strings.Repeat("$1\r\nv\r\n", n) }
	cases := []misfitCase{
		{
			// The pipeline's last reply is in the run: it leaves the flight with the run.
			name: "pipeline, rest of it and a single in the run", flight: []int{0, 5, 0, 0}, bad: 1,
			replies: bulks(1) + bulks(2) + "+OK\r\n" + bulks(2) + bulks(1), stored: map[int]int{1: 2},
		},
		{
			// The pipeline's last reply is beyond the run (runMax 32): it stays in the flight.
			name: "pipeline longer than a run", flight: []int{0, 40, 0}, bad: 1,
			replies: bulks(1) + bulks(3) + "+OK\r\n" + bulks(36) + bulks(1), stored: map[int]int{1: 3},
		},
		{
			// A single command's misfit before a pipeline whose replies are all in the run.
			name: "single before a pipeline in the run", flight: []int{0, 0, 3, 0}, bad: 1,
			replies: bulks(1) + "+OK\r\n" + bulks(3) + bulks(1), stored: map[int]int{2: 0},
		},
		{
			// A single command's misfit before a pipeline longer than the run.
			name: "single before a long pipeline", flight: []int{0, 0, 45, 0}, bad: 1,
			replies: bulks(1) + "+OK\r\n" + bulks(45) + bulks(1), stored: map[int]int{2: 0},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name+", in runs", func(t *testing.T) { tc.run(t, true) })
		t.Run(tc.name+", one at a time", func(t *testing.T) { tc.run(t, false) })
	}
}

// run runs the case; runs false pairs the replies one at a time (conn.go's handle).
func (tc misfitCase) run(t *testing.T, runs bool) {
	// A single command's misfit completes it with the bare error; a pipeline's, with the
	// connection's error wrapping it, however the replies were read (in runs or one at a time,
	// its last reply in the run or not).
	bare := tc.flight[tc.bad] == 0
	total := 0
	for _, size := range tc.flight {
		total += max(size, 1)
	}
	conn, s := connectAnswering(t, total, tc.replies)
	if !runs {
		netio.PairOneAtATime(conn)
	}
	counts := make([]atomic.Int32, len(tc.flight))
	cmds := make([]*cmd, len(tc.flight))
	var mu sync.Mutex
	var order []int
	group := make([]*engine.Command, len(tc.flight))
	for i, size := range tc.flight {
		if size == 0 {
			cmds[i] = counted(&counts[i], "GET", "s"+strconv.Itoa(i))
			cmds[i].Expect = engine.ShapeOf(resp.KindBulkString)
		} else {
			cmds[i] = multiOf(size, &counts[i])
			cmds[i].Multi.Expect = make([]engine.Shape, size)
			for j := range size {
				cmds[i].Multi.Expect[j] = engine.ShapeOf(resp.KindBulkString)
			}
		}
		inner, i := cmds[i].Done, i
		cmds[i].Done = func(c *engine.Command) {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			inner(c)
		}
		group[i] = &cmds[i].Command
	}
	if !conn.OfferGroup(group) {
		t.Fatal("OfferGroup refused the flight")
	}
	for _, c := range cmds {
		c.wait(t)
	}
	s.awaitLost(t)
	for i, c := range cmds {
		var pe *resp.ProtocolError
		var ioe *netio.IOError
		switch {
		case i < tc.bad:
			if c.Err != nil {
				t.Fatalf("command %d before the misfit: %v", i, c.Err)
			}
		case i == tc.bad:
			if !errors.As(c.Err, &pe) || errors.As(c.Err, &ioe) == bare || !c.MaybeSent() {
				t.Fatalf("the misfit's command: %v (maybe sent %v), want the *resp.ProtocolError (bare: %v), unknown", c.Err, c.MaybeSent(), bare)
			}
		default:
			if !errors.As(c.Err, &ioe) || !c.MaybeSent() {
				t.Fatalf("command %d after the misfit: %v (maybe sent %v), want the connection's error, unknown", i, c.Err, c.MaybeSent())
			}
		}
		if want, ok := tc.stored[i]; ok && c.Multi.Stored() != want {
			t.Fatalf("pipeline %d stored %d replies, want %d", i, c.Multi.Stored(), want)
		}
	}
	time.Sleep(20 * time.Millisecond) // room for a second completion to show
	mu.Lock()
	defer mu.Unlock()
	for i := range counts {
		if counts[i].Load() != 1 {
			t.Fatalf("command %d completed %d times", i, counts[i].Load())
		}
		if order[i] != i {
			t.Fatalf("completion order %v, want the order sent", order)
		}
	}
	if runs != (netio.ReplyRuns(conn) > 0) {
		t.Fatalf("%d runs of replies, want runs %v", netio.ReplyRuns(conn), runs)
	}
}

// TestMultiCallerReadsItsOwnPipeline: a pipeline offered as its caller's own group on an idle
// connection is read by that caller (ReadOwn), which reads until its last reply; when the
// caller's deadline passes in the middle, the reader goroutine takes over and the pipeline
// completes once with every reply in its slot. Replies paired in runs or one at a time alike:
// the connection's count of commands in flight stays right (a caller reads only on a connection
// with nothing in flight).
func TestMultiCallerReadsItsOwnPipeline(t *testing.T) {
	t.Run("in runs", func(t *testing.T) { callerReadsItsOwnPipeline(t, true) })
	t.Run("one at a time", func(t *testing.T) { callerReadsItsOwnPipeline(t, false) })
}

func callerReadsItsOwnPipeline(t *testing.T, runs bool) {
	netio.SetParkIdle(t, time.Minute) // the side stays free until the test's group takes it
	srv := redistest.Start(t, redistest.Config{})
	g, ep := startGate(t, srv.Addr())
	conn, s := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), ep)
	if !runs {
		netio.PairOneAtATime(conn)
	}
	const n = 60
	pipelineOfIncrs := func() (*cmd, *atomic.Int32) {
		var count atomic.Int32
		m := multiOf(n, &count)
		m.Frame = m.Frame[:0]
		for range n {
			m.Frame = resp.AppendCommand(m.Frame, "INCR", "multi:own")
		}
		return m, &count
	}
	check := func(m *cmd, count *atomic.Int32, from int64) {
		t.Helper()
		m.wait(t)
		if m.Err != nil || m.Multi.Stored() != n {
			t.Fatalf("pipeline: err %v, stored %d", m.Err, m.Multi.Stored())
		}
		for i := range n {
			if r := m.Multi.Replies[i]; r.Kind != resp.KindInteger || r.Int != from+int64(i) {
				t.Fatalf("reply %d = %v, want %d", i, r, from+int64(i))
			}
		}
		time.Sleep(10 * time.Millisecond)
		if count.Load() != 1 {
			t.Fatalf("the pipeline completed %d times", count.Load())
		}
	}

	lendSide(t, conn)
	reads := netio.CallerReads(conn)
	m, count := pipelineOfIncrs()
	if !conn.OfferOwnGroup([]*engine.Command{&m.Command}) {
		t.Fatal("OfferOwnGroup refused the pipeline")
	}
	if !conn.ReadOwn(context.Background(), &m.Command, &m.Command, time.Now().Add(waitBound)) {
		t.Fatal("ReadOwn did not read the pipeline to its end")
	}
	if netio.CallerReads(conn) != reads+1 {
		t.Fatal("the caller did not read its pipeline itself")
	}
	check(m, count, 1)

	// The caller's deadline passes after part of the replies: the reader goroutine goes on.
	lendSide(t, conn)
	m, count = pipelineOfIncrs()
	g.hold(100) // some of the 60 replies (":61\r\n" ...), then nothing until release
	if !conn.OfferOwnGroup([]*engine.Command{&m.Command}) {
		t.Fatal("OfferOwnGroup refused the pipeline")
	}
	if conn.ReadOwn(context.Background(), &m.Command, &m.Command, time.Now().Add(200*time.Millisecond)) {
		t.Fatal("ReadOwn reported the pipeline complete while its replies were held")
	}
	if arrived := m.Multi.Arrived(); arrived == 0 || arrived >= n || m.completed() {
		t.Fatalf("after the caller's deadline: %d replies arrived (completed %v), want some, not all", arrived, m.completed())
	}
	g.release()
	check(m, count, n+1)
	if conn.Err() != nil || s.losts.Load() != 0 {
		t.Fatalf("the connection failed: %v", conn.Err())
	}
}
