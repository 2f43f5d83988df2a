package config

import (
	"strconv"
	"time"

	"github.com/respire-go/respire/fsm"
)

// MaintMode is how every connection opts in to maintenance notifications
// (client.MaintenanceMode); its values are those of wire.MaintMode.
type MaintMode uint8

// Maintenance modes.
const (
	// MaintDisabled (the zero value): no maintenance handshake.
	MaintDisabled MaintMode = iota
	// MaintAuto: RESP3 connections send CLIENT MAINT_NOTIFICATIONS ON; an unknown-command error
	// turns the feature off for that connection.
	MaintAuto
	// MaintEnabled: RESP3 and the server's acknowledgement are required.
	MaintEnabled
)

// String returns "disabled", "auto" or "enabled": the words a scenario uses.
func (m MaintMode) String() string {
	switch m {
	case MaintDisabled:
		return "disabled"
	case MaintAuto:
		return "auto"
	case MaintEnabled:
		return "enabled"
	}
	return "maint(" + strconv.Itoa(int(m)) + ")"
}

// validateMaint checks the maintenance options; errors name the client's fields.
func validateMaint(o *Options) error {
	switch {
	case o.MaintenanceNotifications > MaintEnabled:
		return fieldErr("MaintenanceNotifications", "must be MaintenanceDisabled, MaintenanceAuto or MaintenanceEnabled")
	case o.MaintenanceNotifications == MaintEnabled && o.Protocol == ProtocolRESP2:
		return fieldErr("MaintenanceNotifications", "MaintenanceEnabled requires RESP3, but Protocol is ProtocolRESP2")
	}
	for _, f := range [...]struct {
		name string
		d    time.Duration
	}{{"MaintenanceRelaxedTimeout", o.MaintenanceRelaxedTimeout}, {"MaintenanceWindowTimeout", o.MaintenanceWindowTimeout}} {
		if f.d != 0 && (f.d < fsm.MinMaintTimeout || f.d > fsm.MaxMaintTimeout) {
			return fieldErr(f.name, "must be between 1ms and 24h")
		}
	}
	return nil
}
