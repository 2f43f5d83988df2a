package client_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

const scanSize = 10_000

// fillScanData writes scanSize string keys k:00000..., and a hash h, a set s and a sorted set z
// of scanSize elements each (large enough for their hash-table encodings), in batches.
func fillScanData(t *testing.T, ctx context.Context, c client.Commands) {
	t.Helper()
	var b client.Batch
	for i := 0; i < scanSize; i++ {
		n := fmt.Sprintf("%05d", i)
		b.Set("k:"+n, n)
		b.HSet("h", "f"+n, n)
		b.SAdd("s", "m"+n)
		b.ZAdd("z", client.ZMember{Member: "m" + n, Score: float64(i)})
		if b.Len() >= 4000 {
			must(t, c.Pipeline(ctx, &b))
		}
	}
	must(t, c.Pipeline(ctx, &b))
}

// countAll drains an iterator, failing on an error, and counts each element.
func countAll[T comparable](t *testing.T, seq func(func(T, error) bool)) map[T]int {
	t.Helper()
	seen := make(map[T]int)
	for v, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		seen[v]++
	}
	return seen
}

// exactlyOnce fails unless seen holds want elements, each once.
func exactlyOnce[T comparable](t *testing.T, what string, seen map[T]int, want int) {
	t.Helper()
	if len(seen) != want {
		t.Fatalf("%s: %d distinct elements, want %d", what, len(seen), want)
	}
	for v, n := range seen {
		if n != 1 {
			t.Fatalf("%s: %v yielded %d times", what, v, n)
		}
	}
}

// TestScanIteratorsOverTenThousand: each iterator visits every element of a 10,000-element
// collection that does not change during the scan exactly once, under both protocols, with
// small pages (many cursor steps on one pinned connection); MATCH, TYPE and an early break
// work; a DedicatedConn scans on itself.
func TestScanIteratorsOverTenThousand(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	for i, proto := range []client.Protocol{client.ProtocolRESP2, client.ProtocolRESP3} {
		t.Run(proto.String(), func(t *testing.T) {
			checkNoLeaks(t)
			ctx := ctxT(t)
			c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Protocol: proto, Database: i})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fillScanData(t, ctx, c.Commands)

			keys := countAll(t, c.ScanAll(ctx, client.ScanOptions{Count: 100}))
			exactlyOnce(t, "SCAN", keys, scanSize+3)
			for _, k := range []string{"h", "s", "z", "k:00000", "k:09999"} {
				if keys[k] != 1 {
					t.Fatalf("SCAN missed %s", k)
				}
			}
			matched := countAll(t, c.ScanAll(ctx, client.ScanOptions{Match: "k:000*", Count: 500}))
			exactlyOnce(t, "SCAN MATCH", matched, 100)
			typed := countAll(t, c.ScanAll(ctx, client.ScanOptions{Type: "zset", Count: 1000}))
			exactlyOnce(t, "SCAN TYPE", typed, 1)

			fields := make(map[string]int)
			for fv, err := range c.HScanAll(ctx, "h", client.ScanOptions{Count: 50}) {
				if err != nil {
					t.Fatal(err)
				}
				if "f"+fv.Value != fv.Field {
					t.Fatalf("HSCAN paired %q with %q", fv.Field, fv.Value)
				}
				fields[fv.Field]++
			}
			exactlyOnce(t, "HSCAN", fields, scanSize)
			exactlyOnce(t, "SSCAN", countAll(t, c.SScanAll(ctx, "s", client.ScanOptions{Count: 50})), scanSize)
			members := make(map[string]int)
			for m, err := range c.ZScanAll(ctx, "z", client.ScanOptions{Count: 50}) {
				if err != nil {
					t.Fatal(err)
				}
				if want := "m" + fmt.Sprintf("%05d", int(m.Score)); m.Member != want {
					t.Fatalf("ZSCAN paired %q with score %v", m.Member, m.Score)
				}
				members[m.Member]++
			}
			exactlyOnce(t, "ZSCAN", members, scanSize)

			// Breaking out gives the connection back: many more scans than the pool holds.
			for range 20 {
				for _, err := range c.ScanAll(ctx, client.ScanOptions{Count: 10}) {
					if err != nil {
						t.Fatal(err)
					}
					break
				}
			}
			// A dedicated connection scans on itself.
			must(t, c.WithDedicated(ctx, func(d *client.DedicatedConn) error {
				exactlyOnce(t, "SSCAN on a DedicatedConn", countAll(t, d.SScanAll(ctx, "s", client.ScanOptions{Count: 1000})), scanSize)
				return nil
			}))
			// A wrong type is the server's error, not a lost cursor.
			for _, err := range c.HScanAll(ctx, "s", client.ScanOptions{}) {
				var se *client.ServerError
				if !errors.As(err, &se) || se.Code != "WRONGTYPE" || errors.Is(err, client.ErrCursorLost) {
					t.Fatalf("HSCAN of a set: %v", err)
				}
			}
		})
	}
}

