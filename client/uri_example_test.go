package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/respire-go/respire/client"
)

// A URI carries the endpoint, credentials, database and the common options. rediss:// enables
// TLS with an empty configuration that the application may complete (RootCAs, certificates).
func ExampleParseURI() {
	opts, err := client.ParseURI("rediss://:s3cret@cache.internal:6380/2?clientName=checkout-api&protocol=resp3&connectTimeoutMs=3000")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(opts.Endpoints[0], opts.Database, opts.ClientName, opts.Protocol, opts.ConnectTimeout, opts.TLS != nil)

	// Parsing is strict and errors never repeat credentials.
	_, err = client.ParseURI("redis://:s3cret@cache.internal?retries=3")
	var ce *client.ConfigError
	fmt.Println(errors.As(err, &ce), ce.Option)
	// Output:
	// cache.internal:6380 2 checkout-api resp3 3s true
	// true retries
}

// StackExchange.Redis strings, such as those of the Azure portal, work unchanged. Options
// respire ignores are remembered and logged once by the client created from them.
func ExampleParseConnectionString() {
	opts, err := client.ParseConnectionString("example.redis.cache.windows.net,password=secret,ssl=True,abortConnect=False,tiebreaker=")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(opts.Endpoints[0], opts.TLS != nil, opts.IgnoredOptions())
	opts.Logger = slog.Default() // attach the logger before creating the client
	// Output:
	// example.redis.cache.windows.net:6380 true [tiebreaker]
}

// ConnectAny tries independent deployments in priority order and returns the first that
// connects; the client never switches afterwards.
func ExampleConnectAny() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.ConnectAny(ctx,
		client.Options{Endpoints: []client.Endpoint{{Host: "redis-primary.internal", Port: 6379}}, ConnectTimeout: 3 * time.Second},
		client.Options{Endpoints: []client.Endpoint{{Host: "redis-secondary.internal", Port: 6379}}, ConnectTimeout: 3 * time.Second},
	)
	if err != nil {
		var ce *client.ConnectionError
		if errors.As(err, &ce) {
			log.Fatalf("no deployment reachable: %v", err) // lists every attempt
		}
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("connected to", c.Endpoint())
}
