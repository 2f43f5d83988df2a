package client_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// Hedged reads and read-routing snapshots on a real Cluster (issue 17).

// slowNodeDialer dials every node directly except slow's, which it reaches through proxy (a
// delaying proxy): one shard's primary answers late, whatever address the slot map names.
func slowNodeDialer(slow *redistest.Server, proxy *delayProxy) func(context.Context, client.Endpoint) (net.Conn, error) {
	return func(ctx context.Context, ep client.Endpoint) (net.Conn, error) {
		addr := net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
		if ep.Port == slow.Port() {
			addr = proxy.endpoint().String()
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

// hedgeSum returns the sum of the int64 counter name (0 when not recorded).
func hedgeSum(t *testing.T, reader *sdkmetric.ManualReader, name string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				n += p.Value
			}
		}
	}
	return n
}

// testClusterReplicaHedged: one shard's primary answers 150 ms late (a delaying proxy the
// client's dialer sends that node's connections to). PrimaryPreferred reads of that shard go to
// the slow primary and are hedged to its replica after 5 ms; the hedges win (the replica's
// INFO commandstats counts them), the budget caps the hedges at the configured share of the
// watched reads, the OpenTelemetry counters agree with HedgeStats, and writes are never hedged.
// The read-routing snapshot names the read's slot and shard.
func testClusterReplicaHedged(t *testing.T, rc *redistest.Cluster) {
	ctx := context.Background()
	keys, slot := shardKeys("hedge", 4)
	p := rc.PrimaryOf(t, slot)
	r := replicaOfPrimary(t, rc, p)
	proxy := startDelayProxy(t, p, 150*time.Millisecond)
	for _, tc := range []struct {
		percent int
		reads   int
	}{{100, 10}, {20, 20}} {
		reader := sdkmetric.NewManualReader()
		c := connectCluster(t, rc, client.Options{
			ReadFrom:                       client.PrimaryPreferred,
			ReplicaRefreshInterval:         time.Second,
			ClusterTopologyRefreshInterval: time.Second,
			Dialer:                         slowNodeDialer(p, proxy),
			MeterProvider:                  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
			HedgedReads:                    &client.HedgedReadOptions{Delay: 5 * time.Millisecond, MaximumExtraLoadPercent: tc.percent},
		})
		for _, k := range keys {
			if err := c.Set(ctx, k, "v"); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range keys {
			readBack(t, c.WithReadFrom(client.Replica), k, "v") // replicated, and the replica validated
		}
		r.Do(t, "CONFIG", "RESETSTAT")
		before := c.HedgeStats()
		for i := range tc.reads {
			if v, _, err := c.Get(ctx, keys[i%len(keys)]); err != nil || v != "v" {
				t.Fatalf("hedged GET: %q, %v", v, err)
			}
		}
		if err := c.Set(ctx, keys[0], "v"); err != nil {
			t.Fatal(err)
		}
		s := c.HedgeStats()
		watched, sent, won := s.Watched-before.Watched, s.Sent-before.Sent, s.Won-before.Won
		t.Logf("%d%%: %d reads, %d watched, %d hedges sent, %d won", tc.percent, tc.reads, watched, sent, won)
		if watched != uint64(tc.reads) { // the SET after the reads is never watched
			t.Errorf("%d of %d reads watched", watched, tc.reads)
		}
		if sent == 0 || won == 0 {
			t.Errorf("no hedge sent (%d) or won (%d) against a 150 ms primary", sent, won)
		}
		if s.Sent*100 > s.Watched*uint64(tc.percent) {
			t.Errorf("%d hedges for %d watched reads at %d%%", s.Sent, s.Watched, tc.percent)
		}
		if got := calls(t, r, "get"); got < int(won) {
			t.Errorf("%d GETs on the replica %s for %d winning hedges", got, r.Addr(), won)
		}
		if m, m2 := hedgeSum(t, reader, "respire.read.hedge.sent"), hedgeSum(t, reader, "respire.read.hedge.won"); m != int64(s.Sent) || m2 != int64(s.Won) {
			t.Errorf("metrics: %d sent, %d won; HedgeStats %v", m, m2, s)
		}

		snap := c.ReadRoutingSnapshot()
		if snap == nil || snap.Slot != slot || snap.Shard.Port != p.Port() || snap.Policy != client.PrimaryPreferred ||
			len(snap.EligibleEndpoints) != 1 || snap.EligibleEndpoints[0].Port != p.Port() || snap.CapturedAt.IsZero() {
			t.Fatalf("snapshot %+v, want slot %d on the primary %s", snap, slot, p.Addr())
		}
		shards := c.ClusterReadRoutingSnapshots()
		found := false
		for _, x := range shards {
			found = found || x.Slot == slot && x.Shard == snap.Shard
		}
		if !found {
			t.Fatalf("shard snapshots %+v have no entry for slot %d", shards, slot)
		}
		_ = c.Close()
	}
}
