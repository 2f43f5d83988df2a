package client

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
)

// TestLifecycleEnumsMatch: every enumeration client converts from the machines by a plain
// conversion numbers its values as the machines do (its String is the machines' name of the
// same value). A constant added or renumbered on one side only fails here.
func TestLifecycleEnumsMatch(t *testing.T) {
	pairs := []struct {
		client, machine uint8
	}{
		{uint8(SourceUnspecified), uint8(fsm.SourceUnspecified)}, {uint8(SourceCommand), uint8(fsm.SourceCommand)},
		{uint8(SourceDedicated), uint8(fsm.SourceDedicated)}, {uint8(SourcePubSub), uint8(fsm.SourcePubSub)},
		{uint8(SourceClusterDiscovery), uint8(fsm.SourceClusterDiscovery)},
		{uint8(ScopeNone), uint8(fsm.ScopeNone)}, {uint8(ScopeClusterDiscovery), uint8(fsm.ScopeClusterDiscovery)},
		{uint8(ScopeSentinelDiscovery), uint8(fsm.ScopeSentinelDiscovery)},
		{uint8(ScopeSentinelMonitor), uint8(fsm.ScopeSentinelMonitor)},
		{uint8(SourceStateUnknown), uint8(fsm.SourceStateUnknown)}, {uint8(SourceConnecting), uint8(fsm.SourceConnecting)},
		{uint8(SourceConnected), uint8(fsm.SourceConnected)}, {uint8(SourceDisconnected), uint8(fsm.SourceDisconnected)},
		{uint8(EndpointDisconnected), uint8(fsm.EndpointDisconnected)}, {uint8(EndpointConnected), uint8(fsm.EndpointConnected)},
		{uint8(RecycleNone), uint8(fsm.RecycleNone)}, {uint8(RecyclePublished), uint8(fsm.RecyclePublished)},
		{uint8(RecycleRetrying), uint8(fsm.RecycleRetrying)},
		{uint8(EndUnsubscribed), uint8(fsm.EndUnsubscribed)}, {uint8(EndClosed), uint8(fsm.EndClosed)},
		{uint8(EndReconnectExhausted), uint8(fsm.EndReconnectExhausted)}, {uint8(EndRejected), uint8(fsm.EndRejected)},
	}
	for i, p := range pairs {
		if p.client != p.machine {
			t.Errorf("pair %d: client's constant is %d, the machines' %d", i, p.client, p.machine)
		}
	}
}

// sampleChange is an observation whose every field differs from its zero value.
func sampleChange() engine.StateChange {
	return engine.StateChange{
		Endpoint: engine.Endpoint{Host: "10.0.0.7", Port: 6380},
		Lifecycle: fsm.Lifecycle{
			State: fsm.EndpointConnected, Source: fsm.SourcePubSub, Scope: fsm.ScopeSentinelMonitor,
			SourceState: fsm.SourceDisconnected, Slot: 3, Attempt: 2, NextDelay: 1500 * time.Millisecond,
			Scheduled: true, Exhausted: true, Episode: 9, Err: errors.New("refused"), Recycle: fsm.RecycleRetrying,
		},
	}
}

// TestStateChangeConversion: the conversion carries every field of the machines' observation,
// and back; a field added to fsm.Lifecycle fails here until ConnectionStateChange carries it.
func TestStateChangeConversion(t *testing.T) {
	in := sampleChange()
	lv := reflect.ValueOf(in.Lifecycle)
	for i := 0; i < lv.NumField(); i++ {
		if lv.Field(i).IsZero() {
			t.Fatalf("the sample leaves fsm.Lifecycle.%s zero: set it, and carry it in ConnectionStateChange", lv.Type().Field(i).Name)
		}
	}
	if got, want := reflect.TypeFor[ConnectionStateChange]().NumField(), lv.NumField()+1; got != want {
		t.Fatalf("ConnectionStateChange has %d fields, want %d (fsm.Lifecycle's and Endpoint)", got, want)
	}
	ch := stateChangeOf(in)
	want := ConnectionStateChange{
		Endpoint: Endpoint{Host: "10.0.0.7", Port: 6380}, State: EndpointConnected, Source: SourcePubSub,
		Scope: ScopeSentinelMonitor, SourceState: SourceDisconnected, Slot: 3, Attempt: 2,
		NextDelay: 1500 * time.Millisecond, Scheduled: true, Exhausted: true, Episode: 9, Err: in.Err,
		Recycle: RecycleRetrying,
	}
	if ch != want {
		t.Fatalf("converted to %+v\nwant %+v", ch, want)
	}
	if back := ch.lifecycle(); back != in.Lifecycle {
		t.Fatalf("converted back to %+v\nwant %+v", back, in.Lifecycle)
	}
	if n := testing.AllocsPerRun(100, func() { ch = stateChangeOf(in) }); n != 0 {
		t.Fatalf("the conversion allocates %v times", n)
	}
}

