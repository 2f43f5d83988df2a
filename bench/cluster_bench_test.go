package bench

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/respire-go/respire/client"
)

// The Cluster benchmark: GET and SET at 1, 64 and 256 callers against a Cluster of three primaries
// (bench/run.sh starts one), respire's Cluster client beside rueidis's and go-redis's, each with
// default options but for the Cluster switch. The same keys as the standalone benchmark spread
// over the three shards.

// benchCluster lists the Cluster's seed addresses, comma-separated.
var benchCluster = os.Getenv("RESPIRE_BENCH_CLUSTER")

func newRespireCluster(seeds []string) (target, error) {
	var eps []client.Endpoint
	for _, s := range seeds {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return nil, err
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, err
		}
		eps = append(eps, client.Endpoint{Host: host, Port: p})
	}
	c, err := client.Connect(context.Background(), client.Options{UseCluster: true, Endpoints: eps})
	if err != nil {
		return nil, err
	}
	return respireTarget{c}, nil
}

func newRueidisCluster(seeds []string) (target, error) {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: seeds})
	if err != nil {
		return nil, err
	}
	return rueidisTarget{c}, nil
}

func newGoredisCluster(seeds []string) (target, error) {
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: seeds})
	if err := c.Ping(context.Background()).Err(); err != nil {
		_ = c.Close()
		return nil, err
	}
	return goredisTarget{c}, nil
}

// clusterKinds are the Cluster clients compared, respire first.
var clusterKinds = []struct {
	name string
	open func(seeds []string) (target, error)
}{
	{"respire", newRespireCluster},
	{"rueidis", newRueidisCluster},
	{"goredis", newGoredisCluster},
}

var clusterSeedOnce sync.Once

// openAllCluster connects a fresh Cluster client of every kind; they close when b ends.
func openAllCluster(b *testing.B) []target {
	b.Helper()
	if benchCluster == "" {
		b.Fatal("RESPIRE_BENCH_CLUSTER is not set: run bench/run.sh, which starts its own Cluster")
	}
	seeds := strings.Split(benchCluster, ",")
	out := make([]target, len(clusterKinds))
	for i, k := range clusterKinds {
		t, err := k.open(seeds)
		if err != nil {
			b.Fatalf("%s: connecting to the Cluster at %s: %v", k.name, benchCluster, err)
		}
		b.Cleanup(t.close)
		out[i] = t
	}
	var err error
	clusterSeedOnce.Do(func() {
		ctx := context.Background()
		for _, k := range keys {
			if err = out[0].set(ctx, k, value); err != nil {
				return
			}
		}
	})
	if err != nil {
		b.Fatalf("seeding the keys: %v", err)
	}
	return out
}

// BenchmarkClusterClients compares the Cluster clients on GET and SET at 1, 64 and 256 callers,
// side by side, respire first: ClusterClients/GET/callers=64/client=rueidis.
func BenchmarkClusterClients(b *testing.B) {
	for _, w := range workloads {
		if w.name != "GET" && w.name != "SET" {
			continue
		}
		b.Run(w.name, func(b *testing.B) {
			for _, callers := range []int{1, 64, 256} {
				b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
					targets := openAllCluster(b)
					for i, k := range clusterKinds {
						t := targets[i]
						b.Run("client="+k.name, func(b *testing.B) {
							measure(b, callers, func(caller int) func() error { return w.op(t, caller) })
						})
					}
				})
			}
		})
	}
}
