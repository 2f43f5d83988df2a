package netio_test

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/resp"
)

// answerInOneWrite returns a fake server's handler that reads n commands, then writes replies,
// all of them in one write, and then holds the connection open until the peer closes it.
func answerInOneWrite(n int, replies string) func(net.Conn) {
	return func(c net.Conn) {
		rd := resp.NewReader(c, nil)
		var args [][]byte
		for range n {
			if err := rd.ReadCommand(&args); err != nil {
				return
			}
		}
		if _, err := c.Write([]byte(replies)); err != nil {
			return
		}
		stall(c)
	}
}

// completions records the order in which commands complete and fails the test on a second
// completion of one command.
type completions struct {
	mu    sync.Mutex
	order []int
	seen  map[int]int
}

// group builds n GET commands whose completions c records; cmds[i] reports as i.
func (c *completions) group(n int) []*cmd {
	c.seen = map[int]int{}
	cmds := make([]*cmd, n)
	for i := range cmds {
		cm := newCmd("GET", "k"+strconv.Itoa(i))
		i := i
		cm.Done = func(*engine.Command) {
			c.mu.Lock()
			c.order = append(c.order, i)
			c.seen[i]++
			again := c.seen[i] > 1
			c.mu.Unlock()
			if !again {
				close(cm.done)
			}
		}
		cmds[i] = cm
	}
	return cmds
}

// check fails unless every command completed exactly once, in the order they were sent.
func (c *completions) check(t *testing.T, n int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range c.seen {
		if k != 1 {
			t.Errorf("command %d completed %d times", i, k)
		}
	}
	if len(c.order) != n {
		t.Fatalf("%d completions, want %d", len(c.order), n)
	}
	for i, k := range c.order {
		if i != k {
			t.Fatalf("completion order %v, want the order of the sends", c.order)
		}
	}
}

// connectAnswering connects to a fake server that answers the first n commands it reads with
// replies, all in one write (answerInOneWrite); the connection closes when the test ends.
func connectAnswering(t *testing.T, n int, replies string) (*netio.Conn, *sink) {
	t.Helper()
	_, ep := startFake(t, answerInOneWrite(n, replies))
	return mustConnect(t, netio.NewTransport(livenessConfig(0, 0)), ep)
}

func offerAll(t *testing.T, conn *netio.Conn, cmds []*cmd) {
	t.Helper()
	group := make([]*engine.Command, len(cmds))
	for i, c := range cmds {
		group[i] = &c.Command
	}
	if !conn.OfferGroup(group) {
		t.Fatal("OfferGroup refused the group")
	}
}

// answerBulks sends one GET per value to a fake server that answers them all with the values as
// bulk strings, in one write, and checks that each command completed once, in order, with its
// value, at the stage of a reply (awaiting-reply), and that the connection stayed healthy. It
// returns how many runs of more than one reply the connection paired them in.
func answerBulks(t *testing.T, values []string) uint64 {
	t.Helper()
	var b strings.Builder
	for _, v := range values {
		b.WriteString("$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n")
	}
	conn, s := connectAnswering(t, len(values), b.String())

	var rec completions
	cmds := rec.group(len(values))
	offerAll(t, conn, cmds)
	for i, c := range cmds {
		c.wait(t)
		if c.Err != nil || string(c.Reply.Str) != values[i] {
			t.Fatalf("command %d: a reply of %d bytes (want %d), err %v", i, len(c.Reply.Str), len(values[i]), c.Err)
		}
		if c.FinalStage() != engine.StageAwaitingReply {
			t.Fatalf("command %d ended at %v, want awaiting-reply", i, c.FinalStage())
		}
	}
	rec.check(t, len(values))
	if conn.Err() != nil || s.losts.Load() != 0 {
		t.Fatalf("the connection failed: %v", conn.Err())
	}
	return netio.ReplyRuns(conn)
}

