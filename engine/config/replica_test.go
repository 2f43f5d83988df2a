package config

import (
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
)

// TestReplicasValidation: each bad replica option is refused naming its field (a Cluster is a
// source, without hedging), and a valid set resolves to the router's configuration with the defaults filled in.
func TestReplicasValidation(t *testing.T) {
	ep := []engine.Endpoint{{Host: "replica", Port: 6379}}
	neg, zero := -time.Millisecond, time.Duration(0)
	for _, tc := range []struct {
		name  string
		r     Replicas
		field string
	}{
		{"unknown policy", Replicas{ReadFrom: fsm.ReadPolicies, Endpoints: ep, Primaries: 1}, "ReadFrom"},
		{"too many replicas", Replicas{Endpoints: make([]engine.Endpoint, MaxReplicaEndpoints+1), Primaries: 1}, "ReplicaEndpoints"},
		{"with cluster", Replicas{Endpoints: ep, Cluster: true}, "ReplicaEndpoints"},
		{"with sentinel", Replicas{Endpoints: ep, Sentinel: true}, "ReplicaEndpoints"},
		{"two primaries", Replicas{Endpoints: ep, Primaries: 2}, "ReplicaEndpoints"},
		{"no source", Replicas{ReadFrom: fsm.ReadReplica, Primaries: 1}, "ReadFrom"},
		{"cluster hedge delay", Replicas{ReadFrom: fsm.ReadNearest, Cluster: true, HedgedReads: &HedgedReads{Delay: 2 * time.Minute}}, "HedgedReads.Delay"},
		{"cluster zone missing", Replicas{ReadFrom: fsm.ReadAzAffinity, Cluster: true}, "ClientAvailabilityZone"},
		{"zone missing", Replicas{ReadFrom: fsm.ReadAzAffinity, Endpoints: ep, Primaries: 1}, "ClientAvailabilityZone"},
		{"negative tolerance", Replicas{Endpoints: ep, Primaries: 1, LatencyTolerance: &neg}, "ReplicaLatencyTolerance"},
		{"interval too long", Replicas{Endpoints: ep, Primaries: 1, RefreshInterval: 2 * time.Hour}, "ReplicaRefreshInterval"},
		{"hedging without replicas", Replicas{Primaries: 1, HedgedReads: &HedgedReads{}}, "HedgedReads"},
		{"hedge delay", Replicas{Endpoints: ep, Primaries: 1, HedgedReads: &HedgedReads{Delay: time.Microsecond}}, "HedgedReads.Delay"},
		{"hedge load", Replicas{Endpoints: ep, Primaries: 1, HedgedReads: &HedgedReads{MaximumExtraLoadPercent: 101}}, "HedgedReads.MaximumExtraLoadPercent"},
		{"replica without port", Replicas{Endpoints: []engine.Endpoint{{Host: "r"}}, Primaries: 1}, "ReplicaEndpoints"},
	} {
		_, err := ResolveReplicas(&tc.r)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: %v, want a *FieldError naming %s", tc.name, err, tc.field)
		}
	}
	// A Cluster's slots are a source of replicas, and its shards hedge.
	if _, err := ResolveReplicas(&Replicas{ReadFrom: fsm.ReadNearest, Cluster: true, Primaries: 1}); err != nil {
		t.Fatalf("Cluster with Nearest: %v", err)
	}
	if cfg, err := ResolveReplicas(&Replicas{ReadFrom: fsm.ReadReplica, Cluster: true, Primaries: 1,
		HedgedReads: &HedgedReads{}}); err != nil || cfg.HedgeDelay != DefaultHedgeDelay {
		t.Fatalf("Cluster with hedged reads: %+v %v", cfg, err)
	}
	cfg, err := ResolveReplicas(&Replicas{ReadFrom: fsm.ReadAzAffinity, Endpoints: ep, Primaries: 1,
		ClientAvailabilityZone: "az-1", LatencyTolerance: &zero, HedgedReads: &HedgedReads{}})
	if err != nil {
		t.Fatal(err)
	}
	want := fsm.RouterConfig{Default: fsm.ReadAzAffinity, RefreshInterval: DefaultReplicaRefreshInterval, Zone: "az-1",
		Banded: true, HedgeDelay: DefaultHedgeDelay, HedgeLoadPercent: DefaultHedgeMaximumExtraLoadPercent}
	if cfg.Default != want.Default || cfg.RefreshInterval != want.RefreshInterval || cfg.Zone != want.Zone || !cfg.Banded ||
		cfg.Tolerance != 0 || cfg.HedgeDelay != want.HedgeDelay || cfg.HedgeLoadPercent != want.HedgeLoadPercent {
		t.Fatalf("resolved %+v, want %+v", cfg, want)
	}
	if PolicyName(fsm.ReadAzAffinityReplicasAndPrimary) != "AzAffinityReplicasAndPrimary" || PolicyName(fsm.ReadPolicies) != "ReadFrom(7)" {
		t.Fatal("policy names")
	}
}
