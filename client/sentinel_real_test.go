package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// Real-Sentinel tests (issue 13): one primary, one replica and three redis-sentinel processes on
// loopback, with a short down-after, changed under an INCR load. Each counter the client
// incremented is checked afterwards against the acknowledgements and the unknown outcomes: a
// value above acknowledged plus unknown would be a replay, and so would two consecutive
// acknowledged replies more than one apart with no unknown outcome between them. Writes Redis
// itself loses in a failover (acknowledged by the old primary after the promotion) are counted
// and logged, never blamed on the client.

// TestSentinelReal runs the scenarios one after the other on one group (starting the group is
// the slow part): a SENTINEL FAILOVER under load, every Sentinel down then back, and a kill -9
// of the primary with the first Sentinel down.
func TestSentinelReal(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelConfig{DownAfter: 500 * time.Millisecond})
	for _, sub := range []struct {
		name string
		run  func(*testing.T, *redistest.SentinelGroup)
	}{
		{"Connect", testSentinelConnect},
		{"FailoverUnderLoad", testSentinelFailoverUnderLoad},
		{"AllSentinelsDownThenBack", testSentinelAllDown},
		{"PrimaryKilledWithASentinelDown", testSentinelPrimaryKilled},
	} {
		if !t.Run(sub.name, func(t *testing.T) { sub.run(t, g) }) {
			return
		}
	}
}

// sentinelRig is a Sentinel client with what the tests observe of it.
type sentinelRig struct {
	c      *client.Client
	dials  *dialLog
	reader *sdkmetric.ManualReader

	mu     sync.Mutex
	events []client.ConnectionStateChange
}

func newSentinelRig(t *testing.T, g *redistest.SentinelGroup, eager bool, edit func(*client.Options)) *sentinelRig {
	t.Helper()
	r := &sentinelRig{dials: &dialLog{}, reader: sdkmetric.NewManualReader()}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	opts := client.Options{
		Endpoints:           sentinelEndpoints(t, g),
		SentinelPrimaryName: g.MasterName(),
		Connections:         2,
		CommandTimeout:      2 * time.Second,
		ConnectTimeout:      time.Second,
		Dialer:              r.dials.dialer(),
		MeterProvider:       provider,
		OnConnectionStateChange: func(ch client.ConnectionStateChange) {
			r.mu.Lock()
			r.events = append(r.events, ch)
			r.mu.Unlock()
		},
	}
	if edit != nil {
		edit(&opts)
	}
	var err error
	if eager {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.c, err = client.Connect(ctx, opts)
	} else {
		r.c, err = client.Create(opts)
	}
	if err != nil {
		t.Fatalf("connecting through the Sentinels: %v", err)
	}
	t.Cleanup(func() { _ = r.c.Close() })
	return r
}

// sentinelEndpoints returns the group's Sentinels as client endpoints.
func sentinelEndpoints(t *testing.T, g *redistest.SentinelGroup) []client.Endpoint {
	t.Helper()
	var eps []client.Endpoint
	for _, a := range g.SentinelAddrs() {
		h, p, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, client.Endpoint{Host: h, Port: n})
	}
	return eps
}

// sawScope reports whether an observation of scope s in state st was made.
func (r *sentinelRig) sawScope(s client.ReconnectScope, st client.SourceState) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.Scope == s && e.SourceState == st {
			return true
		}
	}
	return false
}

// counter returns the sum of the data points of a counter instrument.
func (r *sentinelRig) counter(t *testing.T, name string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			if s, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range s.DataPoints {
					n += p.Value
				}
			}
		}
	}
	return n
}

