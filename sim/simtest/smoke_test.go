package simtest

import (
	"context"
	"testing"
)

func TestSmoke(t *testing.T) {
	res := Test(t, Config{Seed: 1, KeepTrace: true}, func(env *Env) {
		ctx := context.Background()
		c := env.Client()
		if err := c.Set(ctx, "k", "v"); err != nil {
			env.Fatalf("set: %v", err)
		}
		v, ok, err := c.Get(ctx, "k")
		if err != nil || !ok || v != "v" {
			env.Fatalf("get: %q %v", v, err)
		}
		env.Logf("now %v", env.Now())
	})
	for _, l := range res.Trace {
		t.Log(l)
	}
}
