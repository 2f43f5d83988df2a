package netio_test

import (
	"context"
	"math/bits"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
)

// deadlineLog is a transport connection that records the read deadlines set on it.
type deadlineLog struct {
	net.Conn
	mu    sync.Mutex
	calls int
	last  time.Time
}

func (c *deadlineLog) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.calls++
	c.last = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *deadlineLog) snapshot() (int, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls, c.last
}

// TestOwnGroupsLeaveTheTimersAlone: a lone caller that writes its own groups one after another
// (OfferOwnGroup, then ReadOwn) neither moves the park timer nor sets the socket's read deadline
// for each of them: a group written by its reading caller arms no claim window, a free side's
// timer moves only when it would fire too late, and a caller keeps the read deadline the last
// one left while it leaves at least half of its own budget. Before, every group reset the park
// timer twice and set and cleared the read deadline (200 calls for 100 groups). Once
// the side goes back to the reader goroutine, the kept deadline is cleared: the reader goroutine
// then reads past it without failing the connection.
func TestOwnGroupsLeaveTheTimersAlone(t *testing.T) {
	netio.SetParkIdle(t, time.Minute) // the free side stays free between groups, however slow
	srv := redistest.Start(t, redistest.Config{})
	var log *deadlineLog
	cfg := netio.TransportConfig{Dialer: wrappingDialer(func(nc net.Conn) net.Conn {
		log = &deadlineLog{Conn: nc}
		return log
	})}
	conn, _ := mustConnect(t, netio.NewTransport(cfg), tcp(t, srv.Addr()))
	lendSide(t, conn)
	handshake, _ := log.snapshot()
	resetsBefore := netio.ParkTimerResets(conn)

	const rounds, size = 100, 10
	const budget = 400 * time.Millisecond
	start := time.Now()
	next := int64(1)
	for range rounds {
		group, unit := groupOf(incrs("timers:n", size)...)
		if !conn.OfferOwnGroup(unit) {
			t.Fatal("the open connection refused a group")
		}
		conn.ReadOwn(context.Background(), unit[0], unit[len(unit)-1], time.Now().Add(budget))
		for _, c := range group {
			c.wait(t)
			if c.Err != nil || c.Reply.Int != next {
				t.Fatalf("INCR: %v %s, want %d", c.Err, c.Reply.String(), next)
			}
			next++
		}
	}
	elapsed := time.Since(start)
	if got := netio.CallerReads(conn); got < rounds {
		t.Fatalf("the caller read %d of %d groups, want every one (the side stays free)", got, rounds)
	}
	calls, last := log.snapshot()
	// One deadline at first, then one each time the kept one has less than half the budget
	// left: at most one per budget/2 of the run.
	if set, most := calls-handshake, 2+int(elapsed/(budget/2)); set > most {
		t.Fatalf("%d read deadlines for %d groups in %v, want at most %d", set, rounds, elapsed, most)
	}
	if last.IsZero() {
		t.Fatal("no read deadline is kept on the socket after the groups: the check above proves nothing")
	}
	if resets := netio.ParkTimerResets(conn) - resetsBefore; resets > 3 {
		t.Fatalf("the park timer moved %d times for %d groups, want at most 3", resets, rounds)
	}

	// A single command gives the side back to the reader goroutine, which clears the deadline;
	// past the caller's deadline, its reads still succeed.
	if v := do(t, conn, "INCR", "timers:n"); v.Int != next {
		t.Fatalf("INCR after the groups: %s, want %d", v.String(), next)
	}
	next++
	if _, last := log.snapshot(); !last.IsZero() {
		t.Fatalf("the read deadline %v stays on the socket after the reader goroutine took the side back", last)
	}
	time.Sleep(budget + 50*time.Millisecond)
	if v := do(t, conn, "INCR", "timers:n"); v.Int != next {
		t.Fatalf("INCR past the last caller's deadline: %s, want %d", v.String(), next)
	}
}

