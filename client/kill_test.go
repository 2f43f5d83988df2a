package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// recordedConn is a connection of the client under test that records, as they pass, the
// commands the client writes and the replies it reads: the ground truth of what reached the
// wire, independent of what the client reports.
type recordedConn struct {
	net.Conn
	mu      sync.Mutex
	out     []byte   // written bytes not yet parsed into a complete command
	in      []byte   // read bytes not yet parsed into a complete reply
	keys    []string // keys of the complete INCR commands written, in order
	written int      // complete commands written, handshake included
	replies int      // complete replies read (pushes excluded)
	dead    bool     // a read failed or the client closed the connection
	args    [][]byte
	reply   resp.Value

	named map[string]int // complete commands written, by name as sent
	// readers counts the reads that returned bytes, by the goroutine that made them.
	readers map[int]int
}

func (c *recordedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.out = append(c.out, p...)
	for {
		n, err := resp.ParseCommand(c.out, &c.args, nil)
		if err != nil {
			break
		}
		c.written++
		if c.named == nil {
			c.named = make(map[string]int)
		}
		c.named[string(c.args[0])]++
		if len(c.args) == 2 && string(c.args[0]) == "INCR" {
			c.keys = append(c.keys, string(c.args[1]))
		}
		c.out = c.out[n:]
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *recordedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	g := 0
	if n > 0 {
		g = callerGoroutine()
	}
	c.mu.Lock()
	if n > 0 {
		if c.readers == nil {
			c.readers = map[int]int{}
		}
		c.readers[g]++
	}
	c.in = append(c.in, p[:n]...)
	for {
		m, perr := resp.Parse(c.in, &c.reply, nil)
		if perr != nil {
			break
		}
		if c.reply.Kind != resp.KindPush {
			c.replies++
		}
		c.in = c.in[m:]
	}
	if err != nil {
		c.dead = true
	}
	c.mu.Unlock()
	return n, err
}

func (c *recordedConn) Close() error {
	c.mu.Lock()
	c.dead = true
	c.mu.Unlock()
	return c.Conn.Close()
}

// wireRecorder is a Dialer that records every connection it opens.
type wireRecorder struct {
	mu    sync.Mutex
	conns []*recordedConn
}

func (w *wireRecorder) dial(ctx context.Context, ep client.Endpoint) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)))
	if err != nil {
		return nil, err
	}
	rc := &recordedConn{Conn: nc}
	w.mu.Lock()
	w.conns = append(w.conns, rc)
	w.mu.Unlock()
	return rc, nil
}

// readsBy returns how many reads the goroutine g made on every connection, with bytes.
func (w *wireRecorder) readsBy(g int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.conns {
		c.mu.Lock()
		n += c.readers[g]
		c.mu.Unlock()
	}
	return n
}

// pending returns the commands written on live connections and not answered yet.
func (w *wireRecorder) pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.conns {
		c.mu.Lock()
		if !c.dead {
			n += c.written - c.replies
		}
		c.mu.Unlock()
	}
	return n
}

// writtenNamed returns how many commands called name (as sent) were written in full, on every
// connection.
func (w *wireRecorder) writtenNamed(name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.conns {
		c.mu.Lock()
		n += c.named[name]
		c.mu.Unlock()
	}
	return n
}

// interrupted returns the commands written on connections that died without answering them.
func (w *wireRecorder) interrupted() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.conns {
		c.mu.Lock()
		if c.dead {
			n += c.written - c.replies
		}
		c.mu.Unlock()
	}
	return n
}

// writes counts, for every INCR key, how many times the client wrote it, including a command cut
// short by its connection's end whose key had been written in full.
func (w *wireRecorder) writes() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	counts := make(map[string]int)
	for _, c := range w.conns {
		c.mu.Lock()
		for _, k := range c.keys {
			counts[k]++
		}
		if i := bytes.Index(c.out, []byte("INCR\r\n$")); i >= 0 {
			var args [][]byte
			tail := append(append([]byte(nil), c.out...), "\r\n"...)
			if _, err := resp.ParseCommand(tail, &args, nil); err == nil && len(args) == 2 {
				counts[string(args[1])]++
			}
		}
		c.mu.Unlock()
	}
	return counts
}

