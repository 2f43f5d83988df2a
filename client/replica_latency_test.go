package client_test

import (
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// delayProxy forwards loopback connections to a server, delaying everything the server sends
// by delay: latency without tc. With hold set, it accepts new connections and forwards nothing
// on them (a peer that never answers); cut closes the connections it carries.
type delayProxy struct {
	ln    net.Listener
	delay atomic.Int64 // a time.Duration
	hold  atomic.Bool
	to    string
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startDelayProxy(t *testing.T, to *redistest.Server, delay time.Duration) *delayProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &delayProxy{ln: ln, to: "127.0.0.1:" + strconv.Itoa(to.Port())}
	p.setDelay(delay)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *delayProxy) endpoint() client.Endpoint {
	return client.Endpoint{Host: "127.0.0.1", Port: p.ln.Addr().(*net.TCPAddr).Port}
}

// setDelay changes the delay of what the server sends from now on.
func (p *delayProxy) setDelay(d time.Duration) { p.delay.Store(int64(d)) }

// cut closes every connection the proxy carries or holds.
func (p *delayProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *delayProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.hold.Load() {
			p.mu.Lock()
			p.conns = append(p.conns, in) // never answered; closed by cut or close
			p.mu.Unlock()
			continue
		}
		out, err := net.Dial("tcp", p.to)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); _, _ = io.Copy(out, in); _ = out.Close() }()
		go func() {
			defer p.wg.Done()
			buf := make([]byte, 32<<10)
			for {
				n, err := out.Read(buf)
				if n > 0 {
					time.Sleep(time.Duration(p.delay.Load()))
					if _, werr := in.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			_ = in.Close()
		}()
	}
}

