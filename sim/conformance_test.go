package sim

import (
	"context"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/engine/enginetest"
	"github.com/respire-go/respire/netio/wire"
	"github.com/respire-go/respire/sim/scenario"
)

// TestConformance runs the engine seam's conformance suite against the simulator: the same cases
// netio passes against real redis-server processes, here in virtual time against simulated nodes.
func TestConformance(t *testing.T) {
	enginetest.Run(t, newConformanceHarness(t))
}

// conformanceHarness serves the suite from one simulated world with four nodes: open (no
// password), protected (requirepass), refused (down for good) and stalled (paused for good:
// connects complete, nothing is ever answered).
type conformanceHarness struct {
	w *world
}

const conformancePassword = "conformance-secret"

func newConformanceHarness(t *testing.T) *conformanceHarness {
	// The handshake deadline (command_timeout) must outlast WaitFor's bound, so that a stalled
	// handshake ends by cancellation in the suite's cancellation case.
	sc, err := scenario.Parse([]byte("name: conformance\nduration: 1000h\nclient: {command_timeout: 1h, connect_timeout: 1h}\n"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := sc.Resolve(1)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(rs, 1, RunOptions{})
	w.buildFaults()
	protected := newServer(w, scenario.NodeSpec{ID: "protected", Password: conformancePassword})
	refused := newServer(w, scenario.NodeSpec{ID: "refused"})
	refused.Kill()
	stalled := newServer(w, scenario.NodeSpec{ID: "stalled"})
	stalled.Pause()
	w.nodes = append(w.nodes, protected, refused, stalled)
	return &conformanceHarness{w: w}
}

func (h *conformanceHarness) Caps() enginetest.Caps {
	// The simulated node has no BLPOP; it runs single-threaded in virtual time.
	return enginetest.Caps{SingleThreaded: true, NoBlocking: true}
}

// passwordTransport opens simulated connections with its own handshake configuration.
type passwordTransport struct {
	w  *world
	hs wire.HandshakeConfig
}

func (p *passwordTransport) Open(ctx context.Context, req engine.OpenRequest) {
	p.w.tp.open(ctx, req, &p.hs)
}

func (h *conformanceHarness) Transport(_ testing.TB, password string) engine.Transport {
	return &passwordTransport{w: h.w, hs: wire.HandshakeConfig{Password: password}}
}

func (h *conformanceHarness) Endpoint(t testing.TB, kind enginetest.EndpointKind) engine.Endpoint {
	id := map[enginetest.EndpointKind]string{
		enginetest.Open: h.w.nodes[0].ID(), enginetest.Protected: "protected",
		enginetest.Refused: "refused", enginetest.Stalled: "stalled",
	}[kind]
	if id == "" {
		t.Fatalf("no endpoint of kind %v", kind)
	}
	return engine.Endpoint{Host: id, Port: scenario.NodePort}
}

func (h *conformanceHarness) Password() string { return conformancePassword }

// pump runs scheduler events (writing what each sent and failing cancelled attempts) until cond
// holds or the virtual bound passes.
func (h *conformanceHarness) pump(bound time.Duration, cond func() bool) bool {
	w := h.w
	deadline := w.k.now + bound
	for {
		w.flushAll()
		w.tp.sweep()
		w.flushAll()
		if cond != nil && cond() {
			return true
		}
		at, ok := w.k.next()
		if !ok || at > deadline {
			if w.k.now < deadline {
				w.k.now = deadline
			}
			return cond != nil && cond()
		}
		ev := w.k.pop()
		ev.act.Run(ev.arg)
	}
}

func (h *conformanceHarness) WaitFor(cond func() bool) bool { return h.pump(30*time.Second, cond) }

func (h *conformanceHarness) Settle() { h.pump(time.Second, nil) }

func (h *conformanceHarness) KillClients(testing.TB) {
	for _, c := range h.w.nodes[0].conns() {
		c.Reset("killed by the conformance harness")
	}
}

func (h *conformanceHarness) Clients(testing.TB) int {
	h.pump(0, nil)
	return len(h.w.nodes[0].Conns())
}