// outcome is what the client reported for one INCR: the kind, and the reply when OK.
type outcome struct {
	kind  uint8
	reply int64
}

const (
	outcomeOK uint8 = iota + 1
	outcomeUnknown
	outcomeFailed
)

// killReport is what one run of the kill scenario found.
type killReport struct {
	ok, unknown, failed int
	interrupted         int      // commands written on connections that died unanswered
	callerReads         int      // reads made by the callers' own goroutines
	replays             []string // keys the client wrote more than once
	violations          []string // outcomes the server contradicts
}

func (r *killReport) String() string {
	return fmt.Sprintf("ok=%d unknown=%d failed=%d interrupted=%d caller-reads=%d replays=%d violations=%d",
		r.ok, r.unknown, r.failed, r.interrupted, r.callerReads, len(r.replays), len(r.violations))
}

// killRun is how the kill scenario runs: its callers, whether they use a context that cannot
// be cancelled (so that a lone caller reads its replies itself), and the defect to plant.
type killRun struct {
	callers    int
	background bool
	plant      func(*client.Client)
}

// runKillDuringIncrStream runs 32 callers that INCR a fresh key each time over two connections
// while the server kills every connection six times. Every other kill comes while the server is
// paused for writes, once at least 16 commands wait unanswered, so those kills are certain to
// cut commands short; the others strike at random points of a flowing stream, where a command may
// have been applied with its reply lost. plant, when set, plants the defect the run must catch.
//
// The report holds the ground truth of both ends: from the wire (recorded by the Dialer), which
// key was written how many times and how many commands died unanswered; from the server, the
// value of every key, which must agree with what the client reported: OK means applied exactly
// once (the reply was 1), a definite failure means never written and not applied, an unknown
// outcome means applied at most once.
func runKillDuringIncrStream(t *testing.T, plant func(*client.Client)) *killReport {
	return runKill(t, killRun{callers: 32, plant: plant})
}

// runKill is runKillDuringIncrStream with run's callers (a paused kill waits for as many
// commands as there are callers, at most 16) and context.
func runKill(t *testing.T, run killRun) *killReport {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	rec := &wireRecorder{}
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Connections: 2,
		ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: 5 * time.Millisecond}, CommandTimeout: 2 * time.Second,
		Dialer: rec.dial})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if run.plant != nil {
		run.plant(c)
	}
	callers := run.callers
	cctx := ctx
	if run.background {
		cctx = context.Background()
	}
	results := make([][]outcome, callers)
	gids := make([]int, callers)
	var progress atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gids[g] = callerGoroutine()
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				n, err := c.Incr(cctx, "kill:"+strconv.Itoa(g)+":"+strconv.Itoa(seq))
				switch {
				case err == nil:
					results[g] = append(results[g], outcome{kind: outcomeOK, reply: n})
				case errors.Is(err, client.ErrUnknownOutcome):
					results[g] = append(results[g], outcome{kind: outcomeUnknown})
				default:
					results[g] = append(results[g], outcome{kind: outcomeFailed})
				}
				progress.Add(1)
			}
		}()
	}
	for round := range 6 {
		// Let the stream flow again after the previous kill.
		from := progress.Load()
		eventually(t, "the stream to flow", 10*time.Second, func() bool { return progress.Load() >= from+64 })
		paused := round%2 == 1
		if paused {
			srv.Do(t, "CLIENT", "PAUSE", "10000", "WRITE")
			eventually(t, "commands waiting on the paused server", 10*time.Second, func() bool { return rec.pending() >= min(16, callers) })
		}
		srv.Do(t, "CLIENT", "KILL", "TYPE", "normal")
		if paused {
			srv.Do(t, "CLIENT", "UNPAUSE")
		}
		time.Sleep(30 * time.Millisecond)
	}
	close(stop)
	wg.Wait()

	report := &killReport{interrupted: rec.interrupted()}
	for _, g := range gids {
		report.callerReads += rec.readsBy(g)
	}
	written := rec.writes()
	for k, n := range written {
		if n > 1 {
			report.replays = append(report.replays, fmt.Sprintf("%s written %d times", k, n))
		}
	}
	check, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	for g, outs := range results {
		for from := 0; from < len(outs); from += 500 {
			keys := make([]string, 0, 500)
			for seq := from; seq < min(from+500, len(outs)); seq++ {
				keys = append(keys, "kill:"+strconv.Itoa(g)+":"+strconv.Itoa(seq))
			}
			values, err := check.MGet(ctx, keys...)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range values {
				key, out := keys[i], outs[from+i]
				applied := 0
				if v.Valid {
					if applied, err = strconv.Atoi(v.Value); err != nil {
						t.Fatal(err)
					}
				}
				switch {
				case applied > 1:
					report.violations = append(report.violations, fmt.Sprintf("%s applied %d times", key, applied))
				case out.kind == outcomeOK && (applied != 1 || out.reply != 1):
					report.violations = append(report.violations, fmt.Sprintf("%s reported OK with reply %d, applied %d times", key, out.reply, applied))
				case out.kind == outcomeFailed && (applied != 0 || written[key] != 0):
					report.violations = append(report.violations, fmt.Sprintf("%s failed definitely but was written %d times, applied %d", key, written[key], applied))
				}
				switch out.kind {
				case outcomeOK:
					report.ok++
				case outcomeUnknown:
					report.unknown++
				default:
					report.failed++
				}
			}
		}
	}
	t.Logf("%v", report)
	return report
}

