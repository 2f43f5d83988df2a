//go:build !race

package client_test

import (
	"context"
	"net"
	"testing"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// TestHooksOfOtherKindsLeaveCommandsAlone: a client whose hooks wrap only deliveries and dials
// keeps the commands' hot path: a typed SET or GET allocates nothing.
func TestHooksOfOtherKindsLeaveCommandsAlone(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := context.Background()
	hook := client.Hook{
		Delivery: func(next client.DeliveryFunc) client.DeliveryFunc { return next },
		Dial: func(next client.DialFunc) client.DialFunc {
			return func(ctx context.Context, ep client.Endpoint) (net.Conn, error) { return next(ctx, ep) }
		},
	}
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}},
		Connections: 1, Hooks: []client.Hook{hook}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "alloc:k", "v"); err != nil {
		t.Fatal(err)
	}
	for name, fn := range map[string]func(){
		"Set": func() { _ = c.Set(ctx, "alloc:k", "v") },
		"Get": func() { _, _, _ = c.Get(ctx, "alloc:k") },
	} {
		fn()
		if n := testing.AllocsPerRun(200, fn); n != 0 {
			t.Errorf("%s: %v allocations per call with delivery and dial hooks only, want 0", name, n)
		}
	}
}