// waitPrimary waits until the client's endpoint is addr and a write succeeds, and returns how
// long that took from since.
func waitPrimary(t *testing.T, c *client.Client, addr string, since time.Time, within time.Duration) time.Duration {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if c.Endpoint().String() == addr {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err := c.Incr(ctx, "sn:probe")
			cancel()
			if err == nil {
				return time.Since(since)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the client did not reach the primary %s within %v (endpoint %s)", addr, within, c.Endpoint())
	return 0
}

// incrLoad increments one counter per writer, sequentially, and records what each call said.
type incrLoad struct {
	prefix  string
	writers []*incrWriter
	stop    chan struct{}
	wg      sync.WaitGroup
}

type incrWriter struct {
	key     string
	acked   int
	unknown int
	failed  int
	// jumps counts consecutive acknowledged replies more than one apart with no unknown outcome
	// between them: a replayed INCR.
	jumps    int
	last     int64
	sinceAck int
	errs     map[string]int
}

func startIncrLoad(c *client.Client, prefix string, writers int) *incrLoad {
	l := &incrLoad{prefix: prefix, stop: make(chan struct{})}
	for i := range writers {
		w := &incrWriter{key: fmt.Sprintf("%s:%d", prefix, i), errs: map[string]int{}}
		l.writers = append(l.writers, w)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				v, err := c.Incr(ctx, w.key)
				cancel()
				switch {
				case err == nil:
					if w.acked > 0 && v > w.last+1+int64(w.sinceAck) {
						w.jumps++
					}
					w.acked++
					w.last, w.sinceAck = v, 0
				case errors.Is(err, client.ErrUnknownOutcome):
					w.unknown++
					w.sinceAck++
				default:
					w.failed++
					w.errs[firstWords(err.Error())]++
					time.Sleep(5 * time.Millisecond)
				}
			}
		}()
	}
	return l
}

