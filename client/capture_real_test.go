package client_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/redistest"
)

// Planted secrets and user data: none may appear in a capture.
const (
	capturePassword = "planted-pw-7d1c9e"
	captureKey      = "planted-key-41f0aa"
	captureValue    = "planted-value-93be27"
	captureChannel  = "planted-channel-5c88d2"
)

// replayCapture reads a dump and replays it, failing t on any divergence; it returns the file.
func replayCapture(t *testing.T, dump []byte) *engine.CaptureFile {
	t.Helper()
	for _, secret := range []string{capturePassword, captureKey, captureValue, captureChannel} {
		if bytes.Contains(dump, []byte(secret)) {
			t.Fatalf("the capture holds %q", secret)
		}
	}
	f, err := engine.ReadCapture(bytes.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	d, err := f.Replay(func(int, *fsm.Event, []fsm.Effect) { steps++ })
	if err != nil {
		t.Fatal(err)
	}
	if d != nil {
		t.Fatalf("the capture does not replay: %v\nexpected:\n%v\ngot:\n%v", d, d.Expected, d.Got)
	}
	if steps == 0 || steps != len(f.Steps) {
		t.Fatalf("replayed %d of %d steps", steps, len(f.Steps))
	}
	return f
}

// TestJournalCaptureOfRealRestartReplays kills and restarts a real server under a reconnect
// policy, dumps the client's journal capture (on demand and from the failure-burst trigger),
// and replays both with every effect matching, from a snapshot: the ring is small enough to
// wrap. The dumps hold no password, key, value or channel name.
func TestJournalCaptureOfRealRestartReplays(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{Password: capturePassword})
	var mu sync.Mutex
	var triggered [][]byte
	var reasons []string
	opts := client.Options{
		Endpoints:       []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}},
		Password:        capturePassword,
		Connections:     2,
		ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: 20 * time.Millisecond, BackoffMultiplier: 1, MaxDelay: 20 * time.Millisecond},
		JournalCapture: &client.JournalCaptureOptions{Size: 32, BurstFailures: 6, BurstWindow: time.Minute,
			OnDump: func(reason string, dump []byte) {
				mu.Lock()
				defer mu.Unlock()
				triggered = append(triggered, append([]byte(nil), dump...))
				reasons = append(reasons, reason)
			}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, captureKey, captureValue); err != nil {
		t.Fatal(err)
	}
	sub, err := c.Subscribe(ctx, captureChannel)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	srv.Kill()
	// Commands fail while the server is down (the kill loses the data too); the slots retry
	// every 20 ms.
	deadline := time.Now().Add(10 * time.Second)
	for c.IsConnected() && time.Now().Before(deadline) {
		_, _, _ = c.Get(ctx, captureKey)
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(400 * time.Millisecond)
	srv.Restart(t)
	for time.Now().Before(deadline) {
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		_, _, err := c.Get(cctx, captureKey)
		ccancel()
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, _, err := c.Get(ctx, captureKey); err != nil {
		t.Fatalf("the client did not recover: %v", err)
	}

	var buf bytes.Buffer
	if err := c.DumpJournal(&buf); err != nil {
		t.Fatal(err)
	}
	f := replayCapture(t, buf.Bytes())
	if !f.Header.Snapshot || f.Header.First == 0 {
		t.Fatalf("the ring of 32 did not wrap (first event %d): the test must replay a tail", f.Header.First)
	}
	if got := f.Header.Config.Endpoint; got.Host != "127.0.0.1" || got.Port != srv.Port() {
		t.Fatalf("the capture's endpoint is %+v", got)
	}
	if p := f.Header.Config.Policy; p == nil || p.InitialDelay != 20*time.Millisecond || f.Header.Config.Slots != 2 {
		t.Fatalf("the capture's configuration lacks the policy or the slots: %+v", f.Header.Config)
	}
	recovered := false
	for _, st := range f.Steps {
		if st.Event.Kind == fsm.HandshakeDone {
			recovered = true
		}
	}
	if !recovered {
		t.Fatal("the capture does not hold the recovery")
	}

	// The burst trigger fired while the server was down: its dump holds the failures.
	mu.Lock()
	defer mu.Unlock()
	if len(triggered) == 0 {
		t.Fatal("the failure-burst trigger took no dump")
	}
	if reasons[0] != "failure-burst" {
		t.Fatalf("trigger reasons %v", reasons)
	}
	tf := replayCapture(t, triggered[0])
	failures := 0
	for _, st := range tf.Steps {
		if st.Event.Kind == fsm.DialFailed || st.Event.Kind == fsm.ConnLost {
			failures++
		}
	}
	if failures < 6 {
		t.Fatalf("the triggered dump holds %d failures, want at least the burst's 6", failures)
	}
}

// TestJournalCaptureOptions: DumpJournal without a capture fails with ErrJournalCaptureOff, and
// out-of-bounds options are refused before anything is allocated.
func TestJournalCaptureOptions(t *testing.T) {
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.DumpJournal(&bytes.Buffer{}); !errors.Is(err, client.ErrJournalCaptureOff) {
		t.Fatalf("DumpJournal without a capture: %v", err)
	}
	for _, jc := range []client.JournalCaptureOptions{{Size: 8}, {Size: client.MaxJournalCaptureSize + 1}, {Size: -1},
		{BurstFailures: 1 << 20}, {BurstWindow: -time.Second}, {BurstWindow: 48 * time.Hour}} {
		_, err := client.Create(client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: 1}}, JournalCapture: &jc})
		var ce *client.ConfigError
		if !errors.As(err, &ce) || !strings.HasPrefix(ce.Option, "JournalCapture.") {
			t.Errorf("%+v: %v", jc, err)
		}
	}
}