// TestRepliesOfOneReadPairInRuns: replies that arrive together are paired in runs of at most
// runMax (32) under one hold of the flight lock, each with its own command, in order. 70 replies
// in one write take at least 3 runs (32 + 32 + 6) and far fewer than one per reply; the
// connection stays healthy.
func TestRepliesOfOneReadPairInRuns(t *testing.T) {
	const n = 70
	values := make([]string, n)
	for i := range values {
		values[i] = "v" + strconv.Itoa(i)
	}
	if runs := answerBulks(t, values); runs < 3 || runs >= n/2 {
		t.Fatalf("%d runs of replies for %d replies read together, want between 3 and %d", runs, n, n/2-1)
	}
}

// TestLargeRepliesEndRunsEarly: a run also ends once the replies decoded after its first took
// runBytes (2 KiB) of the read buffer, so that costly replies wake their callers sooner. 40
// replies of 1 KiB in one write complete in order in runs of at most three replies (the first,
// and two that pass the bound), at least a dozen runs where runMax alone would make two or
// three.
func TestLargeRepliesEndRunsEarly(t *testing.T) {
	const n = 40
	values := make([]string, n)
	for i := range values {
		values[i] = strconv.Itoa(i) + strings.Repeat("x", 1<<10)
	}
	if runs := answerBulks(t, values); runs < 12 {
		t.Fatalf("%d runs of replies for %d replies of 1 KiB read together, want at least 12", runs, n)
	}
}

// TestMisfitInARunFailsTheRestOnce: a reply in the middle of a run that does not fit its
// command fails the connection. The commands before it complete with their replies, it
// completes with a *resp.ProtocolError, and the commands after it, whose replies were read in
// the same run, complete with the connection's *IOError as unknown outcomes, before the
// commands still in flight; each exactly once, in order; Lost is reported once.
func TestMisfitInARunFailsTheRestOnce(t *testing.T) {
	const n = 8
	const bad = 3
	replies := strings.Repeat("$1\r\nv\r\n", bad) + "+OK\r\n" + strings.Repeat("$1\r\nv\r\n", n-bad-1)
	// The server answers only the first n commands: the two sent after stay in flight.
	conn, s := connectAnswering(t, n, replies)

	var rec completions
	cmds := rec.group(n + 2)
	for _, c := range cmds {
		c.Expect = engine.ShapeOf(resp.KindBulkString, resp.KindNull)
	}
	offerAll(t, conn, cmds)
	for _, c := range cmds {
		c.wait(t)
	}
	for i, c := range cmds {
		var pe *resp.ProtocolError
		var ioe *netio.IOError
		switch {
		case i < bad:
			if c.Err != nil || string(c.Reply.Str) != "v" {
				t.Fatalf("command %d: reply %q, err %v; want its reply", i, c.Reply.Str, c.Err)
			}
		case i == bad:
			if !errors.As(c.Err, &pe) || errors.As(c.Err, &ioe) {
				t.Fatalf("command %d (the misfit): err %v, want the bare *resp.ProtocolError", i, c.Err)
			}
		default:
			if !errors.As(c.Err, &ioe) || !errors.As(c.Err, &pe) || !c.MaybeSent() {
				t.Fatalf("command %d: err %v (maybe sent %v), want the connection's *IOError, an unknown outcome", i, c.Err, c.MaybeSent())
			}
		}
	}
	rec.check(t, n+2)
	if netio.ReplyRuns(conn) == 0 {
		t.Fatal("the replies were not paired in a run: the test did not exercise the run's failure")
	}
	if err := s.awaitLost(t); err == nil {
		t.Fatal("Lost reported no error")
	}
	if got := s.losts.Load(); got != 1 {
		t.Fatalf("Lost reported %d times, want once", got)
	}
}

// TestBrokenReplyInARunFailsAfterTheRepliesBeforeIt: a malformed reply behind whole ones in the
// same read fails the connection only after the replies before it completed their commands; the
// rest complete with the connection's *IOError, each once, in order.
func TestBrokenReplyInARunFailsAfterTheRepliesBeforeIt(t *testing.T) {
	const n = 6
	replies := strings.Repeat(":1\r\n", 4) + "?x\r\n"
	conn, s := connectAnswering(t, n, replies)

	var rec completions
	cmds := rec.group(n)
	offerAll(t, conn, cmds)
	for i, c := range cmds {
		c.wait(t)
		var pe *resp.ProtocolError
		if i < 4 {
			if c.Err != nil || c.Reply.Int != 1 {
				t.Fatalf("command %d: reply %v, err %v; want its reply", i, c.Reply, c.Err)
			}
		} else if !errors.As(c.Err, &pe) || !c.MaybeSent() {
			t.Fatalf("command %d: err %v, want the protocol failure as an unknown outcome", i, c.Err)
		}
	}
	rec.check(t, n)
	if netio.ReplyRuns(conn) == 0 {
		t.Fatal("the replies were not paired in a run")
	}
	s.awaitLost(t)
}

