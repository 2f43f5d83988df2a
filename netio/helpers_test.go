package netio_test

import (
	"context"
	"net"
	"runtime"
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

// waitBound bounds every real-time wait of these tests.
const waitBound = 10 * time.Second

// waitFor polls cond until it holds or waitBound passes.
func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(waitBound)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(time.Millisecond)
	}
}

// result is the outcome of one attempt as a sink saw it.
type result struct {
	conn  *netio.Conn
	err   error
	class fsm.FailureClass
}

// sink records the Sink calls of one attempt.
type sink struct {
	dialed  atomic.Int32
	outcome chan result // Ready or Failed
	lost    chan error
	losts   atomic.Int32
	extra   atomic.Int32 // Ready/Failed after the first: a violation
	once    atomic.Bool
	// readyConn is the connection of Ready, set before the outcome is delivered.
	readyConn atomic.Pointer[netio.Conn]
}

func newSink() *sink {
	return &sink{outcome: make(chan result, 1), lost: make(chan error, 1)}
}

func (s *sink) Dialed(fsm.ConnID) { s.dialed.Add(1) }
func (s *sink) Ready(_ fsm.ConnID, c engine.Conn) {
	s.readyConn.Store(c.(*netio.Conn))
	s.deliver(result{conn: c.(*netio.Conn)})
}
func (s *sink) Failed(_ fsm.ConnID, err error, class fsm.FailureClass) {
	s.deliver(result{err: err, class: class})
}
func (s *sink) deliver(r result) {
	if !s.once.CompareAndSwap(false, true) {
		s.extra.Add(1)
		return
	}
	s.outcome <- r
}
func (s *sink) Lost(_ fsm.ConnID, err error) {
	if s.losts.Add(1) == 1 {
		s.lost <- err
	}
}

// await returns the attempt's outcome.
func (s *sink) await(t testing.TB) result {
	t.Helper()
	select {
	case r := <-s.outcome:
		return r
	case <-time.After(waitBound):
		t.Fatalf("no Ready or Failed within %v", waitBound)
		return result{}
	}
}

// awaitLost returns the error of the first Lost.
func (s *sink) awaitLost(t testing.TB) error {
	t.Helper()
	select {
	case err := <-s.lost:
		return err
	case <-time.After(waitBound):
		t.Fatalf("no Lost within %v", waitBound)
		return nil
	}
}

var connIDs atomic.Uint64

// open runs one attempt and returns its sink.
func open(ctx context.Context, tr *netio.Transport, ep engine.Endpoint) *sink {
	s := newSink()
	tr.Open(ctx, engine.OpenRequest{Conn: fsm.ConnID(connIDs.Add(1)), Endpoint: ep, Sink: s})
	return s
}

// mustConnect opens a connection and fails the test unless it becomes ready. The connection is
// closed when the test ends.
func mustConnect(t testing.TB, tr *netio.Transport, ep engine.Endpoint) (*netio.Conn, *sink) {
	t.Helper()
	s := open(context.Background(), tr, ep)
	r := s.await(t)
	if r.err != nil {
		t.Fatalf("connecting to %v: %v", ep, r.err)
	}
	t.Cleanup(r.conn.Close)
	return r.conn, s
}

// mustFail opens a connection and fails the test unless the attempt fails.
func mustFail(t testing.TB, ctx context.Context, tr *netio.Transport, ep engine.Endpoint) result {
	t.Helper()
	r := open(ctx, tr, ep).await(t)
	if r.err == nil {
		r.conn.Close()
		t.Fatalf("connecting to %v succeeded, want a failure", ep)
	}
	return r
}

// cmd is a command with a completion channel.
type cmd struct {
	engine.Command
	done chan struct{}
}

func newCmd(args ...string) *cmd {
	c := &cmd{done: make(chan struct{})}
	c.Name = strings.ToUpper(args[0])
	c.Frame = resp.AppendCommand(nil, args...)
	c.Reset()
	c.Enqueued()
	c.Done = func(*engine.Command) { close(c.done) }
	return c
}

// wait waits for the command to complete.
func (c *cmd) wait(t testing.TB) *cmd {
	t.Helper()
	select {
	case <-c.done:
		return c
	case <-time.After(waitBound):
		t.Fatalf("%s did not complete within %v (stage %v)", c.Name, waitBound, c.Stage())
		return nil
	}
}

// completed reports whether the command completed.
func (c *cmd) completed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// do sends a command and returns its reply, failing on a transport error.
func do(t testing.TB, conn *netio.Conn, args ...string) resp.Value {
	t.Helper()
	c := newCmd(args...)
	conn.Send(&c.Command)
	c.wait(t)
	if c.Err != nil {
		t.Fatalf("%q: %v", args, c.Err)
	}
	return c.Reply
}

// tcp returns the endpoint of a "127.0.0.1:port" address.
func tcp(t testing.TB, addr string) engine.Endpoint {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Endpoint{Host: host, Port: p}
}

// wrappingDialer dials TCP as the default dialer does and hands every new connection to wrap,
// whose result the transport then uses (a test's instrumented or faulty connection).
func wrappingDialer(wrap func(net.Conn) net.Conn) netio.Dialer {
	return netio.Dialer{Dial: func(ctx context.Context, ep engine.Endpoint) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)))
		if err != nil {
			return nil, err
		}
		return wrap(nc), nil
	}}
}

// refusedEndpoint returns a loopback address where nothing listens.
func refusedEndpoint(t testing.TB) engine.Endpoint {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := tcp(t, l.Addr().String())
	_ = l.Close()
	return ep
}

// fakeServer is a loopback listener whose connections are handled by a test function.
type fakeServer struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// startFake listens on loopback and calls handle for each accepted connection on its own
// goroutine; everything is closed when the test ends.
func startFake(t testing.TB, handle func(net.Conn)) (*fakeServer, engine.Endpoint) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{l: l}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.conns = append(f.conns, c)
			f.mu.Unlock()
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			_ = c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f, tcp(t, l.Addr().String())
}

// accepted returns how many connections the fake server accepted.
func (f *fakeServer) accepted() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.conns)
}

// stall holds a connection open without answering until the peer closes it.
func stall(c net.Conn) {
	buf := make([]byte, 512)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// netioGoroutines returns the stacks of goroutines running netio's own code (not tests).
func netioGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "respire/netio.(*Conn)") || strings.Contains(g, "respire/netio.(*Transport)") {
			out = append(out, g)
		}
	}
	return out
}

// checkNoLeaks fails the test if netio goroutines are still running shortly after the point
// where everything was closed.
func checkNoLeaks(t testing.TB) {
	t.Helper()
	var left []string
	if !waitFor(func() bool { left = netioGoroutines(); return len(left) == 0 }) {
		t.Fatalf("%d netio goroutines still running:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

// incrFromCallers has callers goroutines each INCR their own key (prefix and the goroutine's
// number) rounds times, one command at a time, and fails the test unless every reply is the
// count so far: replies reach their callers in order.
func incrFromCallers(t *testing.T, conn *netio.Conn, prefix string, callers, rounds int) {
	t.Helper()
	var wg sync.WaitGroup
	failures := make(chan string, callers)
	for g := range callers {
		wg.Go(func() {
			key := prefix + strconv.Itoa(g)
			for i := 1; i <= rounds; i++ {
				c := newCmd("INCR", key)
				conn.Send(&c.Command)
				c.wait(t)
				if c.Err != nil || c.Reply.Kind != resp.KindInteger || c.Reply.Int != int64(i) {
					failures <- key + " got " + c.Reply.String()
					return
				}
			}
		})
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Fatal(f)
	}
}
