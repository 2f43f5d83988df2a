package client_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// TestTracingCommandThatWaitedOnRecovery: a command sent while the only connection is being
// replaced waits for that attempt; its span has a respire.connection.wait event naming the
// attempt it waited for, and a command sent while connected has none.
//
// The replacement's dial is held (a dial hook blocks until released), so the command is sure
// to be sent while the attempt is in progress.
func TestTracingCommandThatWaitedOnRecovery(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	var hold atomic.Bool
	entered := make(chan struct{}, 16)
	release := make(chan struct{})
	gate := client.Hook{Dial: func(next client.DialFunc) client.DialFunc {
		return func(ctx context.Context, ep client.Endpoint) (net.Conn, error) {
			if hold.Load() {
				entered <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return next(ctx, ep)
		}
	}}
	scheduled := make(chan struct{}, 16)
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Connections: 1,
		TracerProvider: tp, Hooks: []client.Hook{gate}, ConnectTimeout: 10 * time.Second, CommandTimeout: 10 * time.Second,
		ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: 10 * time.Millisecond, MaxDelay: 10 * time.Millisecond},
		OnConnectionStateChange: func(ch client.ConnectionStateChange) {
			if ch.Scheduled && ch.Source == client.SourceCommand {
				scheduled <- struct{}{}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	must(t, c.Set(ctx, "wait:k", "v"))
	hold.Store(true)
	srv.Kill()
	srv.Restart(t)
	select {
	case <-entered: // the replacement attempt is dialling, and held
	case <-time.After(10 * time.Second):
		t.Fatal("no replacement attempt")
	}
	select {
	case <-scheduled:
	case <-time.After(5 * time.Second):
		t.Fatal("no scheduled-attempt observation")
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := c.Get(ctx, "wait:k")
		done <- err
	}()
	time.Sleep(100 * time.Millisecond) // the GET is sent and waits for the held attempt
	hold.Store(false)
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("GET across the replacement: %v", err)
	}
	var waited, plain tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "GET":
			waited = s
		case "SET":
			plain = s
		}
	}
	if len(plain.Events) != 0 {
		t.Errorf("SET on a ready connection has events %v", plain.Events)
	}
	if waited.Status.Code != codes.Unset || len(waited.Events) != 1 || waited.Events[0].Name != client.EventConnectionWait {
		t.Fatalf("GET that waited: status %v, events %v", waited.Status, waited.Events)
	}
	t.Logf("wait event: %v", waited.Events[0].Attributes)
	a := attrsOf(waited.Events[0].Attributes)
	if a["respire.reconnect.attempt"].AsInt64() != 1 || a["respire.connection.source"].AsString() != "command" ||
		a["respire.connection.state"].AsString() != "connecting" || a["respire.reconnect.delay"].AsFloat64() != 0.01 {
		t.Errorf("wait event attributes %v", waited.Events[0].Attributes)
	}
}
