package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/respire-go/respire/client"
)

// The workloads' shape, fixed by the performance issue.
const (
	keyCount   = 4096 // distinct keys; every GET hits
	keyBytes   = 16
	valueBytes = 64
	multiKeys  = 10  // keys of one MGET or MSET
	batchLen   = 100 // commands of one batch (pipeline)
	setCount   = 256 // sorted sets and hashes read by ZRANGE and HGETALL, and written by ZADD and HSET
	setMembers = 10  // members of each sorted set read, fields of each hash read
	writeSpan  = 16  // distinct members (fields) each ZADD (HSET) key cycles through
)

// keys are keyCount distinct 16-byte keys; value is the 64-byte value every SET writes.
var (
	keys     = makeKeys()
	counters = makeCounters()
	value    = strings.Repeat("0123456789abcdef", valueBytes/16)
)

func makeKeys() []string {
	out := make([]string, keyCount)
	for i := range out {
		out[i] = fmt.Sprintf("bench:key:%06d", i)
		if len(out[i]) != keyBytes {
			panic("bench: key length")
		}
	}
	return out
}

func makeCounters() []string {
	out := make([]string, 256)
	for i := range out {
		out[i] = fmt.Sprintf("bench:ctr:%06d", i)
	}
	return out
}

// target is one client under test. Every method runs one command and checks its reply; the
// arguments were built by the caller before the measurement (they are the caller's own).
type target interface {
	get(ctx context.Context, key string) error
	set(ctx context.Context, key, value string) error
	mget(ctx context.Context, a *multiArgs) error
	mset(ctx context.Context, a *multiArgs) error
	incr(ctx context.Context, key string) error
	zadd(ctx context.Context, key, member string, score float64) error
	zrange(ctx context.Context, key string) error // ZRANGE key 0 -1 WITHSCORES: setMembers members
	hset(ctx context.Context, key, field, value string) error
	hgetall(ctx context.Context, key string) error // setMembers fields
	// batcher returns one caller's batch runner: its own reusable storage, as each client's
	// users would keep it.
	batcher() batcher
	close()
}

// batcher runs batchLen commands in one pipeline and checks every reply.
type batcher interface {
	getAll(ctx context.Context, keys []string) error
	setAll(ctx context.Context, keys []string, value string) error
}

// Keys of the sorted set and hash workloads: zKeys and hKeys are read (seeded with setMembers
// members or fields each), zwKeys and hwKeys written.
var (
	zKeys, zwKeys, hKeys, hwKeys = makeSetKeys("z"), makeSetKeys("zw"), makeSetKeys("h"), makeSetKeys("hw")
	members                      = makeMembers()
)

func makeSetKeys(kind string) []string {
	out := make([]string, setCount)
	for i := range out {
		out[i] = fmt.Sprintf("bench:%s:%04d", kind, i)
	}
	return out
}

func makeMembers() []string {
	out := make([]string, writeSpan)
	for i := range out {
		out[i] = fmt.Sprintf("member:%02d", i)
	}
	return out
}

func checkLen(what string, got, want int) error {
	if got != want {
		return fmt.Errorf("%s returned %d elements, want %d", what, got, want)
	}
	return nil
}

// multiArgs are the arguments of one MGET or MSET, in the form each client takes them.
type multiArgs struct {
	keys  []string // MGET keys
	kv    []string // MSET key, value, ...
	kvAny []any    // MSET for go-redis
}

func newMultiArgs(first int) *multiArgs {
	a := &multiArgs{}
	for i := range multiKeys {
		k := keys[(first+i)%keyCount]
		a.keys = append(a.keys, k)
		a.kv = append(a.kv, k, value)
		a.kvAny = append(a.kvAny, k, value)
	}
	return a
}

func checkValue(v string) error {
	if len(v) != valueBytes {
		return fmt.Errorf("GET returned %d bytes, want %d", len(v), valueBytes)
	}
	return nil
}

// respireTarget is respire with default options.
type respireTarget struct{ c *client.Client }

func newRespire(addr string) (target, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, err
	}
	c, err := client.Connect(context.Background(), client.Options{Endpoints: []client.Endpoint{{Host: host, Port: p}}})
	if err != nil {
		return nil, err
	}
	return respireTarget{c}, nil
}

