package client_test

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// TestSentinelRealFailoverLedByFirstSentinel (issue 13): a SENTINEL FAILOVER led by the Sentinel
// the client asks first, in a group with two replicas. Between promoting a replica and
// reconfiguring the other one, the leader answers SENTINEL MASTER with the new config-epoch but
// still the old primary's address (flags failover_in_progress), while the other Sentinels have
// switched and published +switch-master. A rediscovery in that window used to validate the old
// primary under the new epoch; the new primary, reported under that same epoch afterwards, was
// then refused as stale for good: every write failed with ErrStaleSentinel and Endpoint() kept
// naming the old primary. Here, without any command, the monitor alone moves the client to the
// new primary, and writes land there.
func TestSentinelRealFailoverLedByFirstSentinel(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelConfig{DownAfter: 500 * time.Millisecond, Replicas: 2})
	r := newSentinelRig(t, g, true, nil)
	leader := g.Sentinels()[0]
	if first := sentinelEndpoints(t, g)[0]; net.JoinHostPort(first.Host, strconv.Itoa(first.Port)) != leader.Addr() {
		t.Fatalf("the client's first Sentinel is %v, not the leader %s", first, leader.Addr())
	}
	old := g.Primary(t)
	waitFor(t, 5*time.Second, func() bool { return r.sawScope(client.ScopeSentinelMonitor, client.SourceConnected) })
	ctx := ctxT(t)
	if err := r.c.Set(ctx, "sn:leader", "before"); err != nil {
		t.Fatal(err)
	}
	if got := r.c.Endpoint().String(); got != old.Addr() {
		t.Fatalf("Endpoint() = %s before the failover, want %s", got, old.Addr())
	}
	before := sentinelMasterFields(t, leader.Do(t, "SENTINEL", "MASTER", g.MasterName()))
	w := watchLeader(leader, g.MasterName(), old.Addr(), before["config-epoch"])

	start := time.Now()
	if got := leader.Do(t, "SENTINEL", "FAILOVER", g.MasterName()); got != "OK" {
		t.Fatalf("SENTINEL FAILOVER: %s", got)
	}
	promoted := g.WaitForFailover(t, old.Addr())
	// No command is sent: the monitor's events alone must bring the client to the new primary.
	deadline := time.Now().Add(20 * time.Second)
	for r.c.Endpoint().String() != promoted.Addr() {
		if time.Now().After(deadline) {
			w.stop()
			t.Fatalf("Endpoint() = %s 20 s after SENTINEL FAILOVER, want the new primary %s (the leader's window was seen: %v)",
				r.c.Endpoint(), promoted.Addr(), w.sawWindow)
		}
		time.Sleep(10 * time.Millisecond)
	}
	moved := time.Since(start)
	w.stop()
	// The fault this test is about must have happened: the leader paired the new epoch with the
	// old primary's address for a while.
	if !w.sawWindow {
		t.Fatalf("the leader never reported %s under a new config-epoch while failing over (polls: %d, last: %q)",
			old.Addr(), w.polls, w.last)
	}
	t.Logf("the client named the new primary %s %v after SENTINEL FAILOVER; the leader reported the old primary under the new epoch for %d polls",
		promoted.Addr(), moved, w.windowPolls)

	for i := range 20 {
		if _, err := r.c.Incr(ctx, "sn:leader-after"); err != nil {
			t.Fatalf("write %d after the failover: %v", i, err)
		}
	}
	if got := promoted.Do(t, "GET", "sn:leader-after"); got != "20" {
		t.Fatalf("sn:leader-after on the new primary = %q, want 20", got)
	}
	if got := r.c.Endpoint().String(); got != promoted.Addr() {
		t.Fatalf("Endpoint() = %s after the writes, want %s", got, promoted.Addr())
	}
	if n := r.counter(t, "respire.sentinel.failover"); n != 1 {
		t.Fatalf("respire.sentinel.failover = %d, want 1", n)
	}
}

// leaderWatch polls a Sentinel's SENTINEL MASTER during its failover and records whether it
// reported the old primary under a newer config-epoch with failover_in_progress.
type leaderWatch struct {
	done chan struct{}
	wg   sync.WaitGroup
	// Read after stop.
	sawWindow   bool
	windowPolls int
	polls       int
	last        string
}

func watchLeader(s *redistest.Server, name, oldAddr, oldEpoch string) *leaderWatch {
	w := &leaderWatch{done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			select {
			case <-w.done:
				return
			case <-time.After(2 * time.Millisecond):
			}
			reply, err := s.TryDo("SENTINEL", "MASTER", name)
			if err != nil {
				continue
			}
			w.polls++
			f := sentinelMasterFields(nil, reply)
			w.last = f["ip"] + ":" + f["port"] + " epoch " + f["config-epoch"] + " flags " + f["flags"]
			if net.JoinHostPort(f["ip"], f["port"]) == oldAddr && f["config-epoch"] != oldEpoch &&
				strings.Contains(f["flags"], "failover_in_progress") {
				w.sawWindow = true
				w.windowPolls++
			}
		}
	}()
	return w
}

func (w *leaderWatch) stop() {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
}

// sentinelMasterFields reads a SENTINEL MASTER reply as printed by redistest (one element a
// line, names and values alternating).
func sentinelMasterFields(t *testing.T, reply string) map[string]string {
	lines := strings.Split(reply, "\n")
	if len(lines)%2 != 0 && t != nil {
		t.Fatalf("SENTINEL MASTER: %q", reply)
	}
	f := make(map[string]string, len(lines)/2)
	for i := 0; i+1 < len(lines); i += 2 {
		f[lines[i]] = lines[i+1]
	}
	return f
}
