// Package bench compares respire with two peer Go Redis clients, github.com/redis/go-redis/v9 and
// github.com/redis/rueidis, against one local redis-server in one run.
//
// It is a nested module with its own go.mod, which replaces respire with the working tree, so
// that the peer clients never enter the go.mod of respire itself: users of respire never
// download them.
//
// The benchmarks need a running server, named by the RESPIRE_BENCH_ADDR environment variable
// ("127.0.0.1:port"); without it they skip. The script run.sh beside this file starts its own
// redis-server, runs these benchmarks together with the simulator's and the state machines',
// runs redis-benchmark against the same server as the physical ceiling, and prints one table
// with every figure, its target and whether it was met. docs/performance.md holds the latest
// table.
package bench
