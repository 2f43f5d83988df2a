package client_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/redistest"
)

// replicaSet starts a primary and two replicas (replicaof) on loopback and waits until both
// replicas are linked.
func startReplicaSet(t *testing.T) (primary *redistest.Server, replicas []*redistest.Server) {
	t.Helper()
	redistest.Require(t)
	primary = redistest.Start(t, redistest.Config{})
	for range 2 {
		r := redistest.Start(t, redistest.Config{Extra: []string{"replicaof 127.0.0.1 " + strconv.Itoa(primary.Port())}})
		replicas = append(replicas, r)
	}
	for _, r := range replicas {
		waitReplicaFor(t, 10*time.Second, "replica linked", func() bool {
			return strings.Contains(r.Do(t, "INFO", "replication"), "master_link_status:up")
		})
	}
	return primary, replicas
}

func waitReplicaFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// getCalls returns how many GET commands a server executed (INFO commandstats).
func getCalls(t *testing.T, s *redistest.Server) int {
	t.Helper()
	for _, line := range strings.Split(s.Do(t, "INFO", "commandstats"), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_get:calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// replicaTestRefresh is the ReplicaRefreshInterval of the real-server tests whose Replica reads
// must never fail. A replica takes reads only while its last ROLE answer is younger than two
// intervals (the staleness bound), and the revalidation falls due one interval after that
// answer: a test process stalled for longer than one interval (a loaded 2-core CI machine
// under the race detector) wakes up with its reads stepped before the overdue revalidation, and
// they fail with no-candidate. At 100 ms that took a stall of about 100 ms; at one second (the
// default) it takes one of a second.
const replicaTestRefresh = time.Second

func replicaClient(t *testing.T, primary *redistest.Server, replicas []*redistest.Server, policy client.ReadFrom) *client.Client {
	t.Helper()
	opts := client.Options{
		Endpoints:              []client.Endpoint{endpointOf(primary)},
		ReadFrom:               policy,
		ReplicaRefreshInterval: replicaTestRefresh,
		ConnectTimeout:         time.Second,
	}
	for _, r := range replicas {
		opts.ReplicaEndpoints = append(opts.ReplicaEndpoints, endpointOf(r))
	}
	c, err := client.Connect(ctxT(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestReplicaReadsReal: under Replica, reads run on the validated replicas, in turn, and never
// on the primary; writes run on the primary; WithReadFrom overrides the policy per view and
// composes with key prefixes; a killed replica's reads go to the other; a promoted replica
// takes no more reads.
func TestReplicaReadsReal(t *testing.T) {
	primary, replicas := startReplicaSet(t)
	var (
		mu    sync.Mutex
		trace []string
	)
	client.SetReplicaOnStep(func(_ *fsm.RouterEvent, effects []fsm.RouterEffect) {
		mu.Lock()
		defer mu.Unlock()
		for i := range effects {
			trace = append(trace, effects[i].String())
		}
	})
	t.Cleanup(func() { client.SetReplicaOnStep(nil) })
	c := replicaClient(t, primary, replicas, client.Replica)
	ctx := ctxT(t)
	defer checkReplay(t, c, &mu, &trace)

	// A write goes to the primary (a replica would refuse it with READONLY).
	if err := c.Set(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "p:k", "prefixed"); err != nil {
		t.Fatal(err)
	}
	for _, r := range replicas {
		waitReplicaFor(t, 5*time.Second, "the writes replicated", func() bool { return r.Do(t, "GET", "p:k") == "prefixed" })
	}
	waitReplicaFor(t, 5*time.Second, "the replicas take reads", func() bool {
		v, _, err := c.Get(ctx, "k")
		return err == nil && v == "v1"
	})
	base := []int{getCalls(t, primary), getCalls(t, replicas[0]), getCalls(t, replicas[1])}
	for range 20 {
		if v, _, err := c.Get(ctx, "k"); err != nil || v != "v1" {
			t.Fatalf("GET on a replica: %q, %v", v, err)
		}
	}
	if d := getCalls(t, primary) - base[0]; d != 0 {
		t.Errorf("the primary ran %d GETs under Replica", d)
	}
	d1, d2 := getCalls(t, replicas[0])-base[1], getCalls(t, replicas[1])-base[2]
	if d1+d2 != 20 || d1 == 0 || d2 == 0 {
		t.Errorf("the replicas ran %d and %d GETs of 20; want all, spread over both", d1, d2)
	}
	if snap := c.ReadRoutingSnapshot(); snap == nil || snap.Policy != client.Replica || len(snap.EligibleEndpoints) != 2 {
		t.Errorf("snapshot %+v, want Replica over both replicas", snap)
	}

	// Per view: Primary reads the primary; a prefixed Replica view reads its own key on a replica.
	before := getCalls(t, primary)
	if v, _, err := c.WithReadFrom(client.Primary).Get(ctx, "k"); err != nil || v != "v1" {
		t.Fatalf("GET on the primary view: %q, %v", v, err)
	}
	if getCalls(t, primary) != before+1 {
		t.Errorf("a Primary view's GET did not run on the primary")
	}
	view := c.WithKeyPrefix("p:").WithReadFrom(client.Replica)
	if v, _, err := view.Get(ctx, "k"); err != nil || v != "prefixed" {
		t.Fatalf("GET on a prefixed Replica view: %q, %v", v, err)
	}
	if v, err := c.WithReadFrom(client.Replica).WithKeyPrefix("p:").Do(ctx, "GET", "k"); err != nil || v.String() != `"prefixed"` {
		t.Fatalf("raw GET on a Replica view with a prefix: %v, %v", v, err)
	}
	if getCalls(t, primary) != before+1 {
		t.Errorf("a Replica view's read ran on the primary")
	}

	// Kill a replica: reads keep working on the other one.
	replicas[0].Kill()
	survivor := getCalls(t, replicas[1])
	for i := range 20 {
		if v, _, err := c.Get(ctx, "k"); err != nil || v != "v1" {
			// A read on the killed replica's connection may be lost once; never twice in a row.
			if v2, _, err2 := c.Get(ctx, "k"); err2 != nil || v2 != "v1" {
				t.Fatalf("read %d after the kill: %q, %v, then %q, %v", i, v, err, v2, err2)
			}
		}
	}
	if d := getCalls(t, replicas[1]) - survivor; d < 20 {
		t.Errorf("the surviving replica ran %d GETs of 20 after the kill", d)
	}
	// Promote the other replica: it leaves the candidates at its next validation, and with
	// no replica left, Replica reads fail before anything is sent.
	replicas[1].Do(t, "REPLICAOF", "NO", "ONE")
	waitReplicaFor(t, 5*time.Second, "the promoted replica is dropped", func() bool {
		_, _, err := c.Get(ctx, "k")
		return errors.Is(err, client.ErrNoReadServer)
	})
	promoted := getCalls(t, replicas[1])
	for range 5 {
		if _, _, err := c.Get(ctx, "k"); !errors.Is(err, client.ErrNoReadServer) {
			t.Fatalf("read with no replica: %v, want ErrNoReadServer", err)
		}
	}
	if getCalls(t, replicas[1]) != promoted {
		t.Errorf("the promoted replica still takes reads")
	}
	// ReplicaPreferred falls back to the primary.
	if v, _, err := c.WithReadFrom(client.ReplicaPreferred).Get(ctx, "k"); err != nil || v != "v1" {
		t.Fatalf("ReplicaPreferred with no replica: %q, %v", v, err)
	}
}

// checkReplay closes c, then replays its read router's journal into a fresh router and expects
// the effects the running router produced, in order.
func checkReplay(t *testing.T, c *client.Client, mu *sync.Mutex, trace *[]string) {
	t.Helper()
	_ = c.Close()
	journal, complete := client.ReplicaJournal(c)
	if !complete || len(journal) == 0 {
		t.Fatalf("journal of %d events, complete %v", len(journal), complete)
	}
	router := fsm.NewRouter(client.ReplicaRouterConfig(c))
	var out fsm.RouterOutbox
	var replay []string
	for i := range journal {
		out.Reset()
		router.Step(&journal[i], &out)
		for j := range out.Effects {
			replay = append(replay, out.Effects[j].String())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(replay, "\n") != strings.Join(*trace, "\n") {
		t.Fatalf("the replay of %d events gave %d effects, the run %d", len(journal), len(replay), len(*trace))
	}
	t.Logf("replayed %d router events, %d effects", len(journal), len(replay))
}

// TestReplicaOptionsValidation: a read policy needs a source; zone policies need a zone;
// tolerances are never negative.
func TestReplicaOptionsValidation(t *testing.T) {
	neg := -time.Millisecond
	ep := client.Endpoint{Host: "127.0.0.1", Port: 6379}
	cases := []struct {
		name string
		opts client.Options
		opt  string
	}{
		{"no source", client.Options{Endpoints: []client.Endpoint{ep}, ReadFrom: client.Replica}, "ReadFrom"},
		{"no zone", client.Options{Endpoints: []client.Endpoint{ep}, ReplicaEndpoints: []client.Endpoint{ep},
			ReadFrom: client.AzAffinity}, "ClientAvailabilityZone"},
		{"negative tolerance", client.Options{Endpoints: []client.Endpoint{ep}, ReplicaEndpoints: []client.Endpoint{ep},
			ReplicaLatencyTolerance: &neg}, "ReplicaLatencyTolerance"},
		{"bad policy", client.Options{Endpoints: []client.Endpoint{ep}, ReplicaEndpoints: []client.Endpoint{ep},
			ReadFrom: client.ReadFrom(99)}, "ReadFrom"},
		{"negative interval", client.Options{Endpoints: []client.Endpoint{ep}, ReplicaEndpoints: []client.Endpoint{ep},
			ReplicaRefreshInterval: -time.Second}, "ReplicaRefreshInterval"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.Create(tc.opts)
			var ce *client.ConfigError
			if !errors.As(err, &ce) || ce.Option != tc.opt {
				t.Fatalf("Create: %v, want a *ConfigError for %s", err, tc.opt)
			}
		})
	}
	// A view asking replicas of a client without any fails every command with a *ConfigError.
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{ep}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var ce *client.ConfigError
	if _, _, err := c.WithReadFrom(client.Replica).Get(ctx, "k"); !errors.As(err, &ce) {
		t.Fatalf("Get on a Replica view without replicas: %v, want a *ConfigError", err)
	}
}

// TestReplicaLossReal: losing every replica is reported through OnConnectionStateChange with
// the replica's endpoint. The reads that meet the loss fail naming a replica; once both are
// cooling down, a Replica read fails at once with ErrNoReadServer. Nothing reaches the primary.
func TestReplicaLossReal(t *testing.T) {
	primary, replicas := startReplicaSet(t)
	var (
		mu      sync.Mutex
		changes = map[client.Endpoint]int{}
	)
	opts := client.Options{
		Endpoints:              []client.Endpoint{endpointOf(primary)},
		ReplicaEndpoints:       []client.Endpoint{endpointOf(replicas[0]), endpointOf(replicas[1])},
		ReadFrom:               client.Replica,
		ReplicaRefreshInterval: 5 * time.Second, // validations stay fresh: the reads meet the loss
		ConnectTimeout:         time.Second,
		OnConnectionStateChange: func(ch client.ConnectionStateChange) {
			if ch.Err != nil {
				mu.Lock()
				changes[ch.Endpoint]++
				mu.Unlock()
			}
		},
	}
	c, err := client.Connect(ctxT(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxT(t)
	waitReplicaFor(t, 5*time.Second, "both replicas validated", func() bool {
		_, _, err := c.Get(ctx, "k")
		s := c.ReadRoutingSnapshot()
		return err == nil && s != nil && len(s.EligibleEndpoints) == 2
	})
	base := getCalls(t, primary)
	replicas[0].Kill()
	replicas[1].Kill()
	named, refused := 0, 0
	for range 6 {
		_, _, err := c.Get(ctx, "k")
		var ce *client.ConnectionError
		var ue *client.UnknownOutcomeError
		switch {
		case err == nil:
			t.Fatal("a read succeeded with every replica down")
		case errors.Is(err, client.ErrNoReadServer):
			refused++
		case errors.As(err, &ce) && (ce.Endpoint == endpointOf(replicas[0]) || ce.Endpoint == endpointOf(replicas[1])),
			errors.As(err, &ue) && (ue.Endpoint == endpointOf(replicas[0]) || ue.Endpoint == endpointOf(replicas[1])):
			named++
		default:
			t.Fatalf("read with every replica down: %v", err)
		}
	}
	if named == 0 || refused == 0 {
		t.Errorf("%d failures named a replica, %d were refusals; want both", named, refused)
	}
	if getCalls(t, primary) != base {
		t.Error("a Replica read reached the primary")
	}
	waitReplicaFor(t, 5*time.Second, "the replicas' failures reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return changes[endpointOf(replicas[0])] > 0 && changes[endpointOf(replicas[1])] > 0
	})
}