// TestClientKillDuringIncrStream kills connections under a stream of INCRs and checks, against
// the wire and the server, that no command was replayed and every reported outcome is honest.
// It fails when the kills interrupted nothing (the run would prove nothing): commands must have
// died unanswered on the wire, and the client must have reported unknown outcomes for them.
func TestClientKillDuringIncrStream(t *testing.T) {
	r := runKillDuringIncrStream(t, nil)
	if r.interrupted == 0 || r.unknown == 0 {
		t.Fatalf("the kills interrupted nothing (%v): the test proved nothing", r)
	}
	for _, v := range append(r.replays, r.violations...) {
		t.Error(v)
	}
}

// TestClientKillDuringLoneCallerIncrStream is the kill scenario with one caller, which reads
// its replies itself on its idle connections, with a context that cannot be cancelled and with
// one that can: the kills, three of them while the server holds the caller's INCR unanswered,
// cut the caller's own reads short. No command is replayed and every outcome is honest; the
// test fails when the kills interrupted nothing or the caller never read a reply itself.
func TestClientKillDuringLoneCallerIncrStream(t *testing.T) {
	for _, background := range []bool{true, false} {
		r := runKill(t, killRun{callers: 1, background: background})
		if r.interrupted == 0 || r.unknown == 0 {
			t.Fatalf("background %v: the kills interrupted nothing (%v): the test proved nothing", background, r)
		}
		if r.callerReads == 0 {
			t.Fatalf("background %v: the caller never read a reply itself (%v): the test does not exercise its path", background, r)
		}
		for _, v := range append(r.replays, r.violations...) {
			t.Error(v)
		}
	}
}

// TestClientKillDuringIncrStreamCatchesPlantedReplay plants the defect the kill test exists
// for, a client that sends a command of unknown outcome again, and checks the test catches it,
// with 32 callers and with a lone caller that reads its own replies:
// the paused kills guarantee commands of unknown outcome, so the replay happens, and the wire
// record shows their keys written twice, every run.
func TestClientKillDuringIncrStreamCatchesPlantedReplay(t *testing.T) {
	for _, run := range []killRun{{callers: 32}, {callers: 1, background: true}} {
		run.plant = client.PlantReplayOfUnknownOutcomes
		r := runKill(t, run)
		if r.interrupted == 0 {
			t.Fatalf("%d caller(s): the kills interrupted nothing (%v)", run.callers, r)
		}
		if len(r.replays) == 0 {
			t.Fatalf("%d caller(s): the planted replay went unnoticed (%v)", run.callers, r)
		}
	}
}
