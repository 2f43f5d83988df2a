package netio_test

import (
	"context"
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