func firstWords(s string) string {
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

func (l *incrLoad) finish() { close(l.stop); l.wg.Wait() }

// check compares every counter on primary with what the writers saw, and returns the
// acknowledged increments Redis lost.
func (l *incrLoad) check(t *testing.T, primary *redistest.Server) (acked, lost int) {
	t.Helper()
	for _, w := range l.writers {
		got := primary.Do(t, "GET", w.key)
		v := 0
		if got != "" {
			var err error
			if v, err = strconv.Atoi(strings.TrimSpace(got)); err != nil {
				t.Fatalf("GET %s: %q", w.key, got)
			}
		}
		if v > w.acked+w.unknown {
			t.Errorf("%s is %d, above %d acknowledged + %d unknown: a write was replayed", w.key, v, w.acked, w.unknown)
		}
		if w.jumps > 0 {
			t.Errorf("%s: %d acknowledged replies jumped by more than one with no unknown outcome between", w.key, w.jumps)
		}
		if v < w.acked {
			lost += w.acked - v
		}
		acked += w.acked
		if len(w.errs) > 0 {
			t.Logf("%s: %d acked, %d unknown, %d failed before sending: %v", w.key, w.acked, w.unknown, w.failed, w.errs)
		}
	}
	return acked, lost
}

func testSentinelConnect(t *testing.T, g *redistest.SentinelGroup) {
	r := newSentinelRig(t, g, true, nil)
	primary := g.PrimaryAddr(t)
	if got := r.c.Endpoint().String(); got != primary {
		t.Fatalf("Endpoint() = %s, want the primary %s", got, primary)
	}
	if !r.c.IsSentinel() {
		t.Fatal("IsSentinel() is false")
	}
	ctx := context.Background()
	if err := r.c.Set(ctx, "sn:connect", "v"); err != nil {
		t.Fatal(err)
	}
	if got := g.Primary(t).Do(t, "GET", "sn:connect"); got != "v" {
		t.Fatalf("the write is not on the primary: %q", got)
	}
	// A server error names the primary that answered, never a Sentinel.
	_, err := r.c.Incr(ctx, "sn:connect")
	var se *client.ServerError
	if !errors.As(err, &se) || se.Endpoint.String() != primary {
		t.Fatalf("INCR of a string: %v, want a *ServerError from %s", err, primary)
	}
	if !r.sawScope(client.ScopeSentinelDiscovery, client.SourceConnected) {
		t.Fatal("no sentinel-discovery connected observation")
	}
	// A Create'd client does no I/O until its first operation.
	lazy := newSentinelRig(t, g, false, nil)
	if n := len(lazy.dials.dials); n != 0 {
		t.Fatalf("Create dialed %d endpoints", n)
	}
	if _, _, err := lazy.c.Get(ctx, "sn:connect"); err != nil {
		t.Fatal(err)
	}
	if got := lazy.c.Endpoint().String(); got != primary {
		t.Fatalf("lazy Endpoint() = %s, want %s", got, primary)
	}
}

func testSentinelFailoverUnderLoad(t *testing.T, g *redistest.SentinelGroup) {
	r := newSentinelRig(t, g, true, nil)
	old := g.Primary(t)
	// Let the monitors subscribe before the failover.
	waitFor(t, 5*time.Second, func() bool { return r.sawScope(client.ScopeSentinelMonitor, client.SourceConnected) })
	ctx := context.Background()
	sub, err := r.c.Subscribe(ctx, "sn:events")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := r.c.Publish(ctx, "sn:events", "before"); err != nil {
		t.Fatal(err)
	}
	if m := nextMessage(t, sub); m.Kind != client.MessagePublished || m.Payload != "before" {
		t.Fatalf("first delivery %+v", m)
	}
	load := startIncrLoad(r.c, "sn:failover", 4)
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	if got := g.Sentinels()[1].Do(t, "SENTINEL", "FAILOVER", g.MasterName()); got != "OK" {
		t.Fatalf("SENTINEL FAILOVER: %s", got)
	}
	promoted := g.WaitForFailover(t, old.Addr())
	agreed := time.Since(start)
	took := waitPrimary(t, r.c, promoted.Addr(), start, 15*time.Second)
	time.Sleep(300 * time.Millisecond)
	load.finish()
	t.Logf("failover from %s to %s: the Sentinels agreed after %v, the client wrote to the new primary %v after SENTINEL FAILOVER",
		old.Addr(), promoted.Addr(), agreed, took)
	acked, lost := load.check(t, promoted)
	t.Logf("%d acknowledged increments, %d lost by Redis in the failover", acked, lost)
	if acked == 0 {
		t.Fatal("the load acknowledged nothing")
	}
	if n := r.counter(t, "respire.sentinel.failover"); n != 1 {
		t.Fatalf("respire.sentinel.failover = %d, want 1", n)
	}
	// The subscription came back on the new primary, after a gap marker.
	if m := nextMessage(t, sub); m.Kind != client.MessageGap || m.Channel != "sn:events" {
		t.Fatalf("the delivery after the failover is %+v, want a gap marker", m)
	}
	waitFor(t, 10*time.Second, func() bool {
		n, err := r.c.Publish(ctx, "sn:events", "after")
		return err == nil && n == 1
	})
	if m := nextMessage(t, sub); m.Kind != client.MessagePublished || m.Payload != "after" {
		t.Fatalf("the delivery after the gap is %+v", m)
	}
	// Writes after the move are the new primary's, each applied once.
	for i := range 50 {
		if _, err := r.c.Incr(ctx, "sn:after-failover"); err != nil {
			t.Fatalf("write %d after the failover: %v", i, err)
		}
	}
	if got := promoted.Do(t, "GET", "sn:after-failover"); got != "50" {
		t.Fatalf("sn:after-failover on the new primary = %q, want 50", got)
	}
}

func testSentinelAllDown(t *testing.T, g *redistest.SentinelGroup) {
	live := newSentinelRig(t, g, true, nil)
	waitFor(t, 5*time.Second, func() bool { return live.sawScope(client.ScopeSentinelMonitor, client.SourceConnected) })
	primary := g.Primary(t)
	for _, s := range g.Sentinels() {
		s.Kill()
	}
	// The data connections do not need the Sentinels.
	ctx := context.Background()
	if _, err := live.c.Incr(ctx, "sn:alldown"); err != nil {
		t.Fatalf("a write with every Sentinel down: %v", err)
	}
	// A new client cannot discover the primary: its operations fail, without spinning over the
	// Sentinels, however many there are.
	lazy := newSentinelRig(t, g, false, nil)
	start := time.Now()
	ops, failed := 0, 0
	for time.Since(start) < 2*time.Second {
		octx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err := lazy.c.Incr(octx, "sn:alldown")
		cancel()
		ops++
		if err != nil {
			failed++
		}
		time.Sleep(2 * time.Millisecond)
	}
	dials := 0
	for _, a := range g.SentinelAddrs() {
		dials += lazy.dials.count(a)
	}
	t.Logf("every Sentinel down: %d operations in 2 s, %d failed, %d Sentinel dials", ops, failed, dials)
	if failed != ops {
		t.Fatalf("%d of %d operations succeeded with no Sentinel", ops-failed, ops)
	}
	// Resolutions rest 250 ms, 500 ms, 1 s ... after failing: at most a handful in 2 s, three
	// dials each.
	if dials > 3*6 {
		t.Fatalf("%d Sentinel dials in 2 s: discovery spins", dials)
	}
	for _, s := range g.Sentinels() {
		s.Restart(t)
	}
	back := time.Now()
	waitFor(t, 15*time.Second, func() bool {
		octx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		_, err := lazy.c.Incr(octx, "sn:alldown")
		return err == nil
	})
	t.Logf("the new client found the primary %v after the Sentinels came back", time.Since(back))
	if got := lazy.c.Endpoint().String(); got != primary.Addr() {
		t.Fatalf("Endpoint() = %s, want %s", got, primary.Addr())
	}
	// The live client's monitors come back (a gap asks for one rediscovery).
	waitFor(t, 15*time.Second, func() bool {
		return live.dials.after(g.SentinelAddrs()[0], back) > 0 && live.sawScope(client.ScopeSentinelMonitor, client.SourceConnected)
	})
}

func testSentinelPrimaryKilled(t *testing.T, g *redistest.SentinelGroup) {
	// The group has a replica again once the old primary rejoined after the previous failover.
	waitFor(t, 20*time.Second, func() bool {
		for _, n := range g.Nodes() {
			// Sentinel kills the clients of a node it turns into a replica: TryDo, not Do.
			if role, err := n.TryDo("ROLE"); n.Running() && err == nil && strings.Contains(role, "slave") {
				return true
			}
		}
		return false
	})
	r := newSentinelRig(t, g, true, nil)
	waitFor(t, 5*time.Second, func() bool { return r.sawScope(client.ScopeSentinelMonitor, client.SourceConnected) })
	load := startIncrLoad(r.c, "sn:kill", 4)
	time.Sleep(300 * time.Millisecond)
	// The first configured Sentinel goes down, then the primary is killed: the two others fail
	// it over, and the client finds the new primary through them.
	g.Sentinels()[0].Kill()
	old := g.Primary(t)
	start := time.Now()
	old.Kill()
	promoted := g.WaitForFailover(t, old.Addr())
	agreed := time.Since(start)
	took := waitPrimary(t, r.c, promoted.Addr(), start, 20*time.Second)
	time.Sleep(300 * time.Millisecond)
	load.finish()
	t.Logf("primary %s killed: the Sentinels agreed on %s after %v, the client wrote to it %v after the kill (down-after 500 ms)",
		old.Addr(), promoted.Addr(), agreed, took)
	acked, lost := load.check(t, promoted)
	t.Logf("%d acknowledged increments, %d lost by Redis with the killed primary", acked, lost)
	if n := r.counter(t, "respire.sentinel.failover"); n != 1 {
		t.Fatalf("respire.sentinel.failover = %d, want 1", n)
	}
}

// nextMessage returns the subscription's next delivery, within 10 s.
func nextMessage(t *testing.T, sub *client.Subscription) client.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := sub.Next(ctx)
	if err != nil {
		t.Fatalf("subscription: %v", err)
	}
	return m
}

