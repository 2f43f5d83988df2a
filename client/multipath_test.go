package client_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
)

// TestMultipathTCPOnThisKernel connects with EnableMultipathTCP to a real server and checks the
// branch this kernel takes: with MPTCP available no fallback event is logged (Redis does not
// listen with MPTCP, so the kernel continues over plain TCP, which is not a fallback); without it
// the connection uses TCP and MultipathTcpFallback is logged exactly once for the client, however
// many connections it opens. A custom dialer and a Unix socket never log it.
func TestMultipathTCPOnThisKernel(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{UnixSocket: true})
	available := netio.MultipathTCPAvailable()
	t.Logf("kernel Multipath TCP available: %v", available)
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Connections: 3,
		EnableMultipathTCP: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	must(t, c.Ping(ctx))
	c.Close()
	want := 0
	if !available {
		want = 1
	}
	if n := strings.Count(logs.String(), "event=MultipathTcpFallback"); n != want {
		t.Fatalf("%d fallback events with 3 connections, want %d:\n%s", n, want, logs.String())
	}

	for _, opts := range []client.Options{
		{Endpoints: []client.Endpoint{endpointOf(srv)}, Dialer: func(ctx context.Context, ep client.Endpoint) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", ep.String())
		}},
		{Endpoints: []client.Endpoint{{Host: srv.UnixPath()}}},
	} {
		logs := &syncBuffer{}
		opts.EnableMultipathTCP, opts.Logger = true, slog.New(slog.NewTextHandler(logs, nil))
		c, err := client.Connect(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		must(t, c.Ping(ctx))
		c.Close()
		if strings.Contains(logs.String(), "MultipathTcpFallback") {
			t.Fatalf("a custom dialer or Unix socket logged a fallback:\n%s", logs.String())
		}
	}
}
