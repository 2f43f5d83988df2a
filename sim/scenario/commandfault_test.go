package scenario

import (
	"errors"
	"strings"
	"testing"
)

func TestCommandErrorLoaderErrors(t *testing.T) {
	const head = "name: x\nduration: 1m\nfaults:\n"
	cases := []struct{ name, fault, field, msg string }{
		{"no commands", "  - {at: 1s, command_error: {node: r1, reply: BUSY x}}\n", "faults[0].command_error.commands", "at least one"},
		{"bad command", "  - {at: 1s, command_error: {node: r1, commands: [\"CLIENT  SETINFO x\"], reply: BUSY x}}\n", "faults[0].command_error.commands[0]", "subcommand"},
		{"bad pattern", "  - {at: 1s, command_error: {node: r1, commands: [GET], keys: \"[\", reply: BUSY x}}\n", "faults[0].command_error.keys", "invalid pattern"},
		{"bad reply", "  - {at: 1s, command_error: {node: r1, commands: [GET], reply: busy}}\n", "faults[0].command_error.reply", "error reply"},
		{"unknown node", "  - {at: 1s, command_error: {node: r2, commands: [GET], reply: BUSY x}}\n", "faults[0].command_error.node", "unknown node"},
		{"slot target", "  - {at: 1s, command_error: {client_slot: 0, commands: [GET], reply: BUSY x}}\n", "faults[0].command_error.client_slot", "unknown field"},
		{"bad direction", "  - {at: 1s, blackhole: {node: r1, direction: sideways}}\n", "faults[0].blackhole.direction", "to_node"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(head + tc.fault))
			var se *Error
			if !errors.As(err, &se) || se.Field != tc.field || !strings.Contains(err.Error(), tc.msg) || se.Line != 4 {
				t.Fatalf("got %v, want %s: ...%s (line 4)", err, tc.field, tc.msg)
			}
		})
	}
}
