package scenario

import (
	"errors"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/engine/config"
)

func testdataScenarios(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("../testdata/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenarios in testdata: %v", err)
	}
	return paths
}

func mustLoad(t testing.TB, path string) *Scenario {
	t.Helper()
	sc, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestScenarioRoundTrip: resolve, marshal, parse gives the same scenario, for every test scenario
// and several seeds; resolving again changes nothing.
func TestScenarioRoundTrip(t *testing.T) {
	for _, path := range testdataScenarios(t) {
		sc := mustLoad(t, path)
		for _, seed := range []uint64{sc.Seed, 1, 99} {
			rs, err := sc.Resolve(seed)
			if err != nil {
				t.Fatalf("%s: resolve: %v", path, err)
			}
			data, err := Marshal(rs)
			if err != nil {
				t.Fatalf("%s: marshal: %v", path, err)
			}
			back, err := Parse(data)
			if err != nil {
				t.Fatalf("%s: parse of marshalled scenario: %v\n%s", path, err, data)
			}
			if !reflect.DeepEqual(rs, back) {
				t.Fatalf("%s seed %d: round trip differs\nresolved: %+v\nparsed:   %+v\n%s", path, seed, rs, back, data)
			}
			again, err := rs.Resolve(seed)
			if err != nil || !reflect.DeepEqual(rs, again) {
				t.Fatalf("%s: resolving a resolved scenario changed it (%v)", path, err)
			}
			for i := range rs.Faults {
				if !rs.Faults[i].At.Fixed() {
					t.Fatalf("%s: faults[%d].at not fixed after Resolve", path, i)
				}
			}
		}
	}
}

// TestResolveRanges: ranges resolve inside their bounds, per seed, and independently per fault.
func TestResolveRanges(t *testing.T) {
	sc := mustLoad(t, "../testdata/ranges.yaml")
	seen := map[time.Duration]bool{}
	for seed := uint64(0); seed < 50; seed++ {
		rs, err := sc.Resolve(seed)
		if err != nil {
			t.Fatal(err)
		}
		f0 := rs.Faults[0]
		at, span := f0.At.Value(), f0.Blackhole.For.Value()
		if at < 5*time.Second || at > 9*time.Second || span < time.Second || span > 3*time.Second {
			t.Fatalf("seed %d: blackhole at %v for %v outside its ranges", seed, at, span)
		}
		if b := rs.Faults[2].DropAfterBytes.Bytes.Value(); b < 100 || b > 4000 {
			t.Fatalf("seed %d: bytes %d outside 100..4000", seed, b)
		}
		if x := rs.Faults[3].Delay.Extra.Value(); x < 10*time.Millisecond || x > 50*time.Millisecond {
			t.Fatalf("seed %d: extra %v outside 10ms..50ms", seed, x)
		}
		seen[at] = true
		if rs.Seed != seed {
			t.Fatalf("resolved seed %d, want %d", rs.Seed, seed)
		}
	}
	if len(seen) < 40 {
		t.Fatalf("50 seeds gave only %d distinct fault times", len(seen))
	}
	// A fault's resolution does not depend on the faults before it.
	fewer := sc.Clone()
	fewer.Faults = fewer.Faults[1:]
	a, _ := sc.Resolve(5)
	b, _ := fewer.Resolve(5)
	if a.Faults[1].At == b.Faults[0].At {
		t.Log("(faults are resolved per index, so dropping one shifts the later indexes: expected)")
	}
	if a.Faults[0].At != mustResolve(t, sc, 5).Faults[0].At {
		t.Fatal("resolution is not deterministic")
	}
}

func mustResolve(t *testing.T, sc *Scenario, seed uint64) *Scenario {
	t.Helper()
	rs, err := sc.Resolve(seed)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestScenarioDefaults: omitted fields get their documented defaults.
func TestScenarioDefaults(t *testing.T) {
	sc, err := Parse([]byte("name: x\nduration: 1m\nworkload: {callers: 2, rate: 10/s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case sc.Topology.Kind != TopologyStandalone || len(sc.Topology.Nodes) != 1 || sc.Topology.Nodes[0].ID != "r1":
		t.Fatalf("topology default: %+v", sc.Topology)
	case sc.Network.Latency != DefaultLatency || sc.Network.Jitter != 0:
		t.Fatalf("network default: %+v", sc.Network)
	case sc.Client.Connections != 1 || sc.Client.Connect != ConnectEager || sc.Client.Protocol != ProtocolAuto:
		t.Fatalf("client default: %+v", sc.Client)
	case sc.Client.ConnectTimeout != config.DefaultConnectTimeout || sc.Client.CommandTimeout != config.DefaultCommandTimeout:
		t.Fatalf("timeouts default: %+v", sc.Client)
	case sc.Client.ReconnectPolicy != nil:
		t.Fatal("policy must default to none")
	case sc.Workload.Keys != 16 || sc.Workload.Counters != 4 || sc.Workload.Mix.total() == 0 || sc.Workload.Stop != time.Minute:
		t.Fatalf("workload default: %+v", sc.Workload)
	case float64(sc.Workload.Rate) != 10:
		t.Fatalf("rate %v", sc.Workload.Rate)
	}
	sc, err = Parse([]byte("name: x\nduration: 1m\nworkload: {callers: 1, rate: 120/m}\nexpect: {invariants: [no-replay, outcomes]}\n"))
	if err != nil || float64(sc.Workload.Rate) != 2 || sc.Expect.Invariants.All || len(sc.Expect.Invariants.Names) != 2 ||
		!sc.Expect.Invariants.Includes("outcomes") {
		t.Fatalf("rate per minute / invariant list: %+v %v", sc, err)
	}
}

// TestScenarioErrors: every kind of mistake is rejected with an error naming the field.
func TestScenarioErrors(t *testing.T) {
	const head = "name: x\nduration: 1m\n"
	cases := []struct {
		name, yaml, field, msg string
	}{
		{"unknown top-level field", head + "colour: blue\n", "colour", "unknown field"},
		{"unknown nested field", head + "client: {connections: 2, bogus: 1}\n", "client.bogus", "unknown field"},
		{"unknown fault kind", head + "faults:\n  - {at: 1s, explode: {node: r1}}\n", "faults[0].explode", "unknown fault kind"},
		{"unknown fault field", head + "faults:\n  - {at: 1s, refuse: {node: r1, four: 2s}}\n", "faults[0].refuse.four", "unknown field"},
		{"bad duration", "name: x\nduration: 2x\n", "duration", "duration"},
		{"duration without unit", "name: x\nduration: 5\n", "duration", "unit"},
		{"bad range", head + "faults:\n  - {at: 5s..x, drop: {node: r1}}\n", "faults[0].at", "invalid duration"},
		{"reversed range", head + "faults:\n  - {at: 9s..5s, drop: {node: r1}}\n", "faults[0].at", "ends before"},
		{"bad for", head + "faults:\n  - {at: 5s, refuse: {node: r1, for: soon}}\n", "faults[0].refuse.for", "invalid duration"},
		{"zero for", head + "faults:\n  - {at: 5s, refuse: {node: r1, for: 0s}}\n", "faults[0].refuse.for", "positive"},
		{"bad rate", head + "workload: {callers: 1, rate: fast}\n", "workload.rate", "invalid rate"},
		{"bad rate unit", head + "workload: {callers: 1, rate: 5/q}\n", "workload.rate", "unit"},
		{"negative rate", head + "workload: {callers: 1, rate: -3/s}\n", "workload.rate", "negative"},
		{"zero rate", head + "workload: {callers: 1, rate: 0/s}\n", "workload.rate", "positive"},
		{"negative callers", head + "workload: {callers: -1, rate: 5/s}\n", "workload.callers", "negative"},
		{"negative keys", head + "workload: {callers: 1, rate: 5/s, keys: -2}\n", "workload.keys", "negative"},
		{"negative counters", head + "workload: {callers: 1, rate: 5/s, counters: -1}\n", "workload.counters", "negative"},
		{"negative weight", head + "workload: {callers: 1, rate: 5/s, mix: {get: -1, set: 2}}\n", "workload.mix.get", "negative"},
		{"negative connections", head + "client: {connections: -1}\n", "client.connections", "at least 1"},
		{"not an integer", head + "client: {connections: many}\n", "client.connections", "integer"},
		{"bad connect mode", head + "client: {connect: sometimes}\n", "client.connect", "eager or lazy"},
		{"bad protocol", head + "client: {protocol: resp4}\n", "client.protocol", "resp2"},
		{"policy max below initial", head + "client: {reconnect_policy: {initial_delay: 1s, max_delay: 10ms}}\n",
			"client.reconnect_policy.max_delay", "below InitialDelay"},
		{"policy multiplier", head + "client: {reconnect_policy: {backoff_multiplier: 0.5}}\n", "client.reconnect_policy.backoff_multiplier", "at least 1"},
		{"policy jitter", head + "client: {reconnect_policy: {jitter_ratio: 2}}\n", "client.reconnect_policy.jitter_ratio", "between 0 and 1"},
		{"policy attempts", head + "client: {reconnect_policy: {max_attempts: -1}}\n", "client.reconnect_policy.max_attempts", ""},
		{"policy negative delay", head + "client: {reconnect_policy: {initial_delay: -1s}}\n", "client.reconnect_policy.initial_delay", "negative"},
		{"two kinds", head + "faults:\n  - {at: 1s, drop: {node: r1}, kill: {node: r1}}\n", "faults[0]", "several fault kinds"},
		{"no kind", head + "faults:\n  - {at: 1s}\n", "faults[0]", "needs one fault kind"},
		{"unknown node", head + "faults:\n  - {at: 1s, drop: {node: r9}}\n", "faults[0].drop.node", "unknown node"},
		{"slot out of range", head + "client: {connections: 2}\nfaults:\n  - {at: 1s, drop: {client_slot: 2}}\n", "faults[0].drop.client_slot", "slot"},
		{"both targets", head + "faults:\n  - {at: 1s, drop: {node: r1, client_slot: 0}}\n", "faults[0].drop", "not both"},
		{"no target", head + "faults:\n  - {at: 1s, refuse: {for: 1s}}\n", "faults[0].refuse", "target"},
		{"node-only kind", head + "faults:\n  - {at: 1s, pause: {node: r1, client_slot: 0}}\n", "faults[0].pause.client_slot", "unknown field"},
		{"fault after end", head + "faults:\n  - {at: 2m, drop: {node: r1}}\n", "faults[0].at", "before the end"},
		{"bad bytes", head + "faults:\n  - {at: 1s, drop_after_bytes: {node: r1, bytes: 0}}\n", "faults[0].drop_after_bytes.bytes", "at least 1"},
		{"bad handshake reply", head + "faults:\n  - {at: 1s, handshake_error: {node: r1, reply: oops}}\n", "faults[0].handshake_error.reply", "error reply"},
		{"unknown plant", head + "plant: [gremlins]\n", "plant[0]", "unknown plant"},
		{"missing name", "duration: 1m\n", "name", "required"},
		{"missing duration", "name: x\n", "duration", "positive"},
		{"stop after end", head + "workload: {callers: 1, rate: 1/s, stop: 2m}\n", "workload.stop", "end of the run"},
		{"incr without counters", head + "workload: {callers: 1, rate: 1/s, counters: 0, keys: 1, mix: {incr: 1}}\n", "", ""},
		{"bad event slot", head + "expect: {events: [{slot: 3}]}\n", "expect.events[0].slot", "slot"},
		{"bad bounds", head + "expect: {outcomes: {ok: {min: 5, max: 2}}}\n", "expect.outcomes.ok.max", "below min"},
		{"bad invariants", head + "expect: {invariants: some}\n", "expect.invariants", "all"},
		{"unknown invariant", head + "expect: {invariants: [no-replay, no-such-checker]}\n", "expect.invariants[1]", "unknown checker \"no-such-checker\" (want one of no-replay,"},
		{"unknown expected failure", head + "expect: {fail: [no-replya]}\n", "expect.fail[0]", "unknown checker"},
		{"liveness without bound", head + "expect: {invariants: [liveness]}\n", "expect.invariants[0]", "expect.liveness"},
		{"two nodes", head + "topology: {nodes: [{id: a}, {id: b}]}\n", "topology.nodes", "exactly one"},
		{"kind", head + "topology: {kind: ring}\n", "topology.kind", "unsupported"},
		{"sentinel without section", head + "topology: {kind: sentinel}\n", "topology.sentinel", "required"},
		{"cluster without shards", head + "topology: {kind: cluster}\n", "topology.cluster", "required"},
		{"use_cluster standalone", head + "client: {use_cluster: true}\n", "client.use_cluster", "cluster topology"},
		{"not yaml", "name: [x\n", "", "invalid YAML"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if tc.name == "incr without counters" {
				// counters: 0 means the default (4): valid.
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.yaml)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T) is not a *Error", err, err)
			}
			if se.Field != tc.field {
				t.Fatalf("field %q, want %q (error: %v)", se.Field, tc.field, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q does not mention %q", err, tc.msg)
			}
			if tc.field != "" && !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %q does not name the field %q", err, tc.field)
			}
		})
	}
}

