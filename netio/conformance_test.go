package netio_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/engine/enginetest"
	"github.com/respire-go/respire/netio"
	"github.com/respire-go/respire/netio/redistest"
)

// redisHarness runs the conformance suite against real redis-server processes in real time.
type redisHarness struct {
	open, protected *redistest.Server
	refused         engine.Endpoint
	stalled         engine.Endpoint
}

const harnessPassword = "enginetest-secret-7d1c"

func newRedisHarness(t *testing.T) *redisHarness {
	h := &redisHarness{
		open:      redistest.Start(t, redistest.Config{}),
		protected: redistest.Start(t, redistest.Config{Password: harnessPassword}),
		refused:   refusedEndpoint(t),
	}
	_, h.stalled = startFake(t, stall)
	return h
}

func (h *redisHarness) Caps() enginetest.Caps { return enginetest.Caps{} }

func (h *redisHarness) Transport(_ testing.TB, password string) engine.Transport {
	return netio.NewTransport(netio.TransportConfig{
		Dialer:           netio.Dialer{ConnectTimeout: 3 * waitBound},
		Handshake:        netio.HandshakeConfig{Password: password, LibraryName: "respire", LibraryVersion: "test"},
		HandshakeTimeout: 3 * waitBound,
	})
}

func (h *redisHarness) Endpoint(t testing.TB, kind enginetest.EndpointKind) engine.Endpoint {
	switch kind {
	case enginetest.Open:
		return tcp(t, h.open.Addr())
	case enginetest.Protected:
		return tcp(t, h.protected.Addr())
	case enginetest.Refused:
		return h.refused
	case enginetest.Stalled:
		return h.stalled
	}
	t.Fatalf("unknown endpoint kind %v", kind)
	return engine.Endpoint{}
}

func (h *redisHarness) Password() string { return harnessPassword }

func (h *redisHarness) WaitFor(cond func() bool) bool { return waitFor(cond) }

func (h *redisHarness) Settle() { time.Sleep(50 * time.Millisecond) }

func (h *redisHarness) KillClients(t testing.TB) {
	if _, err := h.open.TryDo("CLIENT", "KILL", "TYPE", "normal"); err != nil {
		t.Fatalf("CLIENT KILL: %v", err)
	}
}

func (h *redisHarness) Clients(t testing.TB) int {
	return connectedClients(t, h.open)
}

// connectedClients returns the server's client connections, less the one asking.
func connectedClients(t testing.TB, srv *redistest.Server) int {
	info, err := srv.TryDo("INFO", "clients")
	if err != nil {
		t.Fatalf("INFO clients: %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("INFO clients: %q", line)
			}
			return n - 1
		}
	}
	t.Fatalf("INFO clients has no connected_clients: %q", info)
	return 0
}

func TestConformance(t *testing.T) {
	enginetest.Run(t, newRedisHarness(t))
	checkNoLeaks(t)
}
