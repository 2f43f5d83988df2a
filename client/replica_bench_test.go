package client_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// BenchmarkReplicaReads compares GET throughput from 64 callers on the primary alone (Primary)
// with the same reads spread over two replicas (Replica, ReplicaPreferred with a band).
func BenchmarkReplicaReads(b *testing.B) {
	redistest.Require(b)
	primary := redistest.Start(b, redistest.Config{})
	var replicas []*redistest.Server
	for range 2 {
		replicas = append(replicas, redistest.Start(b, redistest.Config{Extra: []string{"replicaof 127.0.0.1 " + strconv.Itoa(primary.Port())}}))
	}
	for _, r := range replicas {
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(r.Do(b, "INFO", "replication"), "master_link_status:up") {
			if time.Now().After(deadline) {
				b.Fatal("replica not linked")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	band := time.Millisecond
	for _, bc := range []struct {
		name string
		opts func(*client.Options)
	}{
		{"primary-only", func(*client.Options) {}},
		{"replica", func(o *client.Options) { o.ReadFrom = client.Replica }},
		{"replica-preferred-band", func(o *client.Options) {
			o.ReadFrom, o.ReplicaLatencyTolerance = client.ReplicaPreferred, &band
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			opts := client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: primary.Port()}}}
			for _, r := range replicas {
				opts.ReplicaEndpoints = append(opts.ReplicaEndpoints, client.Endpoint{Host: "127.0.0.1", Port: r.Port()})
			}
			bc.opts(&opts)
			ctx := context.Background()
			c, err := client.Connect(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			if err := c.Set(ctx, "bench", "v"); err != nil {
				b.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				if v, _, err := c.Get(ctx, "bench"); err == nil && v == "v" {
					break
				}
				if time.Now().After(deadline) {
					b.Fatal("reads never succeeded")
				}
				time.Sleep(10 * time.Millisecond)
			}
			b.SetParallelism(32)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, _, err := c.Get(ctx, "bench"); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