// TestScanUnderKeyPrefix: a view's scan visits only its namespace, yields the keys without the
// prefix, and HSCAN's MATCH applies to fields, not to keys.
func TestScanUnderKeyPrefix(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, KeyPrefix: "app:"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v := c.WithKeyPrefix("t*1:") // a glob character in the prefix matches only itself
	var b client.Batch
	for i := range 1000 {
		b.Set("x"+strconv.Itoa(i), "1")
	}
	must(t, v.Pipeline(ctx, &b))
	must(t, c.Set(ctx, "t21:decoy", "1")) // matched by an unescaped "app:t*1:*"
	if _, err := v.HSet(ctx, "h", "field", "1", "other", "2"); err != nil {
		t.Fatal(err)
	}
	keys := countAll(t, v.ScanAll(ctx, client.ScanOptions{Count: 37}))
	exactlyOnce(t, "SCAN in a view", keys, 1001)
	for k := range keys {
		if strings.HasPrefix(k, "app:") || strings.HasPrefix(k, "t*1:") {
			t.Fatalf("SCAN yielded %q with its prefix", k)
		}
	}
	if keys["h"] != 1 || keys["x999"] != 1 {
		t.Fatal("SCAN missed keys of the view")
	}
	fields := countAll(t, v.HScanAll(ctx, "h", client.ScanOptions{Match: "f*"}))
	if len(fields) != 1 || fields[client.FieldValue{Field: "field", Value: "1"}] != 1 {
		t.Fatalf("HSCAN MATCH f* = %v", fields)
	}
}

// TestScanCursorLostMidScan: when the connection holding the cursor is killed mid-scan, the
// iterator yields one *CursorLostError and stops, even though the client itself has recovered
// (its shared connections reconnected): the cursor is never continued on another connection.
func TestScanCursorLostMidScan(t *testing.T) {
	redistest.Require(t)
	for _, proto := range []client.Protocol{client.ProtocolRESP2, client.ProtocolRESP3} {
		t.Run(proto.String(), func(t *testing.T) {
			srv := redistest.Start(t, redistest.Config{})
			ctx := ctxT(t)
			c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Protocol: proto})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fillScanData(t, ctx, c.Commands)
			yielded, errs, afterErr := 0, 0, 0
			var last error
			for _, err := range c.ScanAll(ctx, client.ScanOptions{Count: 10}) {
				if errs > 0 {
					afterErr++
				}
				if err != nil {
					errs++
					last = err
					continue
				}
				yielded++
				if yielded == 1 {
					srv.Do(t, "CLIENT", "KILL", "TYPE", "normal") // every client connection
					// The client recovers: its shared connections carry commands again.
					waitPing(t, ctx, c)
				}
			}
			if errs != 1 || afterErr != 0 {
				t.Fatalf("%d errors, %d yields after the error: want one error and nothing after it", errs, afterErr)
			}
			var cl *client.CursorLostError
			if !errors.Is(last, client.ErrCursorLost) || !errors.As(last, &cl) || cl.Command != "SCAN" {
				t.Fatalf("want a *CursorLostError for SCAN, got %v", last)
			}
			var ce *client.ConnectionError
			var uo *client.UnknownOutcomeError
			if !errors.As(last, &ce) && !errors.As(last, &uo) {
				t.Fatalf("the cause is not a connection failure: %v", last)
			}
			if yielded == 0 || yielded >= scanSize {
				t.Fatalf("yielded %d keys before the error", yielded)
			}
			// A new scan works.
			exactlyOnce(t, "SCAN after restart", countAll(t, c.ScanAll(ctx, client.ScanOptions{Count: 1000})), scanSize+3)
		})
	}
}

// waitPing pings until the client answers (it reconnects on demand).
func waitPing(t *testing.T, ctx context.Context, c *client.Client) {
	t.Helper()
	for range 200 {
		if c.Ping(ctx) == nil {
			return
		}
	}
	t.Fatal("the client did not recover")
}
