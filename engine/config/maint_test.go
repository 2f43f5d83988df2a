package config

import (
	"errors"
	"testing"
	"time"
)

// TestMaintBounds: the maintenance options are checked here, for the client and the simulator
// alike, and resolve to the relaxation bounds and the handshake's mode.
func TestMaintBounds(t *testing.T) {
	for name, tc := range map[string]struct {
		o     Options
		field string
	}{
		"unknown mode":       {Options{MaintenanceNotifications: 3}, "MaintenanceNotifications"},
		"enabled over RESP2": {Options{MaintenanceNotifications: MaintEnabled, Protocol: ProtocolRESP2}, "MaintenanceNotifications"},
		"relaxed below 1ms":  {Options{MaintenanceRelaxedTimeout: time.Microsecond}, "MaintenanceRelaxedTimeout"},
		"relaxed negative":   {Options{MaintenanceRelaxedTimeout: -time.Second}, "MaintenanceRelaxedTimeout"},
		"window above a day": {Options{MaintenanceWindowTimeout: 25 * time.Hour}, "MaintenanceWindowTimeout"},
		"window below 1ms":   {Options{MaintenanceWindowTimeout: time.Nanosecond}, "MaintenanceWindowTimeout"},
	} {
		var fe *FieldError
		if err := Validate(&tc.o); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: %v, want a *FieldError for %s", name, err, tc.field)
		}
	}
	r, err := Resolve(Options{MaintenanceNotifications: MaintAuto, MaintenanceRelaxedTimeout: time.Millisecond,
		MaintenanceWindowTimeout: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if r.Handshake.Maintenance != MaintAuto || r.Relaxation.RelaxedTimeout != time.Millisecond || r.Relaxation.WindowTimeout != 24*time.Hour {
		t.Fatalf("resolved %+v %+v", r.Handshake, r.Relaxation)
	}
	r, _ = Resolve(Options{})
	if r.Handshake.Maintenance != MaintDisabled || r.Relaxation.RelaxedTimeout != 30*time.Second || r.Relaxation.WindowTimeout != time.Minute {
		t.Fatalf("defaults %+v %+v", r.Handshake, r.Relaxation)
	}
}
