package scenario

import "github.com/respire-go/respire/engine/config"

// Maintenance modes of Client.MaintenanceNotifications: the words of config.MaintMode.
const (
	// MaintDisabled sends no maintenance handshake (the default).
	MaintDisabled = "disabled"
	// MaintAuto asks on RESP3 connections and carries on without notices when the node does not
	// know the command.
	MaintAuto = "auto"
	// MaintEnabled requires RESP3 and the node's acknowledgement.
	MaintEnabled = "enabled"
)

// maintOptions copies the maintenance options of the client section into the resolver's
// options. An unknown mode word becomes an invalid mode, which the resolver rejects with the
// client's reason.
func (c *Client) maintOptions(o *config.Options) {
	switch c.MaintenanceNotifications {
	case "", MaintDisabled:
		o.MaintenanceNotifications = config.MaintDisabled
	case MaintAuto:
		o.MaintenanceNotifications = config.MaintAuto
	case MaintEnabled:
		o.MaintenanceNotifications = config.MaintEnabled
	default:
		o.MaintenanceNotifications = config.MaintEnabled + 1
	}
	o.MaintenanceRelaxedTimeout, o.MaintenanceWindowTimeout = c.MaintenanceRelaxedTimeout, c.MaintenanceWindowTimeout
}

// setMaintOptions writes the resolved maintenance options back (the inverse of maintOptions).
func (c *Client) setMaintOptions(o *config.Options) {
	c.MaintenanceNotifications = o.MaintenanceNotifications.String()
	c.MaintenanceRelaxedTimeout, c.MaintenanceWindowTimeout = o.MaintenanceRelaxedTimeout, o.MaintenanceWindowTimeout
}