// TestSurplusReplyInARunFailsTheConnection: a run holding more replies than commands in flight
// completes every command with its reply and then fails the connection (a reply without a
// pending command), reporting Lost once.
func TestSurplusReplyInARunFailsTheConnection(t *testing.T) {
	const n = 3
	conn, s := connectAnswering(t, n, strings.Repeat("+OK\r\n", n+1))

	var rec completions
	cmds := rec.group(n)
	offerAll(t, conn, cmds)
	for i, c := range cmds {
		if c.wait(t); c.Err != nil || string(c.Reply.Str) != "OK" {
			t.Fatalf("command %d: reply %v, err %v", i, c.Reply, c.Err)
		}
	}
	rec.check(t, n)
	err := s.awaitLost(t)
	var pe *resp.ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("Lost with %v, want a protocol error", err)
	}
	if netio.ReplyRuns(conn) == 0 {
		t.Fatal("the replies were not paired in a run")
	}
}

// TestPushInARunIsDropped: on a connection without a push handler, a RESP3 push between replies
// read together completes nothing; the replies still pair with their own commands.
func TestPushInARunIsDropped(t *testing.T) {
	const n = 4
	replies := ":0\r\n>2\r\n+invalidate\r\n:9\r\n:1\r\n:2\r\n>1\r\n+x\r\n:3\r\n"
	conn, s := connectAnswering(t, n, replies)

	var rec completions
	cmds := rec.group(n)
	offerAll(t, conn, cmds)
	for i, c := range cmds {
		if c.wait(t); c.Err != nil || c.Reply.Kind != resp.KindInteger || c.Reply.Int != int64(i) {
			t.Fatalf("command %d: reply %v, err %v", i, c.Reply, c.Err)
		}
	}
	rec.check(t, n)
	if netio.ReplyRuns(conn) == 0 {
		t.Fatal("the replies were not paired in a run")
	}
	if conn.Err() != nil || s.losts.Load() != 0 {
		t.Fatalf("the connection failed: %v", conn.Err())
	}
}

// TestDrainWithinARunClosesAfterTheRun: Drain called while a run completes its commands (from
// the Done of a command in the middle of the run, and from the Done of its last command) closes
// the connection once every accepted command completed, without a Lost. The run stores the
// delivered count once, after its last completion, and then looks at draining: a Drain that
// loaded the count before that store must be seen by the reader, or the connection would stay
// open with nothing left to read.
func TestDrainWithinARunClosesAfterTheRun(t *testing.T) {
	const n = 10
	for _, at := range []int{4, n - 1} {
		t.Run("at="+strconv.Itoa(at), func(t *testing.T) {
			var b strings.Builder
			for i := range n {
				b.WriteString(":" + strconv.Itoa(i) + "\r\n")
			}
			conn, s := connectAnswering(t, n, b.String())

			var rec completions
			cmds := rec.group(n)
			done := cmds[at].Done
			cmds[at].Done = func(c *engine.Command) {
				conn.Drain()
				done(c)
			}
			offerAll(t, conn, cmds)
			for i, c := range cmds {
				c.wait(t)
				if c.Err != nil || c.Reply.Int != int64(i) {
					t.Fatalf("command %d: reply %s, err %v", i, c.Reply.String(), c.Err)
				}
			}
			rec.check(t, n)
			if runs := netio.ReplyRuns(conn); runs == 0 {
				t.Fatal("the replies were not paired in a run: the test saw no run")
			}
			if !waitFor(conn.Stopped) {
				t.Fatal("the drained connection did not close")
			}
			if l := s.losts.Load(); l != 0 {
				t.Fatalf("a drained connection reported Lost %d times", l)
			}
		})
	}
}
