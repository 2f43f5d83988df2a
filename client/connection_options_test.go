package client

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/engine/config"
)

// TestLivenessBoundsInheritance: the spec's table for GatheredWriteStallTimeout.
func TestLivenessBoundsInheritance(t *testing.T) {
	for _, c := range []struct {
		read, write         time.Duration
		wantIdle, wantStall time.Duration
	}{
		{0, 0, 0, 0},         // both unset: both off
		{NoTimeout, 0, 0, 0}, // read off, write inherits off
		{30 * time.Second, 0, 30 * time.Second, 30 * time.Second}, // write inherits read
		{30 * time.Second, 5 * time.Second, 30 * time.Second, 5 * time.Second},
		{0, 5 * time.Second, 0, 5 * time.Second},           // finite write regardless of read
		{30 * time.Second, NoTimeout, 30 * time.Second, 0}, // NoTimeout disables only the write bound
	} {
		o := Options{Endpoints: []Endpoint{{Host: "cache", Port: 6379}}, ConnectionIdleReadTimeout: c.read, GatheredWriteStallTimeout: c.write}
		o, r := resolveForTest(t, o)
		cfg := o.transportConfig(&r)
		if cfg.IdleReadTimeout != c.wantIdle || cfg.WriteStallTimeout != c.wantStall {
			t.Errorf("read %v write %v: transport bounds %v/%v, want %v/%v", c.read, c.write,
				cfg.IdleReadTimeout, cfg.WriteStallTimeout, c.wantIdle, c.wantStall)
		}
	}
}

// TestMultipathFallbackLoggedOncePerClient: the fallback hook logs the Information event
// MultipathTcpFallback once however often the transport falls back, and each client has its own.
func TestMultipathFallbackLoggedOncePerClient(t *testing.T) {
	var buf bytes.Buffer
	o := Options{Endpoints: []Endpoint{{Host: "cache", Port: 6379}}, EnableMultipathTCP: true,
		Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	o, r := resolveForTest(t, o)
	for client := 0; client < 2; client++ {
		hook := o.transportConfig(&r).Dialer.MultipathFallback
		for i := 0; i < 5; i++ {
			hook()
		}
	}
	if n := strings.Count(buf.String(), "event=MultipathTcpFallback"); n != 2 {
		t.Fatalf("%d fallback events for two clients, want one each:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "level=INFO") || !strings.Contains(buf.String(), "event_id=143") {
		t.Fatalf("not an Information event 143: %s", buf.String())
	}
	o.EnableMultipathTCP = false
	if o.transportConfig(&r).Dialer.MultipathFallback != nil {
		t.Fatal("a fallback hook without EnableMultipathTCP")
	}
}

// resolveForTest validates o and resolves it as Create does.
func resolveForTest(t *testing.T, o Options) (Options, config.Resolved) {
	t.Helper()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	o, r, err := o.resolve()
	if err != nil {
		t.Fatal(err)
	}
	return o, r
}

// TestResolverProtocolNumbers: the client's protocol values are the resolver's and netio's
// numbers (one type, wire.Protocol, for the last two), so that Options.Protocol crosses to the
// resolver and on to netio by conversion.
func TestResolverProtocolNumbers(t *testing.T) {
	for _, p := range []Protocol{ProtocolAuto, ProtocolRESP2, ProtocolRESP3} {
		o, r := resolveForTest(t, Options{Endpoints: []Endpoint{{Host: "cache", Port: 6379}}, Protocol: p})
		if got := o.transportConfig(&r).Handshake.Protocol; Protocol(got) != p || got.String() != p.String() {
			t.Errorf("%v became %v", p, got)
		}
	}
	if config.ProtocolAuto != config.Protocol(ProtocolAuto) || config.ProtocolRESP2 != config.Protocol(ProtocolRESP2) ||
		config.ProtocolRESP3 != config.Protocol(ProtocolRESP3) {
		t.Fatal("engine/config and netio number the protocols differently")
	}
}
