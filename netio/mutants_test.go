package netio_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/engine/enginetest"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio"
)

// The conformance suite must catch broken transports, not just pass working ones. Each mutant
// below wraps netio with one contract violation; TestConformanceCatchesMutants runs the suite case
// that should notice it in a subprocess and expects that case to fail. The "identity" wrapper, which
// changes nothing, must pass every case: it shows the wrappers themselves are faithful.

const mutantEnv = "RESPIRE_ENGINETEST_MUTANT"

// mutants maps each mutant to the suite case that must fail because of it.
var mutants = []struct{ name, failingCase string }{
	{"lost-on-close", "CloseCompletesPendingWithoutLost"},
	{"reorder-sends", "PipelinedFIFO"},
	{"all-failures-transient", "WrongPasswordFailsPermanent"},
	{"rejected-as-written", "SendAfterClose"},
	{"ignore-cancel", "CancelBeforeOpen"},
	{"lost-twice", "ServerKillReportsLostOnce"},
	{"drain-as-close", "DrainCompletesPendingThenCloses"},
	{"offer-ignores-drain", "OfferRefusedWhileDrainingThenStopped"},
}

func TestConformanceCatchesMutants(t *testing.T) {
	if os.Getenv(mutantEnv) != "" {
		return // inside a mutant subprocess: only TestMutantConformance runs there
	}
	run := func(mutant, pattern string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMutantConformance$/"+pattern, "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), mutantEnv+"="+mutant)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Run("identity", func(t *testing.T) {
		out, err := run("identity", "")
		if err != nil || !strings.Contains(out, "--- PASS: TestMutantConformance") {
			t.Fatalf("the faithful wrapper fails the suite (%v):\n%s", err, out)
		}
	})
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			out, err := run(m.name, "^"+m.failingCase+"$")
			if err == nil || !strings.Contains(out, "--- FAIL: TestMutantConformance/"+m.failingCase) {
				t.Fatalf("mutant %s survived case %s (%v):\n%s", m.name, m.failingCase, err, out)
			}
		})
	}
}

// TestMutantConformance runs the suite against the mutant named by the environment; it is a
// helper of TestConformanceCatchesMutants.
func TestMutantConformance(t *testing.T) {
	mutant := os.Getenv(mutantEnv)
	if mutant == "" {
		// Not a subprocess of TestConformanceCatchesMutants: nothing to do here. (Returning
		// rather than skipping keeps "no skips with CI=true" literally true.)
		return
	}
	enginetest.Run(t, &mutantHarness{redisHarness: newRedisHarness(t), mutant: mutant})
}

// mutantHarness serves transports wrapped with the mutant.
type mutantHarness struct {
	*redisHarness
	mutant string
}

func (h *mutantHarness) Transport(t testing.TB, password string) engine.Transport {
	return &mutantTransport{inner: h.redisHarness.Transport(t, password), mutant: h.mutant}
}

type mutantTransport struct {
	inner  engine.Transport
	mutant string
}

func (m *mutantTransport) Open(ctx context.Context, req engine.OpenRequest) {
	if m.mutant == "ignore-cancel" {
		ctx = context.Background()
	}
	req.Sink = &mutantSink{inner: req.Sink, mutant: m.mutant}
	m.inner.Open(ctx, req)
}

type mutantSink struct {
	inner  engine.Sink
	mutant string
}

func (s *mutantSink) Dialed(id fsm.ConnID) { s.inner.Dialed(id) }
func (s *mutantSink) Ready(id fsm.ConnID, c engine.Conn) {
	s.inner.Ready(id, &mutantConn{inner: c, sink: s.inner, id: id, mutant: s.mutant})
}
func (s *mutantSink) Failed(id fsm.ConnID, err error, class fsm.FailureClass) {
	if s.mutant == "all-failures-transient" {
		class = fsm.Transient
	}
	s.inner.Failed(id, err, class)
}
func (s *mutantSink) Lost(id fsm.ConnID, err error) {
	s.inner.Lost(id, err)
	if s.mutant == "lost-twice" {
		s.inner.Lost(id, err)
	}
}

type mutantConn struct {
	inner  engine.Conn
	sink   engine.Sink
	id     fsm.ConnID
	mutant string

	mu      sync.Mutex
	closed  bool
	pending *engine.Command // reorder-sends: held until the next Send
}

func (c *mutantConn) Send(cmd *engine.Command) {
	c.mu.Lock()
	closed := c.closed
	if c.mutant == "reorder-sends" && cmd.Name == "INCR" {
		if c.pending == nil {
			c.pending = cmd
			c.mu.Unlock()
			// Never strand a command: send it alone if no partner comes soon.
			time.AfterFunc(5*time.Millisecond, func() {
				c.mu.Lock()
				held := c.pending
				c.pending = nil
				c.mu.Unlock()
				if held != nil {
					c.inner.Send(held)
				}
			})
			return
		}
		held := c.pending
		c.pending = nil
		c.mu.Unlock()
		c.inner.Send(cmd)
		c.inner.Send(held)
		return
	}
	c.mu.Unlock()
	if closed && c.mutant == "rejected-as-written" {
		cmd.Writing()
	}
	c.inner.Send(cmd)
}

// Offer delegates to the wrapped connection; the offer-ignores-drain mutant sends instead, as a
// transport without Offer would, so that a draining connection fails the command.
func (c *mutantConn) Offer(cmd *engine.Command) bool {
	if c.mutant == "offer-ignores-drain" {
		c.Send(cmd)
		return true
	}
	return c.inner.(engine.Offerer).Offer(cmd)
}

// Stopped delegates to the wrapped connection.
func (c *mutantConn) Stopped() bool { return c.inner.(engine.Stopper).Stopped() }

func (c *mutantConn) Drain() {
	if c.mutant == "drain-as-close" {
		c.inner.Close()
		return
	}
	c.inner.Drain()
}

func (c *mutantConn) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.inner.Close()
	if c.mutant == "lost-on-close" {
		c.sink.Lost(c.id, netio.ErrClosed)
	}
}
