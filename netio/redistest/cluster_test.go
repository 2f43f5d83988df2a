package redistest

import (
	"strings"
	"testing"
	"time"
)

func TestCluster(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := StartCluster(t, ClusterConfig{Password: "clusterpw"})
	t.Logf("cluster created and ok in %v", time.Since(start))

	if len(c.Nodes()) != 6 || len(c.Addrs()) != 6 {
		t.Fatalf("%d nodes", len(c.Nodes()))
	}
	for _, n := range c.Nodes() {
		info := parseInfo(n.Do(t, "CLUSTER", "INFO"))
		if info["cluster_state"] != "ok" || info["cluster_size"] != "3" {
			t.Fatalf("%s: cluster_state:%s cluster_size:%s", n.Addr(), info["cluster_state"], info["cluster_size"])
		}
	}
	primaries, replicas := c.Primaries(t), c.Replicas(t)
	if len(primaries) != 3 || len(replicas) != 3 {
		t.Fatalf("%d primaries, %d replicas", len(primaries), len(replicas))
	}
	// A key is served by exactly one primary; the others redirect.
	served := 0
	for _, p := range primaries {
		got := p.Do(t, "SET", "{user1}.name", "ada")
		switch {
		case got == "OK":
			served++
		case strings.HasPrefix(got, "(error) MOVED "):
		default:
			t.Fatalf("SET on %s = %q", p.Addr(), got)
		}
	}
	if served != 1 {
		t.Fatalf("%d primaries accepted the key", served)
	}

	// Kill a replica and bring it back.
	r := replicas[0]
	idx := -1
	for i, n := range c.Nodes() {
		if n == r {
			idx = i
		}
	}
	start = time.Now()
	c.Kill(idx)
	if r.Running() {
		t.Fatal("node still running after Kill")
	}
	c.Restart(t, idx)
	c.WaitOK(t)
	t.Logf("replica restarted and cluster ok again in %v", time.Since(start))
	if got := c.Node(idx).Do(t, "ROLE"); !strings.HasPrefix(got, "slave\n") {
		t.Fatalf("restarted replica has ROLE %q", got)
	}

	// Kill a primary: its replica takes over.
	p := primaries[0]
	start = time.Now()
	p.Kill()
	c.WaitOK(t)
	t.Logf("failover after killing a primary took %v", time.Since(start))
	if n := len(c.Primaries(t)); n != 3 {
		t.Fatalf("%d primaries after the failover", n)
	}
	p.Restart(t)
	c.WaitOK(t)
	if got := p.Do(t, "ROLE"); !strings.HasPrefix(got, "slave\n") {
		t.Fatalf("old primary after restart has ROLE %q", got)
	}
	t.Logf("old primary rejoined as a replica; %v since the kill", time.Since(start))
}
