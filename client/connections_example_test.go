package client_test

import (
	"context"
	"log/slog"
	"time"

	"github.com/respire-go/respire/client"
)

// A credential source shared by the clients of a service: when the secret manager rotates the
// password, Set hands the new one to every client, which re-authenticates its live connections
// with AUTH; new connections authenticate with it in their handshake.
func ExampleCredentialSource() {
	ctx := context.Background()
	src := client.NewCredentialSource(client.Credentials{Username: "checkout", Password: "initial-secret"})
	c, err := client.Connect(ctx, client.Options{
		Endpoints:   []client.Endpoint{{Host: "cache.internal", Port: 6379}},
		Credentials: src,
		Logger:      slog.Default(), // logs CredentialsRenewed or CredentialRenewalFailed
	})
	if err != nil {
		return
	}
	defer c.Close()

	// Called by the rotation hook of your secret manager.
	src.Set(client.Credentials{Username: "checkout", Password: "rotated-secret"})
}

// Recycling connections every 30 to 35 minutes, so that new connections can reach other backends
// behind a load balancer, and aborting connections to a peer that stops answering.
func ExampleOptions_connectionLifetimeAndLiveness() {
	opts := client.Options{
		Endpoints:                   []client.Endpoint{{Host: "cache.internal", Port: 6379}},
		ConnectionMaxLifetime:       30 * time.Minute,
		ConnectionMaxLifetimeJitter: 5 * time.Minute,
		ConnectionIdleReadTimeout:   30 * time.Second, // and, inherited, the write-stall bound
		EnableMultipathTCP:          true,
	}
	c, err := client.Create(opts)
	if err != nil {
		return
	}
	defer c.Close()
}
