package engine

import (
	"slices"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/topo"
)

// The rules of the Sentinel replica source that do not depend on the runtime: which replicas
// of a SENTINEL REPLICAS answer take reads, and how long to wait before the next query. The
// client's source (client/sentinel_replica.go) and the simulator's (sim/replica_sentinel.go)
// both apply them, so a scenario runs the client's rules.

// SentinelReadReplicas returns the replicas of a SENTINEL REPLICAS answer that may take reads:
// those the answering Sentinel does not flag s_down, o_down or disconnected, each once, sorted
// by host then port, at most limit of them (limit <= 0: none).
func SentinelReadReplicas(reps []topo.SentinelReplica, limit int) []fsm.Endpoint {
	var out []fsm.Endpoint
	seen := make(map[fsm.Endpoint]bool, len(reps))
	for _, r := range reps {
		if r.Flags.Down() || seen[r.Addr] {
			continue
		}
		seen[r.Addr] = true
		out = append(out, r.Addr)
	}
	slices.SortFunc(out, fsm.CompareEndpoints)
	if len(out) > max(limit, 0) {
		out = out[:max(limit, 0)]
	}
	return out
}

// SentinelRefreshDelay returns the wait before the next SENTINEL REPLICAS query: the interval
// after a success, and after a failure the previous wait doubled, at most ceiling but never
// below the interval.
func SentinelRefreshDelay(prev, interval, ceiling time.Duration, failed bool) time.Duration {
	if !failed {
		return interval
	}
	return max(min(2*prev, ceiling), interval)
}
