package config

import (
	"fmt"
	"strconv"
	"strings"
)

// redacted stands for a secret wherever a value holding one is printed.
const redacted = "[redacted]"

// Options and Resolved hold a password: every fmt verb prints their redacted description
// (Handshake, wire.HandshakeConfig, redacts itself).
var (
	_ fmt.Formatter = Options{}
	_ fmt.Formatter = Handshake{}
	_ fmt.Formatter = Resolved{}
)

// String describes o with its password redacted.
func (o Options) String() string {
	var b strings.Builder
	b.WriteString("config.Options{connections=")
	b.WriteString(strconv.Itoa(o.Connections))
	b.WriteString(" connect_timeout=")
	b.WriteString(o.ConnectTimeout.String())
	b.WriteString(" command_timeout=")
	b.WriteString(o.CommandTimeout.String())
	b.WriteString(" ")
	writeIdentity(&b, o.Protocol, o.Username, o.Password, o.Database, o.ClientName)
	b.WriteString(" library_name=")
	b.WriteString(strconv.Quote(o.LibraryName))
	if o.DisableLibraryInfo {
		b.WriteString(" disable_library_info")
	}
	b.WriteString(" policy=")
	b.WriteString(o.ReconnectPolicy.String())
	fmt.Fprintf(&b, " idle_read=%v write_stall=%v lifetime=%v lifetime_jitter=%v",
		o.ConnectionIdleReadTimeout, o.GatheredWriteStallTimeout, o.ConnectionMaxLifetime, o.ConnectionMaxLifetimeJitter)
	p := o.DedicatedPool
	fmt.Fprintf(&b, " pool={min=%d max=%d idle=%d idle_timeout=%v} max_waiters=%d",
		p.MinimumSize, p.MaximumSize, p.MaximumIdle, p.IdleTimeout, o.MaxWaiters)
	fmt.Fprintf(&b, " maint=%v relaxed=%v window=%v}", o.MaintenanceNotifications, o.MaintenanceRelaxedTimeout, o.MaintenanceWindowTimeout)
	return b.String()
}

// GoString makes %#v print the redacted description too.
func (o Options) GoString() string { return o.String() }

// Format makes every verb print the redacted description.
func (o Options) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(o.String())) }

// String describes r with its password redacted.
func (r Resolved) String() string {
	return "config.Resolved{" + r.Options.String() + " handshake={" + r.Handshake.String() + "}" +
		" idle_read=" + r.IdleReadTimeout.String() + " write_stall=" + r.WriteStallTimeout.String() + "}"
}

// GoString makes %#v print the redacted description too.
func (r Resolved) GoString() string { return r.String() }

// Format makes every verb print the redacted description.
func (r Resolved) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(r.String())) }

func writeIdentity(b *strings.Builder, p Protocol, user, password string, db int, name string) {
	b.WriteString("protocol=")
	b.WriteString(p.String())
	if user != "" {
		b.WriteString(" username=")
		b.WriteString(strconv.Quote(user))
	}
	b.WriteString(" password=")
	if password != "" {
		b.WriteString(redacted)
	} else {
		b.WriteString("none")
	}
	b.WriteString(" database=")
	b.WriteString(strconv.Itoa(db))
	if name != "" {
		b.WriteString(" client_name=")
		b.WriteString(strconv.Quote(name))
	}
}
