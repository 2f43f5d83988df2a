package netio

import (
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
)

// redacted replaces a secret wherever respire prints a configuration or an error.
const redacted = "[redacted]"

// String describes the configuration without its password: "protocol=auto user=default
// password=[redacted] db=0 name=app lib=respire/1.0". An empty password prints as "none".
func (c HandshakeConfig) String() string {
	var b strings.Builder
	b.WriteString("protocol=")
	b.WriteString(c.Protocol.String())
	if c.Username != "" {
		b.WriteString(" user=")
		b.WriteString(c.Username)
	}
	b.WriteString(" password=")
	if c.Password != "" {
		b.WriteString(redacted)
	} else {
		b.WriteString("none")
	}
	b.WriteString(" db=")
	b.WriteString(strconv.Itoa(c.Database))
	if c.ClientName != "" {
		b.WriteString(" name=")
		b.WriteString(c.ClientName)
	}
	if c.LibraryName != "" {
		b.WriteString(" lib=")
		b.WriteString(c.LibraryName)
		if c.LibraryVersion != "" {
			b.WriteByte('/')
			b.WriteString(c.LibraryVersion)
		}
	}
	return b.String()
}

// GoString makes %#v print the redacted form too.
func (c HandshakeConfig) GoString() string { return "netio.HandshakeConfig{" + c.String() + "}" }

// LogValue makes log/slog print the redacted form with every handler.
func (c HandshakeConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

// MarshalJSON encodes the configuration with its password redacted, so that a configuration dumped
// as JSON (a debug endpoint, a JSON log handler) never reveals it.
func (c HandshakeConfig) MarshalJSON() ([]byte, error) {
	password := ""
	if c.Password != "" {
		password = redacted
	}
	return json.Marshal(struct {
		Protocol       string `json:"protocol"`
		Username       string `json:"username,omitempty"`
		Password       string `json:"password,omitempty"`
		Database       int    `json:"database"`
		ClientName     string `json:"clientName,omitempty"`
		LibraryName    string `json:"libraryName,omitempty"`
		LibraryVersion string `json:"libraryVersion,omitempty"`
	}{c.Protocol.String(), c.Username, password, c.Database, c.ClientName, c.LibraryName, c.LibraryVersion})
}