// TestBusySideMovesTheParkTimerRarely: a lone caller that reads its own groups back to back
// keeps the read side busy for many times parkIdle. The caller's reads do not move the park
// timer (before, the read that started in the second half of parkIdle stopped it and the end
// of that read armed it again: some two moves per parkIdle); the timer fires on the busy side
// with a period that doubles up to BusyWatch times parkIdle. Once the caller stops, the side
// goes back to the reader goroutine within that time, and the period starts again at
// parkIdle.
func TestBusySideMovesTheParkTimerRarely(t *testing.T) {
	const idle = 5 * time.Millisecond
	netio.SetParkIdle(t, idle)
	srv := redistest.Start(t, redistest.Config{})
	conn, _ := mustConnect(t, netio.NewTransport(netio.TransportConfig{}), tcp(t, srv.Addr()))
	lendSide(t, conn)
	resetsBefore := netio.ParkTimerResets(conn)
	readerBefore, firesBefore, backBefore := netio.ParkTimerCounts(conn)

	const run = 60 * idle
	start := time.Now()
	rounds := 0
	for time.Since(start) < run {
		group, unit := groupOf(incrs("busy:n", 4)...)
		if !conn.OfferOwnGroup(unit) {
			t.Fatal("the open connection refused a group")
		}
		conn.ReadOwn(context.Background(), unit[0], unit[len(unit)-1], time.Time{})
		for _, c := range group {
			c.wait(t)
			if c.Err != nil {
				t.Fatalf("INCR: %v", c.Err)
			}
		}
		rounds++
	}
	elapsed := time.Since(start)
	lastRead := time.Now()
	free := netio.ReadSideFree(conn)
	period := netio.ParkPeriod(conn)
	reader, fires, backs := netio.ParkTimerCounts(conn)
	reader, fires, backs = reader-readerBefore, fires-firesBefore, backs-backBefore
	resets := netio.ParkTimerResets(conn) - resetsBefore
	t.Logf("%d groups in %v: %d timer moves (%d by reading callers), %d firings on a busy side, %d take-backs, period %v",
		rounds, elapsed, resets, reader, fires, backs, period)

	if got := netio.CallerReads(conn); got < uint64(rounds)/2 {
		t.Fatalf("the caller read %d of %d groups: the side was not its to keep busy", got, rounds)
	}
	// The timer fired while the side was busy, or nothing here is shown. A take-back (the
	// caller stalled for parkIdle on a loaded machine) starts the period again.
	if fires < 3 {
		t.Fatalf("the park timer found the side busy %d times in %v, want at least 3", fires, elapsed)
	}
	if reader > 1+backs {
		t.Fatalf("reading callers moved the park timer %d times (%d take-backs), want at most %d", reader, backs, 1+backs)
	}
	ramp := 2 + bits.Len(uint(netio.BusyWatch)) // arming once the side is lent, then the doubling
	if most := uint64(ramp)*(1+backs) + uint64(elapsed/(netio.BusyWatch*idle)); resets > most {
		t.Fatalf("the park timer moved %d times in %v (%d take-backs), want at most %d", resets, elapsed, backs, most)
	}

	if backs == 0 && period <= idle {
		t.Fatalf("period %v after %d firings on a busy side, want it doubled", period, fires)
	}

	// The caller stops: the reader goroutine takes the side back within the longest period.
	// (A loaded machine may have stalled the caller long enough for a take-back as the run
	// ended: one more group frees the side again.)
	for i := 0; !free && i < 10; i++ {
		group, unit := groupOf([]string{"PING"})
		if !conn.OfferOwnGroup(unit) {
			t.Fatal("the open connection refused a group")
		}
		conn.ReadOwn(context.Background(), unit[0], unit[0], time.Time{})
		group[0].wait(t)
		lastRead = time.Now()
		free = netio.ReadSideFree(conn)
	}
	if !free {
		t.Fatal("the side is not free after the caller's last group: its going back shows nothing")
	}
	if !waitFor(func() bool { return !netio.ReadSideFree(conn) }) {
		t.Fatal("the reader goroutine never took the free side back")
	}
	if took, most := time.Since(lastRead), netio.BusyWatch*idle+time.Second; took > most {
		t.Fatalf("the side went back %v after the last read, want within %v", took, most)
	}
	if got := netio.ParkPeriod(conn); got != idle {
		t.Fatalf("period %v once the reader goroutine owns the side, want %v", got, idle)
	}
}
