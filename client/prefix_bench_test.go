package client_test

import (
	"context"
	"testing"

	"github.com/respire-go/respire/client"
)

// BenchmarkKeyPrefix measures typed commands through a view with a key prefix: the frame is
// rewritten into the call's second buffer, so a prefixed GET or SET allocates what an
// unprefixed one does; a KEYS reply is rebuilt without the prefix.
func BenchmarkKeyPrefix(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	v := c.WithKeyPrefix("tenant:42:")
	if err := v.Set(ctx, "k", "v"); err != nil {
		b.Fatal(err)
	}
	b.Run("Set", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := v.Set(ctx, "k", "v"); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("Get", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, _, err := v.Get(ctx, "k"); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("Keys", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := v.Keys(ctx, "k*"); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// BenchmarkScript measures RunScript once the script is loaded: one EVALSHA per run.
func BenchmarkScript(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	s := client.NewScript("return redis.call('INCR', KEYS[1])")
	if _, err := c.RunScript(ctx, s, []string{"bench:script"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		keys := []string{"bench:script"}
		for pb.Next() {
			if _, err := c.RunScript(ctx, s, keys); err != nil {
				b.Fatal(err)
			}
		}
	})
}
