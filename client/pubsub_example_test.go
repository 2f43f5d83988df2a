package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/respire-go/respire/client"
)

// Subscribe returns once the server acknowledged the channels; All iterates over the messages,
// the gap markers recovery inserts after an interruption, and overflow markers, until the
// subscription ends.
func ExampleClient_Subscribe() {
	ctx := context.Background()
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{{Host: "localhost", Port: 6379}}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, "orders")
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	for msg, err := range sub.All(ctx) {
		var ended *client.SubscriptionEndedError
		switch {
		case errors.As(err, &ended):
			fmt.Println("subscription ended:", ended.Reason)
			return
		case err != nil:
			log.Fatal(err)
		case msg.Kind == client.MessageGap:
			fmt.Println("interrupted: reload", msg.Channel, "from the source of truth")
		case msg.Kind == client.MessageOverflow:
			fmt.Println("fell behind by", msg.Dropped, "entries")
		default:
			fmt.Println(msg.Channel, msg.Payload)
		}
	}
}
