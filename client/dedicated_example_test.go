package client_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/respire-go/respire/client"
)

// A worker takes jobs with BLPOP on a connection of its own; the context bounds both the rent
// and the wait.
func ExampleClient_Dedicated() {
	ctx := context.Background()
	c, err := client.Connect(ctx, client.Options{
		Endpoints:     []client.Endpoint{{Host: "localhost", Port: 6379}},
		DedicatedPool: client.DedicatedPoolOptions{MaximumSize: 16, UnblockOnCancel: true},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	d, err := c.Dedicated(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	for {
		_, job, ok, err := d.BLPop(ctx, 5*time.Second, "jobs")
		if err != nil {
			fmt.Println(err)
			return
		}
		if ok {
			fmt.Println("job:", job)
		}
	}
}

// An optimistic transaction: a conflict is reported, never replayed.
func ExampleClient_Watch() {
	ctx := context.Background()
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{{Host: "localhost", Port: 6379}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	err = c.Watch(ctx, func(d *client.DedicatedConn) error {
		v, _, err := d.Get(ctx, "stock")
		if err != nil {
			return err
		}
		n, _ := strconv.Atoi(v)
		if n == 0 {
			return nil
		}
		_, err = d.Exec(ctx, func(tx *client.Tx) {
			tx.Set("stock", strconv.Itoa(n-1))
			tx.Incr("sold")
		})
		return err
	}, "stock")
	if errors.Is(err, client.ErrTxConflict) {
		fmt.Println("stock changed meanwhile: nothing was applied")
	}
}
