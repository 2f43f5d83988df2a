package client_test

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/topo"
)

// testClusterFeatures exercises the Cluster client's surface on one real Cluster: keyed routing
// of typed and raw commands, cross-slot validation, opt-in splitting, commands that run on
// every primary, blocking commands and watched transactions on the key's node, and pub/sub.
func testClusterFeatures(t *testing.T, rc *redistest.Cluster) {
	seed := []client.Endpoint{{Host: "127.0.0.1", Port: rc.Node(0).Port()}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(t *testing.T, o client.Options) *client.Client {
		t.Helper()
		o.UseCluster, o.Endpoints = true, seed
		c, err := client.Connect(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	plain := connect(t, client.Options{AllowAdmin: true})
	owners := rc.SlotOwners(t)

	t.Run("typed and raw commands reach the key's node", func(t *testing.T) {
		for _, key := range []string{"alpha", "beta", "gamma", "{tag}one", "delta"} {
			if err := plain.Set(ctx, key, "t:"+key); err != nil {
				t.Fatal(err)
			}
			if _, err := plain.Do(ctx, "SET", key+":raw", "r"); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{key, key + ":raw"} {
				srv := owners[topo.KeySlotString(k)]
				if got := srv.Do(t, "EXISTS", k); got != "1" {
					t.Fatalf("%s is not on %s, the node serving its slot", k, srv.Addr())
				}
			}
		}
	})

	t.Run("cross-slot commands fail before sending, without keys unless opted in", func(t *testing.T) {
		_, err := plain.MGet(ctx, "user:1", "user:2")
		var cse *client.CrossSlotError
		if !errors.As(err, &cse) || cse.CommandName != "MGET" || cse.ExpectedSlot != int(topo.KeySlotString("user:1")) ||
			cse.ConflictingSlot != int(topo.KeySlotString("user:2")) || cse.ConflictingKeyHex != "" {
			t.Fatalf("MGET across slots: %#v", err)
		}
		if strings.Contains(err.Error(), "user:1") || strings.Contains(err.Error(), "user:2") {
			t.Fatalf("the error names a key: %v", err)
		}
		_, err = plain.Do(ctx, "DEL", "user:1", "user:2")
		if !errors.As(err, &cse) || cse.CommandName != "DEL" {
			t.Fatalf("raw DEL across slots: %v", err)
		}
		withKeys := connect(t, client.Options{IncludeCrossSlotKeyContext: true})
		_, err = withKeys.MGet(ctx, "user:1", "user:2")
		if !errors.As(err, &cse) || cse.ConflictingKeyHex != hex.EncodeToString([]byte("user:2")) || strings.Contains(err.Error(), "user:2") {
			t.Fatalf("with key context: %#v", err)
		}
	})

	t.Run("splitting is opt-in: MSET, MGET in input order, DEL and EXISTS summed", func(t *testing.T) {
		split := connect(t, client.Options{SplitCrossSlotCommands: true})
		if err := split.MSet(ctx, "{customer:1}:name", "Ada", "{customer:2}:name", "Grace", "{customer:3}:name", "Edsger"); err != nil {
			t.Fatal(err)
		}
		got, err := split.MGet(ctx, "{customer:2}:name", "missing", "{customer:1}:name", "{customer:2}:name")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"Grace", "", "Ada", "Grace"}
		for i, g := range got {
			if g.Value != want[i] || g.Valid != (want[i] != "") {
				t.Fatalf("MGET %d: %+v, want %q", i, g, want[i])
			}
		}
		n, err := split.Exists(ctx, "{customer:1}:name", "{customer:2}:name", "{customer:3}:name", "nope")
		if err != nil || n != 3 {
			t.Fatalf("EXISTS: %d %v", n, err)
		}
		n, err = split.Del(ctx, "{customer:1}:name", "{customer:3}:name", "nope")
		if err != nil || n != 2 {
			t.Fatalf("DEL: %d %v", n, err)
		}
		v, err := split.Do(ctx, "TOUCH", "{customer:2}:name", "x1", "x2")
		if err != nil || v.Int != 1 {
			t.Fatalf("TOUCH: %v %v", v, err)
		}
	})

	t.Run("a failed group is a partition error", func(t *testing.T) {
		split := connect(t, client.Options{SplitCrossSlotCommands: true, CommandTimeout: 300 * time.Millisecond})
		a, b := "{p:1}k", "{p:2}k"
		if owners[topo.KeySlotString(a)] == owners[topo.KeySlotString(b)] {
			b = "{p:3}k"
		}
		paused := owners[topo.KeySlotString(b)]
		paused.Pause()
		err := split.MSet(ctx, a, "1", b, "2")
		paused.Resume()
		var pe *client.ClusterPartitionError
		var te *client.TimeoutError
		if !errors.As(err, &pe) || pe.CommandName != "MSET" || pe.Slot != int(topo.KeySlotString(b)) || !errors.As(err, &te) {
			t.Fatalf("MSET with a paused node: %v", err)
		}
		if pe.Endpoint.Port != paused.Port() {
			t.Fatalf("the partition error names %v, want the paused node %s", pe.Endpoint, paused.Addr())
		}
		if got := owners[topo.KeySlotString(a)].Do(t, "GET", a); got != "1" {
			t.Fatalf("the other group was not applied (%q): cross-slot requests are not atomic, and the test says so", got)
		}
	})

	t.Run("commands for every primary need a complete topology and combine the replies", func(t *testing.T) {
		if _, err := plain.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		keys := []string{"a", "b", "c", "d", "e", "f"}
		for _, k := range keys {
			if err := plain.Set(ctx, k, "1"); err != nil {
				t.Fatal(err)
			}
		}
		v, err := plain.Do(ctx, "DBSIZE")
		if err != nil || v.Int != int64(len(keys)) {
			t.Fatalf("DBSIZE over every primary: %v %v", v, err)
		}
		v, err = plain.Do(ctx, "KEYS", "*")
		if err != nil || v.Len() != len(keys) {
			t.Fatalf("KEYS over every primary: %v %v", v, err)
		}
		sha, err := plain.Do(ctx, "SCRIPT", "LOAD", "return redis.call('GET', KEYS[1])")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if got, err := plain.Do(ctx, "EVALSHA", string(sha.Str), "1", k); err != nil || string(got.Str) != "1" {
				t.Fatalf("EVALSHA on %s's node: %v %v", k, got, err)
			}
		}
		lazy, err := client.Create(client.Options{UseCluster: true, Endpoints: seed})
		if err != nil {
			t.Fatal(err)
		}
		defer lazy.Close()
		if _, err := lazy.Do(ctx, "DBSIZE"); !errors.Is(err, client.ErrIncompleteTopology) {
			t.Fatalf("DBSIZE before any topology: %v", err)
		}
	})

	t.Run("blocking commands and watched transactions run on the key's node", func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			time.Sleep(100 * time.Millisecond)
			_, err := plain.Do(ctx, "RPUSH", "queue:jobs", "job-1")
			done <- err
		}()
		key, value, ok, err := plain.BLPop(ctx, 5*time.Second, "queue:jobs")
		if err != nil || !ok || key != "queue:jobs" || value != "job-1" {
			t.Fatalf("BLPOP: %q %q %v %v", key, value, ok, err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		v, err := plain.Do(ctx, "BLPOP", "queue:other", "0.05")
		if err != nil || !v.IsNull() {
			t.Fatalf("raw BLPOP timing out: %v %v", v, err)
		}
		err = plain.Watch(ctx, func(d *client.DedicatedConn) error {
			_, err := d.Exec(ctx, func(tx *client.Tx) {
				tx.Incr("{acct:7}:balance")
				tx.Incr("{acct:7}:ops")
			})
			return err
		}, "{acct:7}:balance", "{acct:7}:ops")
		if err != nil {
			t.Fatal(err)
		}
		var cse *client.CrossSlotError
		if err := plain.Watch(ctx, func(*client.DedicatedConn) error { return nil }, "acct:1", "acct:2"); !errors.As(err, &cse) {
			t.Fatalf("WATCH across slots: %v", err)
		}
	})

	t.Run("regular pub/sub works on any node", func(t *testing.T) {
		sub, err := plain.Subscribe(ctx, "news")
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		if _, err := plain.Publish(ctx, "news", "hello"); err != nil {
			t.Fatal(err)
		}
		mctx, mcancel := context.WithTimeout(ctx, 5*time.Second)
		defer mcancel()
		for {
			m, err := sub.Next(mctx)
			if err != nil {
				t.Fatal(err)
			}
			if m.Payload == "hello" {
				break
			}
		}
	})

}

// testClusterShardedPubSubFollowsTheSlot: SSUBSCRIBE goes to the node serving the channel's
// slot; when the slot moves to another node, the subscription follows it: a gap marker, then
// the messages published after the move.
func testClusterShardedPubSubFollowsTheSlot(t *testing.T, rc *redistest.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := connectCluster(t, rc, client.Options{ClusterTopologyRefreshInterval: 300 * time.Millisecond})
	channel := "{orders}:created"
	sub, err := c.SSubscribe(ctx, channel)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := c.SSubscribe(ctx, "{payments}:made"); err == nil {
		t.Fatal("a shard channel of another slot was accepted")
	}
	next := func() client.Message {
		t.Helper()
		mctx, mcancel := context.WithTimeout(ctx, 10*time.Second)
		defer mcancel()
		m, err := sub.Next(mctx)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if _, err := c.Do(ctx, "SPUBLISH", channel, "first"); err != nil {
		t.Fatal(err)
	}
	if m := next(); m.Payload != "first" {
		t.Fatalf("first message: %+v", m)
	}
	slot := int(topo.KeySlotString(channel))
	owner := rc.PrimaryOf(t, slot)
	var to *redistest.Server
	for _, p := range rc.Primaries(t) {
		if p != owner {
			to = p
			break
		}
	}
	rc.MoveSlot(t, slot, to)
	// Publish until a message arrives after the move: the first ones may go out before the
	// client resubscribed on the new owner.
	deadline := time.Now().Add(20 * time.Second)
	sawGap := false
	for time.Now().Before(deadline) {
		if _, err := c.Do(ctx, "SPUBLISH", channel, "after"); err != nil {
			t.Fatal(err)
		}
		mctx, mcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		m, err := sub.Next(mctx)
		mcancel()
		if err != nil {
			continue
		}
		if m.Kind == client.MessageGap {
			sawGap = true
			continue
		}
		if m.Payload == "after" {
			if !sawGap {
				t.Fatalf("a message after the move came without a gap marker first")
			}
			return
		}
	}
	t.Fatalf("no message after the slot moved to %s (gap seen: %v)", to.Addr(), sawGap)
}

// testClusterNonZeroDatabase: Redis Cluster serves database 0 only: with Database 1 every
// connection's setup fails with a *ConfigError naming the server, its version and its mode,
// and the client never falls back to database 0.
func testClusterNonZeroDatabase(t *testing.T, rc *redistest.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := client.Connect(ctx, client.Options{UseCluster: true, Database: 1, ConnectTimeout: 2 * time.Second,
		Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: rc.Node(0).Port()}}})
	var ce *client.ConfigError
	if !errors.As(err, &ce) || ce.Option != "Database" || !strings.Contains(ce.Reason, "redis 7.") ||
		!strings.Contains(ce.Reason, "cluster mode") {
		t.Fatalf("Connect with Database 1: %v", err)
	}
}