func (p *delayProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestReplicaNearestReal: Nearest reads go to the server that answers PING fastest. The
// primary and one replica sit behind a proxy adding 30 ms; the other replica is direct, and
// takes every read once measured.
func TestReplicaNearestReal(t *testing.T) {
	primary, replicas := startReplicaSet(t)
	slowPrimary := startDelayProxy(t, primary, 30*time.Millisecond)
	slowReplica := startDelayProxy(t, replicas[0], 30*time.Millisecond)
	zero := time.Duration(0)
	c, err := client.Connect(ctxT(t), client.Options{
		Endpoints:               []client.Endpoint{slowPrimary.endpoint()},
		ReplicaEndpoints:        []client.Endpoint{slowReplica.endpoint(), endpointOf(replicas[1])},
		ReadFrom:                client.Nearest,
		ReplicaLatencyTolerance: &zero,
		ReplicaRefreshInterval:  time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxT(t)
	if err := c.Set(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	waitReplicaFor(t, 5*time.Second, "the replica has the write", func() bool { return replicas[1].Do(t, "GET", "k") == "v" })
	waitReplicaFor(t, 5*time.Second, "the fast replica is measured", func() bool {
		_, _, err := c.Get(ctx, "k")
		s := c.ReadRoutingSnapshot()
		return err == nil && s != nil && len(s.EligibleEndpoints) == 1 && s.EligibleEndpoints[0] == endpointOf(replicas[1])
	})
	base := []int{getCalls(t, primary), getCalls(t, replicas[0]), getCalls(t, replicas[1])}
	for range 20 {
		if v, _, err := c.Get(ctx, "k"); err != nil || v != "v" {
			t.Fatalf("Nearest GET: %q, %v", v, err)
		}
	}
	if d := getCalls(t, replicas[1]) - base[2]; d != 20 {
		t.Errorf("the fast replica ran %d of 20 GETs (primary %d, slow replica %d)", d,
			getCalls(t, primary)-base[0], getCalls(t, replicas[0])-base[1])
	}
}

// TestReplicaPrimaryPreferredReal: PrimaryPreferred reads the primary, and a replica once the
// primary is gone; Primary reads then fail.
func TestReplicaPrimaryPreferredReal(t *testing.T) {
	primary, replicas := startReplicaSet(t)
	c := replicaClient(t, primary, replicas, client.PrimaryPreferred)
	ctx := ctxT(t)
	if err := c.Set(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	for _, r := range replicas {
		waitReplicaFor(t, 5*time.Second, "the write replicated", func() bool { return r.Do(t, "GET", "k") == "v" })
	}
	before := getCalls(t, primary)
	if v, _, err := c.Get(ctx, "k"); err != nil || v != "v" {
		t.Fatalf("GET: %q, %v", v, err)
	}
	if getCalls(t, primary) != before+1 {
		t.Fatal("PrimaryPreferred did not read the primary first")
	}
	primary.Kill()
	// The first read after the kill may have been written to the dying connection (an unknown
	// outcome, never resent); the next ones go to a replica.
	var served int
	for range 10 {
		if v, _, err := c.Get(ctx, "k"); err == nil && v == "v" {
			served++
		} else if !errors.As(err, new(*client.UnknownOutcomeError)) && !errors.As(err, new(*client.ConnectionError)) {
			t.Fatalf("GET after the primary's kill: %v", err)
		}
	}
	if served < 9 {
		t.Fatalf("%d of 10 reads served by replicas after the primary's kill", served)
	}
	if err := c.Set(ctx, "k", "w"); err == nil {
		t.Fatal("a write succeeded with the primary down")
	}
}

// TestReplicaHedgedReadsReal: one replica answers 300 ms late (a delaying proxy). Reads sent
// to it are hedged to the other replica after 5 ms, and the hedge wins; the budget caps the
// hedges at the configured share of the watched reads; writes are never hedged.
func TestReplicaHedgedReadsReal(t *testing.T) {
	primary, replicas := startReplicaSet(t)
	slow := startDelayProxy(t, replicas[0], 300*time.Millisecond)
	for _, tc := range []struct {
		percent int
		reads   int
	}{{100, 10}, {20, 20}} {
		c, err := client.Connect(ctxT(t), client.Options{
			Endpoints:              []client.Endpoint{endpointOf(primary)},
			ReplicaEndpoints:       []client.Endpoint{slow.endpoint(), endpointOf(replicas[1])},
			ReadFrom:               client.Replica,
			ReplicaRefreshInterval: 2 * time.Second,
			HedgedReads:            &client.HedgedReadOptions{Delay: 5 * time.Millisecond, MaximumExtraLoadPercent: tc.percent},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		if err := c.Set(ctx, "k", "v"); err != nil {
			t.Fatal(err)
		}
		for _, r := range replicas {
			waitReplicaFor(t, 5*time.Second, "the write replicated", func() bool { return r.Do(t, "GET", "k") == "v" })
		}
		waitReplicaFor(t, 5*time.Second, "both replicas validated", func() bool {
			_, _, err := c.Get(ctx, "k") // fails until a replica is validated
			s := c.ReadRoutingSnapshot()
			return err == nil && s != nil && len(s.EligibleEndpoints) == 2
		})
		before := c.HedgeStats()
		for range tc.reads {
			if v, _, err := c.Get(ctx, "k"); err != nil || v != "v" {
				t.Fatalf("hedged GET: %q, %v", v, err)
			}
		}
		if err := c.Set(ctx, "k", "v"); err != nil {
			t.Fatal(err)
		}
		s := c.HedgeStats()
		watched, sent, won := s.Watched-before.Watched, s.Sent-before.Sent, s.Won-before.Won
		t.Logf("%d%%: %d reads, %d watched, %d hedges sent, %d won", tc.percent, tc.reads, watched, sent, won)
		if watched != uint64(tc.reads) {
			t.Errorf("%d of %d reads watched", watched, tc.reads)
		}
		if sent == 0 || won == 0 {
			t.Errorf("no hedge sent (%d) or won (%d) against a 300 ms replica", sent, won)
		}
		if sent*100 > s.Watched*uint64(tc.percent) {
			t.Errorf("%d hedges for %d watched reads at %d%%", s.Sent, s.Watched, tc.percent)
		}
		_ = c.Close()
	}
}