// waitFor polls cond every 10 ms until it holds or within passes.
func waitFor(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSentinelRealCredentials: Sentinels with a password of their own. The client connects with
// SentinelPassword for the Sentinels and Password for the data nodes; inheriting the data
// password fails discovery with an authentication error that never shows either password.
func TestSentinelRealCredentials(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelConfig{Password: "data-pw", SentinelPassword: "sent-pw"})
	ok := newSentinelRig(t, g, true, func(o *client.Options) { o.Password, o.SentinelPassword = "data-pw", "sent-pw" })
	if err := ok.c.Set(context.Background(), "sn:creds", "v"); err != nil {
		t.Fatal(err)
	}
	if got := ok.c.Endpoint().String(); got != g.PrimaryAddr(t) {
		t.Fatalf("Endpoint() = %s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, client.Options{Endpoints: sentinelEndpoints(t, g), SentinelPrimaryName: g.MasterName(),
		Password: "data-pw"})
	if err == nil {
		_ = c.Close()
		t.Fatal("the Sentinels accepted the inherited data password")
	}
	var se *client.ServerError
	if !errors.As(err, &se) || (se.Code != "WRONGPASS" && se.Code != "NOAUTH" && se.Code != "ERR") {
		t.Fatalf("want an authentication *ServerError, got %v", err)
	}
	if msg := err.Error(); strings.Contains(msg, "data-pw") || strings.Contains(msg, "sent-pw") {
		t.Fatalf("the error shows a password: %s", msg)
	}
	t.Logf("inherited password refused by the Sentinels: %v", err)
}
