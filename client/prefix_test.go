package client_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
	"github.com/respire-go/respire/netio/resp"
)

// prefixFixture is a server with a plain client (physical names) and a client whose options
// set KeyPrefix "app:" and PubSubPrefix "ev:", under one protocol.
type prefixFixture struct {
	ctx   context.Context
	plain *client.Client
	pc    *client.Client
}

func startPrefixFixture(t *testing.T, proto client.Protocol) *prefixFixture {
	t.Helper()
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	ep := []client.Endpoint{endpointOf(srv)}
	plain, err := client.Connect(ctx, client.Options{Endpoints: ep, Protocol: proto})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plain.Close() })
	pc, err := client.Connect(ctx, client.Options{Endpoints: ep, Protocol: proto, KeyPrefix: "app:", PubSubPrefix: "ev:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	return &prefixFixture{ctx: ctx, plain: plain, pc: pc}
}

// physical reports whether the plain client sees key.
func (f *prefixFixture) physical(t *testing.T, key string) bool {
	t.Helper()
	n, err := f.plain.Exists(f.ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestKeyPrefixEveryKeyPosition runs, through a view of a prefixed client (physical prefix
// "app:t1:"), commands of every kind of key position Redis describes, and the commands whose
// keys the table cannot describe; the plain client checks the physical keys, and the replies
// that hold keys come back without the prefix. Both protocols.
func TestKeyPrefixEveryKeyPosition(t *testing.T) {
	redistest.Require(t)
	for _, proto := range []client.Protocol{client.ProtocolRESP2, client.ProtocolRESP3} {
		t.Run(proto.String(), func(t *testing.T) {
			f := startPrefixFixture(t, proto)
			ctx, v := f.ctx, f.pc.WithKeyPrefix("t1:")
			if got := v.KeyPrefix(); got != "app:t1:" {
				t.Fatalf("KeyPrefix() = %q", got)
			}
			const p = "app:t1:"
			must(t, f.plain.Set(ctx, "outside", "x")) // a key no namespace sees

			// A fixed index.
			must(t, v.Set(ctx, "s", "1"))
			if got, _, _ := f.plain.Get(ctx, p+"s"); got != "1" {
				t.Fatalf("physical s = %q", got)
			}
			if got, ok, err := v.Get(ctx, "s"); err != nil || !ok || got != "1" {
				t.Fatalf("GET s: %q %v %v", got, ok, err)
			}
			// The root prefix alone, on the client itself.
			must(t, f.pc.Set(ctx, "root", "r"))
			if !f.physical(t, "app:root") {
				t.Fatal("the client's own KeyPrefix was not applied")
			}
			// A range with a step, and a range to the end.
			must(t, v.MSet(ctx, "a", "1", "b", "2"))
			if !f.physical(t, p+"a") || !f.physical(t, p+"b") {
				t.Fatal("MSET keys not prefixed")
			}
			if n, err := v.Del(ctx, "a", "b", "nope"); err != nil || n != 2 {
				t.Fatalf("DEL: %d %v", n, err)
			}
			// Two fixed indexes.
			must(t, v.Set(ctx, "r1", "x"))
			must(t, v.Rename(ctx, "r1", "r2"))
			if !f.physical(t, p+"r2") {
				t.Fatal("RENAME destination not prefixed")
			}
			// A keyword search with a range divided by a limit (XREAD STREAMS), and its reply.
			if _, err := v.XAdd(ctx, "st", client.XAddOptions{}, "f", "v"); err != nil {
				t.Fatal(err)
			}
			streams, err := v.XRead(ctx, client.XReadArgs{Streams: []client.XStreamOffset{{Key: "st", ID: "0"}}})
			if err != nil || len(streams) != 1 || streams[0].Key != "st" || len(streams[0].Entries) != 1 {
				t.Fatalf("XREAD: %+v %v", streams, err)
			}
			must(t, v.XGroupCreate(ctx, "st", "g", "0", false))
			streams, err = v.XReadGroup(ctx, client.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []client.XStreamOffset{{Key: "st", ID: ">"}}})
			if err != nil || len(streams) != 1 || streams[0].Key != "st" {
				t.Fatalf("XREADGROUP: %+v %v", streams, err)
			}
			// A key count (EVAL): the script sees the physical names.
			got, err := v.Eval(ctx, "return {KEYS[1], KEYS[2], ARGV[1]}", []string{"x", "y"}, "arg")
			if err != nil {
				t.Fatal(err)
			}
			if names, _ := got.AsStrings(); !reflect.DeepEqual(names, []string{p + "x", p + "y", "arg"}) {
				t.Fatalf("EVAL saw %q", names)
			}
			// A destination and a key count (ZUNIONSTORE).
			if _, err := v.ZAdd(ctx, "z1", client.ZMember{Member: "m", Score: 1}); err != nil {
				t.Fatal(err)
			}
			if _, err := v.ZAdd(ctx, "z2", client.ZMember{Member: "n", Score: 2}); err != nil {
				t.Fatal(err)
			}
			if n, err := v.ZUnionStore(ctx, "zu", client.ZCombine{Keys: []string{"z1", "z2"}}); err != nil || n != 2 {
				t.Fatalf("ZUNIONSTORE: %d %v", n, err)
			}
			if n, _ := f.plain.ZCard(ctx, p+"zu"); n != 2 {
				t.Fatalf("physical zu has %d members", n)
			}
			// A key count with the key in the reply (LMPOP).
			if _, err := v.RPush(ctx, "l1", "e1", "e2", "e3"); err != nil {
				t.Fatal(err)
			}
			kv, ok, err := v.LMPop(ctx, client.ListLeft, 1, "nope", "l1")
			if err != nil || !ok || kv.Key != "l1" || !reflect.DeepEqual(kv.Values, []string{"e1"}) {
				t.Fatalf("LMPOP: %+v %v %v", kv, ok, err)
			}
			// A blocking command (a dedicated connection) with the key in the reply.
			key, val, ok, err := v.BLPop(ctx, time.Second, "nope", "l1")
			if err != nil || !ok || key != "l1" || val != "e2" {
				t.Fatalf("BLPOP: %q %q %v %v", key, val, ok, err)
			}
			// A keyword searched from an index (GEORADIUS ... STORE).
			if _, err := v.GeoAdd(ctx, "g", client.GeoAddOptions{}, client.GeoLocation{Name: "here", Longitude: 2.35, Latitude: 48.85}); err != nil {
				t.Fatal(err)
			}
			if n, err := v.GeoRadiusStore(ctx, "g", 2.35, 48.85, 10, client.Kilometers, client.GeoRadiusOptions{}, client.GeoStore{Key: "gd"}); err != nil || n != 1 {
				t.Fatalf("GEORADIUS STORE: %d %v", n, err)
			}
			if !f.physical(t, p+"gd") {
				t.Fatal("GEORADIUS STORE destination not prefixed")
			}
			// SORT's BY and GET patterns and STORE destination, which Redis leaves undescribed.
			if _, err := v.RPush(ctx, "ids", "1", "2"); err != nil {
				t.Fatal(err)
			}
			must(t, v.MSet(ctx, "w_1", "20", "w_2", "10", "o_1", "one", "o_2", "two"))
			sorted, err := v.Sort(ctx, "ids", client.SortOptions{By: "w_*", Get: []string{"#", "o_*"}})
			if err != nil || !reflect.DeepEqual(sorted, []string{"2", "two", "1", "one"}) {
				t.Fatalf("SORT: %q %v", sorted, err)
			}
			if n, err := v.SortStore(ctx, "ids", "sorted", client.SortOptions{By: "nosort"}); err != nil || n != 2 {
				t.Fatalf("SORT STORE: %d %v", n, err)
			}
			if !f.physical(t, p+"sorted") {
				t.Fatal("SORT STORE destination not prefixed")
			}
			// KEYS and SCAN see the namespace only, and return its keys without the prefix.
			keys, err := v.Keys(ctx, "*")
			if err != nil {
				t.Fatal(err)
			}
			sort.Strings(keys)
			want := []string{"g", "gd", "ids", "l1", "o_1", "o_2", "r2", "s", "sorted", "st", "w_1", "w_2", "z1", "z2", "zu"}
			if !reflect.DeepEqual(keys, want) {
				t.Fatalf("KEYS * = %q, want %q", keys, want)
			}
			var scanned []string
			for cursor := uint64(0); ; {
				page, err := v.Scan(ctx, cursor, client.ScanOptions{Count: 3})
				if err != nil {
					t.Fatal(err)
				}
				scanned = append(scanned, page.Keys...)
				if cursor = page.Cursor; cursor == 0 {
					break
				}
			}
			sort.Strings(scanned)
			if !reflect.DeepEqual(scanned, want) {
				t.Fatalf("SCAN = %q", scanned)
			}
			if only, err := v.Keys(ctx, "w_*"); err != nil || len(only) != 2 {
				t.Fatalf("KEYS w_* = %q %v", only, err)
			}
			// RANDOMKEY cannot be confined to the namespace.
			if _, _, err := v.RandomKey(ctx); !errors.Is(err, client.ErrKeyPrefix) {
				t.Fatalf("RANDOMKEY: %v", err)
			}

			// Raw commands take the same key positions and reply stripping.
			raw, err := v.Do(ctx, "get", "s")
			if s, _ := raw.AsString(); err != nil || s != "1" {
				t.Fatalf("Do GET: %v %v", raw, err)
			}
			raw, err = v.Do(ctx, "KEYS", "r*")
			if names, _ := raw.AsStrings(); err != nil || !reflect.DeepEqual(names, []string{"r2"}) {
				t.Fatalf("Do KEYS: %v %v", raw, err)
			}
			if _, err := v.RPush(ctx, "l2", "only"); err != nil {
				t.Fatal(err)
			}
			raw, err = v.Do(ctx, "BLPOP", "l2", 1) // blocking: a dedicated connection
			if pair, _ := raw.AsStrings(); err != nil || !reflect.DeepEqual(pair, []string{"l2", "only"}) {
				t.Fatalf("Do BLPOP: %v %v", raw, err)
			}
			raw, err = v.Do(ctx, "XREAD", "STREAMS", "st", "0")
			if err != nil {
				t.Fatal(err)
			}
			if raw.Len() == 0 || !containsString(raw, "st") || containsString(raw, p+"st") {
				t.Fatalf("Do XREAD: %v", raw)
			}
			if _, err := v.Do(ctx, "MODULE.THING", "k"); !errors.Is(err, client.ErrKeyPrefix) {
				t.Fatalf("an unknown command under a prefix: %v", err)
			}

			// Batches: pipelined and atomic, futures decoded without the prefix.
			var b client.Batch
			b.Set("bs", "1")
			bget := b.Get("bs")
			bkeys := b.Keys("b*")
			bx := b.XRead(client.XReadArgs{Streams: []client.XStreamOffset{{Key: "st", ID: "0"}}})
			must(t, v.Pipeline(ctx, &b))
			if got, _ := bget.Result(); got.Value != "1" {
				t.Fatalf("batch GET %+v", got)
			}
			if got, _ := bkeys.Result(); !reflect.DeepEqual(got, []string{"bs"}) {
				t.Fatalf("batch KEYS %q", got)
			}
			if got, _ := bx.Result(); len(got) != 1 || got[0].Key != "st" {
				t.Fatalf("batch XREAD %+v", got)
			}
			b.Set("ba", "2")
			akeys := b.Keys("ba")
			alm := b.LMPop(client.ListLeft, 1, "l1")
			must(t, v.Atomic(ctx, &b))
			if got, _ := akeys.Result(); !reflect.DeepEqual(got, []string{"ba"}) {
				t.Fatalf("atomic KEYS %q", got)
			}
			if got, _ := alm.Result(); !got.Valid || got.Value.Key != "l1" {
				t.Fatalf("atomic LMPOP %+v", got)
			}
			if !f.physical(t, p+"ba") {
				t.Fatal("atomic SET not prefixed")
			}
			b.RandomKey()
			if err := v.Pipeline(ctx, &b); !errors.Is(err, client.ErrKeyPrefix) {
				t.Fatalf("a batch with RANDOMKEY: %v", err)
			}
			// Nothing outside the namespace was touched.
			if got, _, _ := f.plain.Get(ctx, "outside"); got != "x" {
				t.Fatal("the key outside the namespace changed")
			}
		})
	}
}

// containsString reports whether a reply holds the bulk string s at any depth.
func containsString(v resp.Value, s string) bool {
	if v.Kind.IsAggregate() {
		for _, e := range v.All() {
			if containsString(e, s) {
				return true
			}
		}
		return false
	}
	return v.Kind == resp.KindBulkString && string(v.Str) == s
}

// TestKeyPrefixWatch: WATCH takes the client's prefix, so a change to the physical key by
// another client aborts the transaction.
func TestKeyPrefixWatch(t *testing.T) {
	redistest.Require(t)
	f := startPrefixFixture(t, client.ProtocolRESP3)
	ctx := f.ctx
	err := f.pc.Watch(ctx, func(d *client.DedicatedConn) error {
		must(t, f.plain.Set(ctx, "app:w", "changed"))
		_, err := d.Exec(ctx, func(tx *client.Tx) { tx.Set("w", "mine") })
		return err
	}, "w")
	if !errors.Is(err, client.ErrTxConflict) {
		t.Fatalf("want a conflict on the physical key app:w, got %v", err)
	}
	// The dedicated connection's Do prefixes too.
	must(t, f.pc.WithDedicated(ctx, func(d *client.DedicatedConn) error {
		_, err := d.Do(ctx, "SET", "dd", "1")
		return err
	}))
	if !f.physical(t, "app:dd") {
		t.Fatal("DedicatedConn.Do did not prefix")
	}
}

// TestPubSubPrefix: subscriptions and publications take PubSubPrefix; messages report the
// names the application gave. Both protocols.
func TestPubSubPrefix(t *testing.T) {
	redistest.Require(t)
	for _, proto := range []client.Protocol{client.ProtocolRESP2, client.ProtocolRESP3} {
		t.Run(proto.String(), func(t *testing.T) {
			f := startPrefixFixture(t, proto)
			ctx := f.ctx
			sub, err := f.pc.Subscribe(ctx, "news")
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			psub, err := f.pc.PSubscribe(ctx, "n*")
			if err != nil {
				t.Fatal(err)
			}
			defer psub.Close()
			if got := sub.Topics(); !slices.Equal(got, []string{"news"}) {
				t.Fatalf("Topics() = %q", got)
			}
			// Publishing to the physical channel reaches both; publishing to another
			// namespace's does not.
			if n, err := f.plain.Publish(ctx, "news", "unprefixed"); err != nil || n != 0 {
				t.Fatalf("PUBLISH news reached %d subscribers (%v)", n, err)
			}
			if n, err := f.pc.Publish(ctx, "news", "hello"); err != nil || n != 2 {
				t.Fatalf("PUBLISH reached %d subscribers, want 2 (%v)", n, err)
			}
			m, err := sub.Next(ctx)
			if err != nil || m.Channel != "news" || m.Payload != "hello" {
				t.Fatalf("message %+v %v", m, err)
			}
			m, err = psub.Next(ctx)
			if err != nil || m.Channel != "news" || m.Pattern != "n*" || m.Payload != "hello" {
				t.Fatalf("pattern message %+v %v", m, err)
			}
			must(t, sub.Unsubscribe("news"))
			if ended, _ := sub.Ended(); !ended {
				t.Fatal("unsubscribing the application's name did not end the subscription")
			}
			ssub, err := f.pc.SSubscribe(ctx, "shard")
			if err != nil {
				t.Fatal(err)
			}
			defer ssub.Close()
			if n, err := f.plain.SPublish(ctx, "ev:shard", "raw"); err != nil || n != 1 {
				t.Fatalf("SPUBLISH ev:shard reached %d (%v)", n, err)
			}
			if m, err := ssub.Next(ctx); err != nil || m.Channel != "shard" || m.Payload != "raw" {
				t.Fatalf("shard message %+v %v", m, err)
			}
		})
	}
}

// TestViewPrintsNoSecret: a View prints its prefix and endpoint, never its client's password.
func TestViewPrintsNoSecret(t *testing.T) {
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{{Host: "cache", Port: 6379}}, Password: "pw-Echo-1175", KeyPrefix: "app:"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v := c.WithKeyPrefix("t1:")
	for _, out := range []string{fmt.Sprint(v), fmt.Sprintf("%+v", v), fmt.Sprintf("%#v", v), fmt.Sprint(*v)} {
		if strings.Contains(out, "pw-Echo") {
			t.Fatalf("printed %q", out)
		}
	}
	if got := fmt.Sprint(v); got != `client.View{KeyPrefix: "app:t1:", Endpoint: cache:6379}` {
		t.Fatalf("printed %q", got)
	}
}