// TestJournalCaptureTriggers: the exhaustion trigger dumps when the slots reach the policy's
// limit, and a predicate dumps on the observation it matches (here the same exhaustion, with the
// built-in triggers off). Each dump replays.
func TestJournalCaptureTriggers(t *testing.T) {
	for _, mode := range []string{"exhaustion", "predicate"} {
		t.Run(mode, func(t *testing.T) {
			srv := redistest.Start(t, redistest.Config{})
			dumps := make(chan string, 4)
			var data [][]byte
			var mu sync.Mutex
			jc := &client.JournalCaptureOptions{Size: 64, BurstFailures: -1, OnDump: func(reason string, dump []byte) {
				mu.Lock()
				data = append(data, append([]byte(nil), dump...))
				mu.Unlock()
				dumps <- reason
			}}
			if mode == "predicate" {
				jc.SkipExhaustion = true
				jc.Trigger = func(ch client.ConnectionStateChange) bool { return ch.Exhausted }
			}
			opts := client.Options{
				Endpoints:       []client.Endpoint{{Host: "127.0.0.1", Port: srv.Port()}},
				Connections:     1,
				ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: 10 * time.Millisecond, BackoffMultiplier: 1, MaxDelay: 10 * time.Millisecond, MaxAttempts: 2},
				JournalCapture:  jc,
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := client.Connect(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			srv.Kill()
			// Replacements are attempted on use: keep using the client until the dump comes.
		wait:
			for {
				select {
				case reason := <-dumps:
					if reason != mode {
						t.Fatalf("dump reason %q, want %q", reason, mode)
					}
					break wait
				case <-ctx.Done():
					t.Fatal("no dump after the slot exhausted")
				case <-time.After(5 * time.Millisecond):
					_, _, _ = c.Get(ctx, "k")
				}
			}
			mu.Lock()
			dump := data[0]
			mu.Unlock()
			f := replayCapture(t, dump)
			exhausted := false
			for _, st := range f.Steps {
				for _, e := range st.Effects {
					exhausted = exhausted || strings.Contains(e.Text, " exhausted")
				}
			}
			if !exhausted {
				t.Fatal("the dump does not hold the exhaustion")
			}
		})
	}
}
