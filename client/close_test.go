package client_test

import (
	"errors"
	"testing"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// TestCloseFailsInFlightCommandsWithErrClosed: commands that were sent when Close ran (on the
// shared connections and on a dedicated one) fail with an *UnknownOutcomeError that matches both
// ErrUnknownOutcome and ErrClosed. The server is paused so that the replies cannot arrive first.
// Close runs once the four GETs are on the wire (a recording dialer counts them): a fixed sleep
// stood for that before, and a goroutine of a loaded machine that had not written its GET by
// then failed as closed before sending, not as an unknown outcome.
func TestCloseFailsInFlightCommandsWithErrClosed(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	rec := &wireRecorder{}
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Connections: 2,
		CommandTimeout: client.NoTimeout, Dialer: rec.dial})
	if err != nil {
		t.Fatal(err)
	}
	// A dedicated connection is rented before the pause, so that its command is written too.
	d, err := c.Dedicated(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	defer srv.Resume()
	errs := make(chan error, 4)
	for i := 0; i < 3; i++ {
		go func() {
			_, _, err := c.Get(ctx, "in-flight")
			errs <- err
		}()
	}
	go func() {
		_, err := d.Do(ctx, "GET", "in-flight")
		errs <- err
	}()
	waitUntil(t, "the four GETs written", func() bool { return rec.writtenNamed("GET") == 4 })
	must(t, c.Close())
	for i := 0; i < 4; i++ {
		err := <-errs
		var ue *client.UnknownOutcomeError
		if !errors.As(err, &ue) || ue.Stage != client.StageAwaitingReply {
			t.Fatalf("in-flight command: %v, want an *UnknownOutcomeError at AwaitingReply", err)
		}
		if !errors.Is(err, client.ErrUnknownOutcome) || !errors.Is(err, client.ErrClosed) {
			t.Fatalf("in-flight command: %v matches ErrUnknownOutcome=%v ErrClosed=%v, want both", err,
				errors.Is(err, client.ErrUnknownOutcome), errors.Is(err, client.ErrClosed))
		}
	}
	// A connection failure is not a Close: it matches ErrUnknownOutcome only.
	srv.Resume()
	c2, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	go func() {
		_, err := c2.Do(ctx, "BLPOP", "never-pushed", "0")
		errs <- err
	}()
	// The kill must meet the BLPOP blocked on the server, not an idle connection before it.
	waitUntil(t, "the BLPOP blocked", func() bool { return containsField(srv.Do(t, "INFO", "clients"), "blocked_clients:1") })
	srv.Do(t, "CLIENT", "KILL", "TYPE", "normal")
	err = <-errs
	if !errors.Is(err, client.ErrUnknownOutcome) || errors.Is(err, client.ErrClosed) {
		t.Fatalf("killed connection: %v, want ErrUnknownOutcome and not ErrClosed", err)
	}
}
