package client

import (
	"testing"
	"time"
)

// TestClusterReplicaOptions: a Cluster client is a replica source: every read policy is
// accepted with UseCluster, the zone-aware ones with a zone, and so are hedged reads;
// ReplicaEndpoints is still refused beside UseCluster.
func TestClusterReplicaOptions(t *testing.T) {
	seeds := []Endpoint{{Host: "127.0.0.1", Port: 7000}}
	for _, policy := range []ReadFrom{Replica, PrimaryPreferred, ReplicaPreferred, Nearest} {
		o := Options{Endpoints: seeds, UseCluster: true, ReadFrom: policy}
		if err := o.validateReplicas(); err != nil {
			t.Fatalf("%v with UseCluster: %v", policy, err)
		}
	}
	tolerance := time.Millisecond
	ok := Options{Endpoints: seeds, UseCluster: true, ReadFrom: AzAffinity, ClientAvailabilityZone: "a",
		ReplicaLatencyTolerance: &tolerance}
	if err := ok.validateReplicas(); err != nil {
		t.Fatalf("AzAffinity with a zone: %v", err)
	}
	hedged := Options{Endpoints: seeds, UseCluster: true, ReadFrom: ReplicaPreferred, HedgedReads: &HedgedReadOptions{}}
	if err := hedged.validateReplicas(); err != nil {
		t.Fatalf("hedged reads on a Cluster: %v", err)
	}
	for _, tc := range []struct {
		name string
		opts Options
		opt  string
	}{
		{"zone policy without a zone", Options{Endpoints: seeds, UseCluster: true, ReadFrom: AzAffinity}, "ClientAvailabilityZone"},
		{"replica endpoints", Options{Endpoints: seeds, UseCluster: true, ReplicaEndpoints: seeds}, "ReplicaEndpoints"},
		{"hedge delay", Options{Endpoints: seeds, UseCluster: true, ReadFrom: Replica,
			HedgedReads: &HedgedReadOptions{Delay: time.Microsecond}}, "HedgedReads.Delay"},
	} {
		err := tc.opts.validateReplicas()
		ce, isConfig := err.(*ConfigError)
		if !isConfig || ce.Option != tc.opt {
			t.Errorf("%s: %v, want a *ConfigError for %s", tc.name, err, tc.opt)
		}
	}
}

// TestClusterReplicaView: WithReadFrom on a Cluster client (Create: no connection) gives a view
// with that policy and no configuration error, so a Primary client can read from replicas.
func TestClusterReplicaView(t *testing.T) {
	c, err := Create(Options{Endpoints: []Endpoint{{Host: "127.0.0.1", Port: 1}}, UseCluster: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.creads == nil {
		t.Fatal("a Cluster client has no replica reads")
	}
	v := c.WithReadFrom(Replica)
	if v.ReadFrom() != Replica || v.ns != nil && v.ns.err != nil {
		t.Fatalf("view: %v %v", v.ReadFrom(), v.ns)
	}
}
