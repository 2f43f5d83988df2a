package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/respire-go/respire/client"
)

// Connect connects before returning, so an unreachable server fails here.
func ExampleConnect() {
	ctx := context.Background()
	c, err := client.Connect(ctx, client.Options{
		Endpoints:      []client.Endpoint{{Host: "localhost", Port: 6379}},
		ClientName:     "checkout-api",
		ConnectTimeout: 5 * time.Second,
		CommandTimeout: 2 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "greeting", "hello"); err != nil {
		log.Fatal(err)
	}
	v, found, err := c.Get(ctx, "greeting")
	fmt.Println(v, found, err)
}

// Create does no I/O: the application can start before Redis. The first command connects.
func ExampleCreate() {
	c, err := client.Create(client.Options{
		Endpoints:      []client.Endpoint{{Host: "127.0.0.1", Port: 1}}, // nothing listens here
		ConnectTimeout: time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("connected before first use:", c.IsConnected())
	err = c.Ping(context.Background())
	var connErr *client.ConnectionError
	var opErr *net.OpError
	fmt.Println("connection error:", errors.As(err, &connErr), "refused:", errors.As(err, &opErr))
	// Output:
	// connected before first use: false
	// connection error: true refused: true
}

// A ReconnectPolicy delays and bounds the replacement of failed connections. Observe recovery
// through OnConnectionStateChange; the observations carry the slot, attempt and delay. This
// policy sets no MaxAttempts, so the client never gives up; with a limit, watch for Exhausted
// (or ErrReconnectLimit) and recreate the client.
func ExampleReconnectPolicy() {
	policy := &client.ReconnectPolicy{
		InitialDelay:      250 * time.Millisecond,
		BackoffMultiplier: 2,
		MaxDelay:          5 * time.Second,
		JitterRatio:       0.2,
	}
	if err := policy.Validate(); err != nil {
		log.Fatal(err)
	}
	// The delay before each attempt, at the middle of the jitter band.
	for attempt := 1; attempt <= 6; attempt++ {
		fmt.Println(attempt, policy.Delay(attempt, 0.5))
	}
	c, err := client.Create(client.Options{
		Endpoints:       []client.Endpoint{{Host: "localhost", Port: 6379}},
		ReconnectPolicy: policy,
		OnConnectionStateChange: func(ch client.ConnectionStateChange) {
			switch {
			case ch.Source == client.SourceCommand && ch.Exhausted:
				log.Printf("slot %d gave up: recreate the client", ch.Slot)
			case ch.Scheduled:
				log.Printf("slot %d: attempt %d in %v", ch.Slot, ch.Attempt, ch.NextDelay)
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// Output:
	// 1 250ms
	// 2 500ms
	// 3 1s
	// 4 2s
	// 5 4s
	// 6 5s
}

// Errors are matched with errors.Is and errors.As. A command whose reply was lost is never
// resent: ErrUnknownOutcome tells the application to decide with the command's idempotency.
func Example_matchingErrors() {
	_, err := client.Create(client.Options{
		Endpoints:       []client.Endpoint{{Host: "localhost", Port: 6379}},
		ReconnectPolicy: &client.ReconnectPolicy{JitterRatio: 1.5},
	})
	var cfg *client.ConfigError
	if errors.As(err, &cfg) {
		fmt.Println("bad option:", cfg.Option)
	}

	handle := func(err error) string {
		var server *client.ServerError
		var timeout *client.TimeoutError
		switch {
		case err == nil:
			return "ok"
		case errors.Is(err, client.ErrReconnectLimit):
			return "recovery exhausted: recreate the client"
		case errors.Is(err, client.ErrUnknownOutcome):
			return "may have executed: retry only if idempotent"
		case errors.As(err, &server) && server.IsTransient():
			return "transient server error " + server.Code + ": retry later"
		case errors.As(err, &timeout):
			return "timed out at " + string(timeout.Diagnostics.Stage)
		case errors.Is(err, context.Canceled):
			return "cancelled before sending"
		}
		return "failed: " + err.Error()
	}
	fmt.Println(handle(&client.ServerError{Code: "LOADING", CommandName: "GET"}))
	fmt.Println(handle(&client.TimeoutError{Diagnostics: client.Diagnostics{Stage: client.StageAwaitingReply}}))
	fmt.Println(handle(&client.ReconnectLimitError{}))
	fmt.Println(handle(context.Canceled))
	// Output:
	// bad option: ReconnectPolicy.JitterRatio
	// transient server error LOADING: retry later
	// may have executed: retry only if idempotent
	// recovery exhausted: recreate the client
	// cancelled before sending
}