func (t respireTarget) get(ctx context.Context, key string) error {
	v, found, err := t.c.Get(ctx, key)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("GET %s: not found", key)
	}
	return checkValue(v)
}

func (t respireTarget) set(ctx context.Context, key, value string) error {
	return t.c.Set(ctx, key, value)
}

func (t respireTarget) mget(ctx context.Context, a *multiArgs) error {
	vs, err := t.c.MGet(ctx, a.keys...)
	if err == nil && len(vs) != multiKeys {
		err = fmt.Errorf("MGET returned %d values", len(vs))
	}
	return err
}

func (t respireTarget) mset(ctx context.Context, a *multiArgs) error {
	return t.c.MSet(ctx, a.kv...)
}

func (t respireTarget) incr(ctx context.Context, key string) error {
	_, err := t.c.Incr(ctx, key)
	return err
}

func (t respireTarget) zadd(ctx context.Context, key, member string, score float64) error {
	_, err := t.c.ZAdd(ctx, key, client.ZMember{Member: member, Score: score})
	return err
}

func (t respireTarget) zrange(ctx context.Context, key string) error {
	ms, err := t.c.ZRangeWithScores(ctx, key, 0, -1)
	if err != nil {
		return err
	}
	return checkLen("ZRANGE", len(ms), setMembers)
}

func (t respireTarget) hset(ctx context.Context, key, field, value string) error {
	_, err := t.c.HSet(ctx, key, field, value)
	return err
}

func (t respireTarget) hgetall(ctx context.Context, key string) error {
	m, err := t.c.HGetAll(ctx, key)
	if err != nil {
		return err
	}
	return checkLen("HGETALL", len(m), setMembers)
}

func (t respireTarget) batcher() batcher { return &respireBatcher{c: t.c} }

// respireBatcher keeps one Batch and its futures' slices for reuse.
type respireBatcher struct {
	c    *client.Client
	b    client.Batch
	gets []*client.Future[client.Optional[string]]
	sets []*client.Future[client.None]
}

func (r *respireBatcher) getAll(ctx context.Context, keys []string) error {
	r.gets = r.gets[:0]
	for _, k := range keys {
		r.gets = append(r.gets, r.b.Get(k))
	}
	if err := r.c.Pipeline(ctx, &r.b); err != nil {
		return err
	}
	for _, f := range r.gets {
		v, err := f.Result()
		if err != nil {
			return err
		}
		if err := checkValue(v.Value); err != nil {
			return err
		}
	}
	return nil
}

func (r *respireBatcher) setAll(ctx context.Context, keys []string, value string) error {
	r.sets = r.sets[:0]
	for _, k := range keys {
		r.sets = append(r.sets, r.b.Set(k, value))
	}
	if err := r.c.Pipeline(ctx, &r.b); err != nil {
		return err
	}
	for _, f := range r.sets {
		if err := f.Err(); err != nil {
			return err
		}
	}
	return nil
}

func (t respireTarget) close() { _ = t.c.Close() }

// goredisTarget is go-redis v9 with default options.
// goredisTarget is a go-redis client: a Client, or (cluster_bench_test.go) a ClusterClient.
type goredisTarget struct{ c goredis.UniversalClient }

func newGoredis(addr string) (target, error) {
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	if err := c.Ping(context.Background()).Err(); err != nil {
		_ = c.Close()
		return nil, err
	}
	return goredisTarget{c}, nil
}

func (t goredisTarget) get(ctx context.Context, key string) error {
	v, err := t.c.Get(ctx, key).Result()
	if err != nil {
		return err
	}
	return checkValue(v)
}

func (t goredisTarget) set(ctx context.Context, key, value string) error {
	return t.c.Set(ctx, key, value, 0).Err()
}

func (t goredisTarget) mget(ctx context.Context, a *multiArgs) error {
	vs, err := t.c.MGet(ctx, a.keys...).Result()
	if err == nil && len(vs) != multiKeys {
		err = fmt.Errorf("MGET returned %d values", len(vs))
	}
	return err
}

func (t goredisTarget) mset(ctx context.Context, a *multiArgs) error {
	return t.c.MSet(ctx, a.kvAny...).Err()
}

func (t goredisTarget) incr(ctx context.Context, key string) error {
	return t.c.Incr(ctx, key).Err()
}

func (t goredisTarget) zadd(ctx context.Context, key, member string, score float64) error {
	return t.c.ZAdd(ctx, key, goredis.Z{Score: score, Member: member}).Err()
}