// TestLoadScenarioMissingFile: a missing file is an error naming it.
func TestLoadScenarioMissingFile(t *testing.T) {
	if _, err := Load("../testdata/no-such-file.yaml"); err == nil || !strings.Contains(err.Error(), "no-such-file") {
		t.Fatalf("got %v", err)
	}
}

func TestDedicatedSchema(t *testing.T) {
	for _, tc := range []struct{ yaml, field string }{
		{"workload: {dedicated: {renters: 0}}", "workload.dedicated.renters"},
		{"workload: {dedicated: {renters: 1, mix: {blpop: -1}}}", "workload.dedicated.mix"},
		{"workload: {dedicated: {renters: 1, block: -1s}}", "workload.dedicated.block"},
		{"workload: {dedicated: {renters: 1, stop: 2m}}", "workload.dedicated.stop"},
		{"workload: {dedicated: {renters: 1, nope: 1}}", "workload.dedicated.nope"},
		{"client: {dedicated_pool: {minimum_size: 5}}", "client.dedicated_pool.minimum_size"},
		{"client: {dedicated_pool: {maximum_idle: -2}}", "client.dedicated_pool.maximum_idle"},
		{"client: {dedicated_pool: {idle_timeout: 1us}}", "client.dedicated_pool.idle_timeout"},
		{"expect: {dedicated: {ok: {min: -1}}}", "expect.dedicated.ok.min"},
	} {
		_, err := Parse([]byte("name: x\nduration: 1m\n" + tc.yaml + "\n"))
		var se *Error
		if !errors.As(err, &se) || se.Field != tc.field {
			t.Errorf("%s: want an error on %s, got %v", tc.yaml, tc.field, err)
		}
	}
	sc, err := Parse([]byte("name: x\nduration: 1m\nclient: {command_timeout: 2s, dedicated_pool: {maximum_idle: -1}}\nworkload: {dedicated: {renters: 2}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := sc.Workload.Dedicated
	if d.Rate != 10 || d.Lists != 2 || d.Keys != 2 || *d.Block != time.Second || d.Deadline != 3*time.Second || d.Stop != time.Minute ||
		d.Mix != (DedicatedMix{BLPop: 40, Push: 40, Tx: 20}) {
		t.Fatalf("defaults: %+v", d)
	}
	if cfg := sc.EngineConfig().Pool; cfg.MaximumIdle != 0 || sc.Client.DedicatedPool.MaximumIdle != -1 {
		t.Fatalf("maximum_idle -1 (NoIdleReuse): %+v, option %d", cfg, sc.Client.DedicatedPool.MaximumIdle)
	}
	data, err := Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(data)
	if err != nil || back.Workload.Dedicated.Deadline != d.Deadline || back.Client.DedicatedPool.MaximumIdle != -1 {
		t.Fatalf("round trip: %v\n%s", err, data)
	}
	if c := sc.Clone(); c.Workload.Dedicated == d || c.Client.DedicatedPool == sc.Client.DedicatedPool {
		t.Fatal("Clone shares the dedicated sections")
	}
}

// TestPubSubSchema: the pub/sub parts of a scenario are validated with the field named, and
// survive a resolve and marshal round trip.
func TestPubSubSchema(t *testing.T) {
	for _, tc := range []struct{ yaml, field string }{
		{"workload: {pubsub: {subscribers: [{kind: topic, topics: [a]}]}}", "workload.pubsub.subscribers[0].kind"},
		{"workload: {pubsub: {subscribers: [{topics: []}]}}", "workload.pubsub.subscribers[0].topics"},
		{"workload: {pubsub: {subscribers: [{topics: [a], at: 20s}]}}", "workload.pubsub.subscribers[0].at"},
		{"workload: {pubsub: {subscribers: [{topics: [a], at: 2s, unsubscribe_at: 1s}]}}", "workload.pubsub.subscribers[0].unsubscribe_at"},
		{"workload: {pubsub: {subscribers: [], publisher: {rate: 0, channels: [a]}}}", "workload.pubsub.publisher.rate"},
		{"workload: {pubsub: {subscribers: [], publisher: {rate: 5/s}}}", "workload.pubsub.publisher"},
		{"faults: [{at: 1s, subscribe_error: {node: r1, kinds: [topic]}}]", "faults[0].subscribe_error.kinds[0]"},
		{"faults: [{at: 1s, subscribe_error: {node: r9}}]", "faults[0].subscribe_error.node"},
		{"expect: {pubsub: {subscribers: [{subscriber: 3}]}}", "expect.pubsub.subscribers[0].subscriber"},
		{"workload: {pubsub: {subscribers: [{topics: [a]}]}}\nexpect: {pubsub: {subscribers: [{subscriber: 0, ends: [gone]}]}}", "expect.pubsub.subscribers[0].ends[0]"},
	} {
		_, err := Parse([]byte("name: x\nduration: 10s\n" + tc.yaml + "\n"))
		var se *Error
		if !errors.As(err, &se) || se.Field != tc.field {
			t.Errorf("%s: got %v, want an error on %s", tc.yaml, err, tc.field)
		}
	}
	sc := mustLoad(t, "../../scenarios/pubsub-exhaustion-regular-keeps-sharded.yaml")
	res, err := sc.Resolve(5)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Marshal(back)
	if string(again) != string(data) || back.Workload.PubSub.Buffer != 1024 || back.Faults[1].SubscribeError == nil {
		t.Fatalf("round trip:\n%s\n---\n%s", data, again)
	}
	// Clone is deep.
	cl := sc.Clone()
	cl.Workload.PubSub.Subscribers[0].Topics[0] = "changed"
	cl.Faults[1].SubscribeError.Kinds[0] = "shard"
	if sc.Workload.PubSub.Subscribers[0].Topics[0] == "changed" || sc.Faults[1].SubscribeError.Kinds[0] == "shard" {
		t.Fatal("Clone shares pub/sub slices")
	}
}

// TestCloneIsDeep: a clone of every shipped and test scenario equals it and shares no pointer or
// slice with it, so that resolving or editing a copy never changes the original.
func TestCloneIsDeep(t *testing.T) {
	paths, _ := filepath.Glob("../../scenarios/*.yaml")
	paths = append(paths, testdataScenarios(t)...)
	for _, path := range paths {
		sc := mustLoad(t, path)
		cl := sc.Clone()
		if !reflect.DeepEqual(sc, cl) {
			t.Fatalf("%s: the clone differs", path)
		}
		mine := map[uintptr]string{}
		addresses(reflect.ValueOf(sc), "sc", func(p uintptr, where string) { mine[p] = where })
		if len(mine) == 0 {
			t.Fatalf("%s: no pointer or slice to compare", path)
		}
		addresses(reflect.ValueOf(cl), "sc", func(p uintptr, where string) {
			if w, shared := mine[p]; shared {
				t.Fatalf("%s: the clone shares %s with the original (%s)", path, where, w)
			}
		})
	}
}

// addresses calls visit with the address of every pointer and non-empty slice reachable from v.
func addresses(v reflect.Value, where string, visit func(uintptr, string)) {
	switch v.Kind() {
	case reflect.Pointer:
		// Every pointer to a zero-size value (a close action) has the same address, and
		// sharing one shares nothing.
		if !v.IsNil() && v.Type().Elem().Size() > 0 {
			visit(v.Pointer(), where)
			addresses(v.Elem(), where, visit)
		}
	case reflect.Slice:
		if v.Len() > 0 {
			visit(v.Pointer(), where)
		}
		for i := range v.Len() {
			addresses(v.Index(i), where+"["+strconv.Itoa(i)+"]", visit)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			addresses(v.Field(i), where+"."+v.Type().Field(i).Name, visit)
		}
	}
}
