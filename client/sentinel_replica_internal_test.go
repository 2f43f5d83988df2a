package client

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/topo"
)

// TestSentinelReplicaSet: the replicas a SENTINEL REPLICAS answer offers for reads leave out
// those flagged s_down, o_down or disconnected and the repeats, and come sorted, at most
// MaxReplicaEndpoints. Replicas whose link is down stay: the router ranks them by ROLE.
func TestSentinelReplicaSet(t *testing.T) {
	rep := func(host string, port int, flags topo.SentinelFlags, linkUp bool) topo.SentinelReplica {
		return topo.SentinelReplica{Addr: fsm.MakeEndpoint(host, port), Flags: topo.FlagReplica | flags, LinkUp: linkUp}
	}
	got := replicaEndpoints([]topo.SentinelReplica{
		rep("10.0.0.3", 6379, 0, true),
		rep("10.0.0.1", 6380, topo.FlagSubjectivelyDown, true),
		rep("10.0.0.1", 6379, 0, false),
		rep("10.0.0.2", 6379, topo.FlagObjectivelyDown, false),
		rep("10.0.0.4", 6379, topo.FlagDisconnected, true),
		rep("10.0.0.3", 6379, 0, true),
		rep("10.0.0.1", 6381, topo.FlagFailoverInProgress, true),
	})
	want := []Endpoint{{Host: "10.0.0.1", Port: 6379}, {Host: "10.0.0.1", Port: 6381}, {Host: "10.0.0.3", Port: 6379}}
	if !slices.Equal(got, want) {
		t.Fatalf("replicaEndpoints = %v, want %v", got, want)
	}
	var many []topo.SentinelReplica
	for i := range MaxReplicaEndpoints + 5 {
		many = append(many, rep("10.0.1."+strconv.Itoa(i), 6379, 0, true))
	}
	if got := replicaEndpoints(many); len(got) != MaxReplicaEndpoints {
		t.Fatalf("%d replicas kept, want MaxReplicaEndpoints (%d)", len(got), MaxReplicaEndpoints)
	}
	if got := replicaEndpoints(nil); len(got) != 0 {
		t.Fatalf("no replicas: %v", got)
	}
}

// TestSentinelReplicaOptions: a Sentinel client may read from replicas (the Sentinels are the
// source) but not name ReplicaEndpoints, nor may a Cluster client (its slots are the source);
// without a source, a policy other than Primary is refused.
func TestSentinelReplicaOptions(t *testing.T) {
	sentinel := []Endpoint{{Host: "127.0.0.1", Port: 26379}}
	ok := Options{Endpoints: sentinel, SentinelPrimaryName: "mymaster", ReadFrom: Replica,
		HedgedReads: &HedgedReadOptions{}}
	if err := ok.validateReplicas(); err != nil {
		t.Fatalf("Sentinel with ReadFrom: %v", err)
	}
	for _, tc := range []struct {
		name string
		opts Options
		opt  string
	}{
		{"sentinel with replica endpoints", Options{Endpoints: sentinel, SentinelPrimaryName: "mymaster",
			ReplicaEndpoints: sentinel}, "ReplicaEndpoints"},
		{"cluster with replica endpoints", Options{Endpoints: sentinel, UseCluster: true, ReadFrom: ReplicaPreferred,
			ReplicaEndpoints: sentinel}, "ReplicaEndpoints"},
		{"no source", Options{Endpoints: sentinel, ReadFrom: Nearest}, "ReadFrom"},
		{"hedging without a source", Options{Endpoints: sentinel, HedgedReads: &HedgedReadOptions{}}, "HedgedReads"},
	} {
		err := tc.opts.validateReplicas()
		ce, isConfig := err.(*ConfigError)
		if !isConfig || ce.Option != tc.opt {
			t.Errorf("%s: %v, want a *ConfigError for %s", tc.name, err, tc.opt)
		}
	}
}

// TestSentinelReplicaRefreshDelay: failed refreshes back off, doubling from the interval up to
// the ceiling (30 s, or the interval when longer); a success resets the wait to the interval.
func TestSentinelReplicaRefreshDelay(t *testing.T) {
	const ceiling = 30 * time.Second
	d := time.Second
	var got []time.Duration
	for range 7 {
		d = refreshDelay(d, time.Second, ceiling, true)
		got = append(got, d)
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, ceiling, ceiling, ceiling}
	if !slices.Equal(got, want) {
		t.Fatalf("backoff %v, want %v", got, want)
	}
	if d = refreshDelay(d, time.Second, ceiling, false); d != time.Second {
		t.Fatalf("after a success: %v, want the interval", d)
	}
	if d = refreshDelay(time.Hour, time.Hour, time.Hour, true); d != time.Hour {
		t.Fatalf("an interval above 30 s: %v, want the interval", d)
	}
}

// TestSentinelReplicaCandidates: the replica source asks the configured Sentinels, then the
// ones learned from SENTINEL SENTINELS, each once.
func TestSentinelReplicaCandidates(t *testing.T) {
	configured := []Endpoint{{Host: "10.0.0.1", Port: 26379}, {Host: "10.0.0.2", Port: 26379}}
	known := []fsm.Endpoint{fsm.MakeEndpoint("10.0.0.1", 26379), fsm.MakeEndpoint("10.0.0.2", 26379),
		fsm.MakeEndpoint("10.0.0.9", 26379), fsm.MakeEndpoint("10.0.0.3", 26380)}
	got := sentinelCandidates(configured, known)
	want := []Endpoint{{Host: "10.0.0.1", Port: 26379}, {Host: "10.0.0.2", Port: 26379}, {Host: "10.0.0.9", Port: 26379},
		{Host: "10.0.0.3", Port: 26380}}
	if !slices.Equal(got, want) {
		t.Fatalf("candidates %v, want %v", got, want)
	}
	if got := sentinelCandidates(configured, nil); !slices.Equal(got, configured) {
		t.Fatalf("before any publication: %v, want the configured Sentinels", got)
	}
}