func (t goredisTarget) zrange(ctx context.Context, key string) error {
	ms, err := t.c.ZRangeWithScores(ctx, key, 0, -1).Result()
	if err != nil {
		return err
	}
	return checkLen("ZRANGE", len(ms), setMembers)
}

func (t goredisTarget) hset(ctx context.Context, key, field, value string) error {
	return t.c.HSet(ctx, key, field, value).Err()
}

func (t goredisTarget) hgetall(ctx context.Context, key string) error {
	m, err := t.c.HGetAll(ctx, key).Result()
	if err != nil {
		return err
	}
	return checkLen("HGETALL", len(m), setMembers)
}

func (t goredisTarget) batcher() batcher { return &goredisBatcher{c: t.c} }

// goredisBatcher runs batches with Pipelined, keeping its command slices for reuse.
type goredisBatcher struct {
	c    goredis.UniversalClient
	gets []*goredis.StringCmd
	sets []*goredis.StatusCmd
}

func (r *goredisBatcher) getAll(ctx context.Context, keys []string) error {
	r.gets = r.gets[:0]
	if _, err := r.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, k := range keys {
			r.gets = append(r.gets, p.Get(ctx, k))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, cmd := range r.gets {
		if err := checkValue(cmd.Val()); err != nil {
			return err
		}
	}
	return nil
}

func (r *goredisBatcher) setAll(ctx context.Context, keys []string, value string) error {
	r.sets = r.sets[:0]
	_, err := r.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, k := range keys {
			r.sets = append(r.sets, p.Set(ctx, k, value, 0))
		}
		return nil
	})
	return err
}

func (t goredisTarget) close() { _ = t.c.Close() }

// rueidisTarget is rueidis with default options (auto-pipelining, its default connections).
type rueidisTarget struct{ c rueidis.Client }

func newRueidis(addr string) (target, error) {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return nil, err
	}
	return rueidisTarget{c}, nil
}

func (t rueidisTarget) get(ctx context.Context, key string) error {
	v, err := t.c.Do(ctx, t.c.B().Get().Key(key).Build()).ToString()
	if err != nil {
		return err
	}
	return checkValue(v)
}

func (t rueidisTarget) set(ctx context.Context, key, value string) error {
	return t.c.Do(ctx, t.c.B().Set().Key(key).Value(value).Build()).Error()
}

func (t rueidisTarget) mget(ctx context.Context, a *multiArgs) error {
	vs, err := t.c.Do(ctx, t.c.B().Mget().Key(a.keys...).Build()).AsStrSlice()
	if err == nil && len(vs) != multiKeys {
		err = fmt.Errorf("MGET returned %d values", len(vs))
	}
	return err
}

func (t rueidisTarget) mset(ctx context.Context, a *multiArgs) error {
	cmd := t.c.B().Mset().KeyValue()
	for i := 0; i < len(a.kv); i += 2 {
		cmd = cmd.KeyValue(a.kv[i], a.kv[i+1])
	}
	return t.c.Do(ctx, cmd.Build()).Error()
}

func (t rueidisTarget) incr(ctx context.Context, key string) error {
	return t.c.Do(ctx, t.c.B().Incr().Key(key).Build()).Error()
}

func (t rueidisTarget) zadd(ctx context.Context, key, member string, score float64) error {
	return t.c.Do(ctx, t.c.B().Zadd().Key(key).ScoreMember().ScoreMember(score, member).Build()).Error()
}

func (t rueidisTarget) zrange(ctx context.Context, key string) error {
	ms, err := t.c.Do(ctx, t.c.B().Zrange().Key(key).Min("0").Max("-1").Withscores().Build()).AsZScores()
	if err != nil {
		return err
	}
	return checkLen("ZRANGE", len(ms), setMembers)
}

func (t rueidisTarget) hset(ctx context.Context, key, field, value string) error {
	return t.c.Do(ctx, t.c.B().Hset().Key(key).FieldValue().FieldValue(field, value).Build()).Error()
}

func (t rueidisTarget) hgetall(ctx context.Context, key string) error {
	m, err := t.c.Do(ctx, t.c.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		return err
	}
	return checkLen("HGETALL", len(m), setMembers)
}

func (t rueidisTarget) batcher() batcher { return &rueidisBatcher{c: t.c} }

