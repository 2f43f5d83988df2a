package client_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

func TestClusterSmoke(t *testing.T) {
	rc := redistest.StartCluster(t, redistest.ClusterConfig{})
	n0 := rc.Node(0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, client.Options{UseCluster: true, Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: n0.Port()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 200; i++ {
		k := fmt.Sprintf("key:%d", i)
		if err := c.Set(ctx, k, k); err != nil {
			t.Fatalf("set %s: %v", k, err)
		}
		v, ok, err := c.Get(ctx, k)
		if err != nil || !ok || v != k {
			t.Fatalf("get %s: %q %v %v", k, v, ok, err)
		}
	}
	_, err = c.MGet(ctx, "a", "b")
	var cse *client.CrossSlotError
	if !errors.As(err, &cse) {
		t.Fatalf("MGET a b: %v", err)
	}
	t.Log(err, c.ClusterNodes())
}