// TestStateChangeString: String prints the endpoint and the traces' form of the observation.
func TestStateChangeString(t *testing.T) {
	got := stateChangeOf(sampleChange()).String()
	want := `10.0.0.7:6380: lifecycle source=pubsub scope=sentinel-monitor state=disconnected endpoint=connected slot=3 attempt=2 delay=1.5s exhausted recycle=retrying retry-delay=1.5s episode=9 err="refused"`
	if got != want {
		t.Fatalf("String() = %s\nwant        %s", got, want)
	}
	unix := ConnectionStateChange{Endpoint: Endpoint{Host: "/run/redis.sock"}, Source: SourceCommand, SourceState: SourceConnected, State: EndpointConnected}
	if got := unix.String(); !strings.HasPrefix(got, "/run/redis.sock: lifecycle source=command state=connected endpoint=connected slot=0") {
		t.Fatalf("String() = %s", got)
	}
}

// TestReconnectPolicyMethods: Validate names the field in a *ConfigError, and Delay and String
// are the machines' arithmetic.
func TestReconnectPolicyMethods(t *testing.T) {
	for _, c := range []struct {
		p      *ReconnectPolicy
		option string
	}{
		{nil, ""},
		{&ReconnectPolicy{}, ""},
		{&ReconnectPolicy{InitialDelay: time.Second, MaxDelay: MaxReconnectDelay, MaxAttempts: 3}, ""},
		{&ReconnectPolicy{JitterRatio: 1.5}, "ReconnectPolicy.JitterRatio"},
		{&ReconnectPolicy{BackoffMultiplier: math.NaN()}, "ReconnectPolicy.BackoffMultiplier"},
		{&ReconnectPolicy{InitialDelay: 2 * time.Second, MaxDelay: time.Second}, "ReconnectPolicy.MaxDelay"},
		{&ReconnectPolicy{MaxDelay: MaxReconnectDelay + 1}, "ReconnectPolicy.MaxDelay"},
		{&ReconnectPolicy{MaxAttempts: -1}, "ReconnectPolicy.MaxAttempts"},
	} {
		err := c.p.Validate()
		var ce *ConfigError
		switch {
		case c.option == "" && err != nil:
			t.Errorf("%v: %v", c.p, err)
		case c.option != "" && (!errors.As(err, &ce) || ce.Option != c.option):
			t.Errorf("%v: got %v, want a *ConfigError for %s", c.p, err, c.option)
		}
		if c.option != "" {
			o := Options{Endpoints: []Endpoint{{Host: "cache", Port: 6379}}, ReconnectPolicy: c.p}
			if oerr := o.Validate(); oerr == nil || oerr.Error() != err.Error() {
				t.Errorf("%v: Options.Validate says %v, the policy %v", c.p, oerr, err)
			}
		}
	}
	p := &ReconnectPolicy{InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second, JitterRatio: 0.5}
	if d := p.Delay(1, 0.5); d != 100*time.Millisecond {
		t.Errorf("Delay(1, 0.5) = %v", d)
	}
	if d := p.Delay(3, 0); d != 200*time.Millisecond {
		t.Errorf("Delay(3, 0) = %v, want the band's bottom, 400ms × 0.5", d)
	}
	if d := p.Delay(10, math.NaN()); d != 500*time.Millisecond {
		t.Errorf("Delay(10, NaN) = %v, want the capped delay's bottom", d)
	}
	if got := p.String(); got != "policy(initial=100ms multiplier=2 max=1s jitter=0.5 attempts=unlimited)" {
		t.Errorf("String() = %s", got)
	}
	if got := (*ReconnectPolicy)(nil).String(); got != "policy(none)" {
		t.Errorf("nil String() = %s", got)
	}
}
