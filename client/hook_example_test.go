package client_test

import (
	"context"
	"log/slog"
	"time"

	"github.com/respire-go/respire/client"
)

// A hook that logs every command's name, duration and outcome. It sees no keys or values; set
// Options.ObserveArguments to give it cmd.Args().
func ExampleHook() {
	logging := client.Hook{
		Command: func(next client.CommandFunc) client.CommandFunc {
			return func(ctx context.Context, cmd *client.CommandInfo) error {
				start := time.Now()
				err := next(ctx, cmd) // call next once: a second call sends nothing
				slog.InfoContext(ctx, "redis command", "name", cmd.Name(), "endpoint", cmd.Endpoint().String(),
					"took", time.Since(start), "failed", err != nil)
				return err
			}
		},
		Batch: func(next client.BatchFunc) client.BatchFunc {
			return func(ctx context.Context, b *client.BatchInfo) error {
				err := next(ctx, b)
				slog.InfoContext(ctx, "redis batch", "commands", b.Len(), "transaction", b.Transaction(), "failed", err != nil)
				return err
			}
		},
	}
	c, err := client.Connect(context.Background(), client.Options{
		Endpoints: []client.Endpoint{{Host: "localhost", Port: 6379}},
		Hooks:     []client.Hook{logging},
	})
	if err != nil {
		return
	}
	defer c.Close()
	_, _, _ = c.Get(context.Background(), "greeting")
}
