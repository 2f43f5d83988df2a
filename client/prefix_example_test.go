package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/respire-go/respire/client"
)

// One client, one namespace per tenant: every key of the view's commands is prefixed, and keys
// in replies come back without the prefix.
func ExampleClient_WithKeyPrefix() {
	ctx := context.Background()
	tenant := rdb.WithKeyPrefix("tenant:42:")
	if err := tenant.SetEx(ctx, "cart", time.Hour, "3 items"); err != nil { // SET tenant:42:cart
		log.Fatal(err)
	}
	carts := tenant.WithKeyPrefix("cart:") // views compose: tenant:42:cart:...
	if _, err := carts.RPush(ctx, "pending", "order-7"); err != nil {
		log.Fatal(err)
	}
	key, order, ok, err := carts.BLPop(ctx, time.Second, "pending")
	if err != nil {
		log.Fatal(err)
	}
	if ok {
		fmt.Println(key, order) // "pending order-7": the key without its prefix
	}
}

// A root namespace for the whole client, from options (or keyPrefix= in a connection string).
func ExampleOptions_keyPrefix() {
	ctx := context.Background()
	c, err := client.Connect(ctx, client.Options{
		Endpoints:    []client.Endpoint{{Host: "localhost", Port: 6379}},
		KeyPrefix:    "billing:",
		PubSubPrefix: "billing:",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "invoice:1", "paid"); err != nil { // SET billing:invoice:1 paid
		log.Fatal(err)
	}
	if _, err := c.Publish(ctx, "invoices", "1"); err != nil { // PUBLISH billing:invoices 1
		log.Fatal(err)
	}
}
