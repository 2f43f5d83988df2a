package engine

import (
	"testing"
	"time"
)

// TestDispatcherStopWaitsForTheCallbackInFlight: Stop from another goroutine returns only
// after the callback running at the time has returned, so no observation reaches an observer
// after the client's Close; Stop from inside the callback returns at once.
func TestDispatcherStopWaitsForTheCallbackInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var returned bool
	d := NewDispatcher(func(StateChange) {
		close(entered)
		<-release
		returned = true
	})
	d.Observe(StateChange{})
	<-entered
	stopped := make(chan struct{})
	go func() { d.Stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while the callback was still running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-stopped
	if !returned {
		t.Fatal("Stop returned before the callback did")
	}
}

func TestDispatcherStopFromTheCallback(t *testing.T) {
	var d *Dispatcher
	done := make(chan struct{})
	d = NewDispatcher(func(StateChange) {
		d.Stop() // an observer closing its client: must not wait for itself
		close(done)
	})
	d.Observe(StateChange{})
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop from the callback never returned")
	}
	<-d.Done()
}
