package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// maintServer answers like Redis 7.0 (see redis70) and answers CLIENT MAINT_NOTIFICATIONS with
// maint; helloErr, when set, refuses HELLO.
func maintServer(maint resp.Value, helloErr string) func(string) resp.Value {
	return func(cmd string) resp.Value {
		switch {
		case strings.HasPrefix(cmd, "HELLO") && helloErr != "":
			return resp.ErrorValue(helloErr)
		case strings.HasPrefix(cmd, "CLIENT MAINT_NOTIFICATIONS"):
			return maint
		}
		return redis70(cmd)
	}
}

func hasMaint(batches [][]string) bool {
	for _, b := range batches {
		for _, c := range b {
			if c == "CLIENT MAINT_NOTIFICATIONS ON" {
				return true
			}
		}
	}
	return false
}

// TestHandshakeMaintenance covers the maintenance opt-in of each mode against each answer.
func TestHandshakeMaintenance(t *testing.T) {
	ok := resp.SimpleString("OK")
	unknown := resp.ErrorValue("ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.")
	for _, tc := range []struct {
		name      string
		cfg       HandshakeConfig
		server    func(string) resp.Value
		sent      bool
		enabled   bool
		failCmd   string // the rejected command, or "" for success
		protoFail bool
	}{
		{"disabled never asks", HandshakeConfig{}, maintServer(ok, ""), false, false, "", false},
		{"auto acknowledged", HandshakeConfig{Maintenance: MaintAuto}, maintServer(ok, ""), true, true, "", false},
		{"auto explicit RESP3", HandshakeConfig{Protocol: ProtocolRESP3, Maintenance: MaintAuto}, maintServer(ok, ""), true, true, "", false},
		{"auto unknown command turns it off", HandshakeConfig{Maintenance: MaintAuto}, maintServer(unknown, ""), true, false, "", false},
		{"auto unknown command, other wording", HandshakeConfig{Maintenance: MaintAuto},
			maintServer(resp.ErrorValue("ERR unknown command 'CLIENT|MAINT_NOTIFICATIONS'"), ""), true, false, "", false},
		{"auto other error fails", HandshakeConfig{Maintenance: MaintAuto},
			maintServer(resp.ErrorValue("NOPERM this user has no permissions to run the 'client|maint_notifications' command"), ""), true, false, maintCommand, false},
		{"auto ERR that is not unknown fails", HandshakeConfig{Maintenance: MaintAuto},
			maintServer(resp.ErrorValue("ERR syntax error"), ""), true, false, maintCommand, false},
		{"auto on RESP2 fallback does not ask", HandshakeConfig{Maintenance: MaintAuto},
			maintServer(ok, "ERR unknown command 'HELLO'"), false, false, "", false},
		{"auto with RESP2 does not ask", HandshakeConfig{Protocol: ProtocolRESP2, Maintenance: MaintAuto}, maintServer(ok, ""), false, false, "", false},
		{"enabled acknowledged", HandshakeConfig{Maintenance: MaintEnabled}, maintServer(ok, ""), true, true, "", false},
		{"enabled unknown command fails", HandshakeConfig{Maintenance: MaintEnabled}, maintServer(unknown, ""), true, false, maintCommand, false},
		{"enabled without RESP3 fails", HandshakeConfig{Maintenance: MaintEnabled},
			maintServer(ok, "NOPROTO unsupported protocol version"), false, false, "HELLO", false},
		{"malformed acknowledgement fails", HandshakeConfig{Maintenance: MaintAuto}, maintServer(resp.Int(1), ""), true, false, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHandshake(tc.cfg)
			batches, err := runHandshake(t, h, tc.server)
			if hasMaint(batches) != tc.sent {
				t.Fatalf("sent %v: batches %q", hasMaint(batches), batches)
			}
			switch {
			case tc.protoFail:
				var pe *resp.ProtocolError
				if !errors.As(err, &pe) {
					t.Fatalf("error %v, want a protocol error", err)
				}
				return
			case tc.failCmd != "":
				var he *HandshakeError
				if !errors.As(err, &he) || he.Command != tc.failCmd || he.Class() != fsm.Permanent {
					t.Fatalf("error %v, want a permanent rejection of %s", err, tc.failCmd)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if h.MaintEnabled() != tc.enabled {
				t.Fatalf("enabled %v, want %v", h.MaintEnabled(), tc.enabled)
			}
			if tc.cfg.Protocol == ProtocolRESP3 && len(batches) != 1 {
				t.Fatalf("explicit RESP3 should pipeline the opt-in with HELLO: %q", batches)
			}
		})
	}
}
