package config

import (
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/wire"
)

// MaintMode is how every connection opts in to maintenance notifications
// (client.MaintenanceMode): the protocol layer's type (wire.MaintMode), whose String gives the
// words a scenario uses ("disabled", "auto", "enabled").
type MaintMode = wire.MaintMode

// Maintenance modes.
const (
	// MaintDisabled (the zero value): no maintenance handshake.
	MaintDisabled = wire.MaintDisabled
	// MaintAuto: RESP3 connections send CLIENT MAINT_NOTIFICATIONS ON; an unknown-command error
	// turns the feature off for that connection.
	MaintAuto = wire.MaintAuto
	// MaintEnabled: RESP3 and the server's acknowledgement are required.
	MaintEnabled = wire.MaintEnabled
)

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