// rueidisBatcher runs batches with DoMulti, keeping its command slice for reuse.
type rueidisBatcher struct {
	c    rueidis.Client
	cmds rueidis.Commands
}

func (r *rueidisBatcher) getAll(ctx context.Context, keys []string) error {
	r.cmds = r.cmds[:0]
	for _, k := range keys {
		r.cmds = append(r.cmds, r.c.B().Get().Key(k).Build())
	}
	for _, res := range r.c.DoMulti(ctx, r.cmds...) {
		v, err := res.ToString()
		if err != nil {
			return err
		}
		if err := checkValue(v); err != nil {
			return err
		}
	}
	return nil
}

func (r *rueidisBatcher) setAll(ctx context.Context, keys []string, value string) error {
	r.cmds = r.cmds[:0]
	for _, k := range keys {
		r.cmds = append(r.cmds, r.c.B().Set().Key(k).Value(value).Build())
	}
	for _, res := range r.c.DoMulti(ctx, r.cmds...) {
		if err := res.Error(); err != nil {
			return err
		}
	}
	return nil
}

func (t rueidisTarget) close() { t.c.Close() }

// clientKinds are the clients compared, respire first: benchstat -col /client takes the first
// column as the base of its ratios.
var clientKinds = []struct {
	name string
	open func(addr string) (target, error)
}{
	{"respire", newRespire},
	{"rueidis", newRueidis},
	{"goredis", newGoredis},
}

// benchAddr is the server the benchmarks run against.
var benchAddr = os.Getenv("RESPIRE_BENCH_ADDR")

// seedOnce fills the key space once per process, so that every GET hits.
var seedOnce sync.Once

// openAll connects a fresh client of every kind, for one workload at one caller count: each
// measurement sees its client in the state a process running only that workload would have (for
// rueidis, a client that never saw concurrency keeps its synchronous path at one caller). The
// clients close when b ends.
func openAll(b *testing.B) []target {
	b.Helper()
	if benchAddr == "" {
		b.Fatal("RESPIRE_BENCH_ADDR is not set: run bench/run.sh, which starts its own redis-server")
	}
	out := make([]target, len(clientKinds))
	for i, k := range clientKinds {
		t, err := k.open(benchAddr)
		if err != nil {
			b.Fatalf("%s: connecting to %s: %v", k.name, benchAddr, err)
		}
		b.Cleanup(t.close)
		out[i] = t
	}
	var err error
	seedOnce.Do(func() {
		ctx := context.Background()
		for _, k := range keys {
			if err = out[0].set(ctx, k, value); err != nil {
				return
			}
		}
		for i := range setCount {
			for m := range setMembers {
				if err = out[0].zadd(ctx, zKeys[i], members[m], float64(m)); err != nil {
					return
				}
				if err = out[0].hset(ctx, hKeys[i], members[m], value); err != nil {
					return
				}
			}
		}
	})
	if err != nil {
		b.Fatalf("seeding the keys: %v", err)
	}
	return out
}

