package client_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
)

// TestReplicaBlockingReadFailureNamesTheReplica: a blocking read on a replica's dedicated
// connection that the replica cuts ends with an unknown outcome naming the replica, not the
// primary (before, the dedicated path named the client's configured endpoint).
func TestReplicaBlockingReadFailureNamesTheReplica(t *testing.T) {
	primary, replicas := startReplicaSet(t)
	c := replicaClient(t, primary, replicas, client.Replica)
	ctx := ctxT(t)
	waitReplicaFor(t, 5*time.Second, "both replicas validated", func() bool {
		_, _, err := c.Get(ctx, "k")
		s := c.ReadRoutingSnapshot()
		return err == nil && s != nil && len(s.EligibleEndpoints) == 2
	})
	done := make(chan error, 1)
	go func() {
		_, err := c.XReadBlock(ctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: "s", ID: "$"}}, Block: 20 * time.Second})
		done <- err
	}()
	blockedOn := -1
	waitReplicaFor(t, 5*time.Second, "the read blocked on a replica", func() bool {
		for i, r := range replicas {
			if strings.Contains(r.Do(t, "INFO", "clients"), "blocked_clients:1") {
				blockedOn = i
				return true
			}
		}
		return false
	})
	replicas[blockedOn].Do(t, "CLIENT", "KILL", "TYPE", "normal")
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the cut read did not end")
	}
	var uo *client.UnknownOutcomeError
	if !errors.As(err, &uo) {
		t.Fatalf("a blocking read cut by its replica: %v (%T), want an unknown outcome", err, err)
	}
	if want := endpointOf(replicas[blockedOn]); uo.Endpoint != want {
		t.Fatalf("the error names %v, want the replica %v (primary %v)", uo.Endpoint, want, endpointOf(primary))
	}
}
