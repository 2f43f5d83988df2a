package client

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
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
		o := Options{ConnectionIdleReadTimeout: c.read, GatheredWriteStallTimeout: c.write}
		idle, stall := o.livenessBounds()
		if idle != c.wantIdle || stall != c.wantStall {
			t.Errorf("read %v write %v: bounds %v/%v, want %v/%v", c.read, c.write, idle, stall, c.wantIdle, c.wantStall)
		}
		cfg := o.transportConfig()
		if cfg.IdleReadTimeout != c.wantIdle || cfg.WriteStallTimeout != c.wantStall {
			t.Errorf("transport config %v/%v", cfg.IdleReadTimeout, cfg.WriteStallTimeout)
		}
	}
}

// TestMultipathFallbackLoggedOncePerClient: the fallback hook logs the Information event
// MultipathTcpFallback once however often the transport falls back, and each client has its own.
func TestMultipathFallbackLoggedOncePerClient(t *testing.T) {
	var buf bytes.Buffer
	o := Options{Endpoints: []Endpoint{{Host: "cache", Port: 6379}}, EnableMultipathTCP: true,
		Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	for client := 0; client < 2; client++ {
		hook := o.transportConfig().Dialer.MultipathFallback
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
	if o.transportConfig().Dialer.MultipathFallback != nil {
		t.Fatal("a fallback hook without EnableMultipathTCP")
	}
}