// measure runs b.N operations spread over exactly callers concurrent goroutines, each building its
// operation with newOp (its own arguments) and calling it in a closed loop, and reports ops/s.
//
// One caller runs on the benchmark goroutine. More use b.RunParallel with b.SetParallelism chosen
// so that parallelism × GOMAXPROCS is exactly callers; when callers is not a multiple of
// GOMAXPROCS, exactly callers goroutines share b.N through a counter instead.
func measure(b *testing.B, callers int, newOp func(caller int) func() error) {
	b.Helper()
	procs := runtime.GOMAXPROCS(0)
	var failed atomic.Pointer[error]
	fail := func(err error) {
		failed.CompareAndSwap(nil, &err)
	}
	// Warm up outside the measurement: connections, pools and buffers grow to their steady size.
	warm := newOp(0)
	for range 100 {
		if err := warm(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	switches, cpu := contextSwitches(), cpuTime()
	b.ResetTimer()
	switch {
	case callers == 1:
		op := newOp(0)
		for i := 0; i < b.N; i++ {
			if err := op(); err != nil {
				fail(err)
				break
			}
		}
	case callers%procs == 0:
		var started atomic.Int64
		b.SetParallelism(callers / procs)
		b.RunParallel(func(pb *testing.PB) {
			op := newOp(int(started.Add(1) - 1))
			for pb.Next() {
				if err := op(); err != nil {
					fail(err)
					return
				}
			}
		})
		if n := started.Load(); n != int64(callers) {
			b.Fatalf("RunParallel started %d goroutines, want %d", n, callers)
		}
	default:
		var next atomic.Int64
		var wg sync.WaitGroup
		for c := range callers {
			wg.Go(func() {
				op := newOp(c)
				for next.Add(1) <= int64(b.N) {
					if err := op(); err != nil {
						fail(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	switches, cpu = contextSwitches()-switches, cpuTime()-cpu
	if p := failed.Load(); p != nil {
		b.Fatal(*p)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(float64(switches)/float64(b.N), "ctxsw/op")
	b.ReportMetric(cpu.Seconds()*1e6/float64(b.N), "cpu-µs/op")
}

// workload is one benchmark: a command shape and its per-caller operation.
type workload struct {
	name    string
	callers []int
	op      func(t target, caller int) func() error
}

var workloads = []workload{
	{"GET", []int{1, 8, 64, 256}, func(t target, caller int) func() error {
		ctx, i := context.Background(), caller*97
		return func() error {
			i++
			return t.get(ctx, keys[i%keyCount])
		}
	}},
	{"SET", []int{1, 8, 64, 256}, func(t target, caller int) func() error {
		ctx, i := context.Background(), caller*97
		return func() error {
			i++
			return t.set(ctx, keys[i%keyCount], value)
		}
	}},
	{"MGET", []int{1, 64}, func(t target, caller int) func() error {
		ctx, a := context.Background(), newMultiArgs(caller*multiKeys)
		return func() error { return t.mget(ctx, a) }
	}},
	{"MSET", []int{1, 64}, func(t target, caller int) func() error {
		ctx, a := context.Background(), newMultiArgs(caller*multiKeys)
		return func() error { return t.mset(ctx, a) }
	}},
	{"INCR", []int{1, 64}, func(t target, caller int) func() error {
		ctx, key := context.Background(), counters[caller%len(counters)]
		return func() error { return t.incr(ctx, key) }
	}},
	// A batch of batchLen GETs (SETs) in one pipeline: respire's Pipeline, rueidis's DoMulti,
	// go-redis's Pipelined. One op is one whole batch.
	{"BATCHGET100", []int{1, 64}, func(t target, caller int) func() error {
		ctx, b, i := context.Background(), t.batcher(), caller*97
		return func() error {
			i++
			first := (i * batchLen) % (keyCount - batchLen)
			return b.getAll(ctx, keys[first:first+batchLen])
		}
	}},
	{"BATCHSET100", []int{1, 64}, func(t target, caller int) func() error {
		ctx, b, i := context.Background(), t.batcher(), caller*97
		return func() error {
			i++
			first := (i * batchLen) % (keyCount - batchLen)
			return b.setAll(ctx, keys[first:first+batchLen], value)
		}
	}},
	{"ZADD", []int{64}, func(t target, caller int) func() error {
		ctx, key, i := context.Background(), zwKeys[caller%setCount], 0
		return func() error {
			i++
			return t.zadd(ctx, key, members[i%writeSpan], float64(i))
		}
	}},
	{"ZRANGE", []int{64}, func(t target, caller int) func() error {
		ctx, i := context.Background(), caller
		return func() error {
			i++
			return t.zrange(ctx, zKeys[i%setCount])
		}
	}},
	{"HSET", []int{64}, func(t target, caller int) func() error {
		ctx, key, i := context.Background(), hwKeys[caller%setCount], 0
		return func() error {
			i++
			return t.hset(ctx, key, members[i%writeSpan], value)
		}
	}},
	{"HGETALL", []int{64}, func(t target, caller int) func() error {
		ctx, i := context.Background(), caller
		return func() error {
			i++
			return t.hgetall(ctx, hKeys[i%setCount])
		}
	}},
}

// BenchmarkClients compares the clients on every workload, side by side: for each workload and
// caller count the three clients run one after the other, respire first. Names have the form
// Clients/GET/callers=64/client=rueidis; `benchstat -col /client` turns them into one column per
// client with its ratio to respire.
func BenchmarkClients(b *testing.B) {
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) {
			for _, callers := range w.callers {
				b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
					targets := openAll(b)
					for i, k := range clientKinds {
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
