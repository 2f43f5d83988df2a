package redistest

import (
	"strings"
	"testing"
	"time"
)

func TestSentinelGroupFailover(t *testing.T) {
	t.Parallel()
	start := time.Now()
	g := StartSentinelGroup(t, SentinelConfig{Password: "datapw", SentinelPassword: "sentinelpw"})
	t.Logf("sentinel group settled in %v", time.Since(start))

	nodes := g.Nodes()
	if len(nodes) != 2 || len(g.Sentinels()) != 3 || len(g.SentinelAddrs()) != 3 {
		t.Fatalf("%d nodes, %d sentinels", len(nodes), len(g.Sentinels()))
	}
	if g.MasterName() != "mymaster" {
		t.Fatalf("MasterName() = %q", g.MasterName())
	}
	old := g.Primary(t)
	if old != nodes[0] || g.PrimaryAddr(t) != nodes[0].Addr() {
		t.Fatalf("primary %s, want %s", old.Addr(), nodes[0].Addr())
	}
	if got := old.Do(t, "SET", "before-failover", "kept"); got != "OK" {
		t.Fatalf("SET = %q", got)
	}
	// Wait until the replica has the write, so the failover cannot lose it.
	if got := old.Do(t, "WAIT", "1", "5000"); got != "1" {
		t.Fatalf("WAIT = %q", got)
	}
	for _, s := range g.Sentinels() {
		if got := s.Do(t, "PING"); got != "PONG" {
			t.Fatalf("sentinel PING = %q", got)
		}
	}

	start = time.Now()
	killed := g.KillPrimary(t)
	if killed != old || killed.Running() {
		t.Fatal("KillPrimary did not kill the primary")
	}
	promoted := g.WaitForFailover(t, killed.Addr())
	t.Logf("failover observed %v after killing the primary", time.Since(start))
	if promoted != nodes[1] {
		t.Fatalf("promoted %s, want the replica %s", promoted.Addr(), nodes[1].Addr())
	}
	if got := promoted.Do(t, "GET", "before-failover"); got != "kept" {
		t.Fatalf("GET on the new primary = %q", got)
	}
	if got := promoted.Do(t, "SET", "after-failover", "x"); got != "OK" {
		t.Fatalf("SET on the new primary = %q", got)
	}
	if g.Primary(t) != promoted {
		t.Fatal("Primary() does not return the promoted node")
	}

	// A restarted sentinel keeps its rewritten configuration.
	s := g.Sentinels()[0]
	s.Restart(t)
	if got := s.Do(t, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"); got != strings.Replace(promoted.Addr(), ":", "\n", 1) {
		t.Fatalf("restarted sentinel reports %q, want %s", got, promoted.Addr())
	}
}
