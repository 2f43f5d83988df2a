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
		{"slow without extra", "  - {at: 1s, slow_reply: {node: r1, commands: [GET]}}\n", "faults[0].slow_reply.extra", "positive"},
		{"slow without commands", "  - {at: 1s, slow_reply: {node: r1, extra: 1s}}\n", "faults[0].slow_reply.commands", "at least one"},
		{"slow too slow", "  - {at: 1s, slow_reply: {node: r1, commands: [GET], extra: 2h}}\n", "faults[0].slow_reply.extra", "at most 1h"},
		{"malformed bad pattern", "  - {at: 1s, malformed_reply: {node: r1, commands: [GET], keys: \"[\"}}\n", "faults[0].malformed_reply.keys", "invalid pattern"},
		{"malformed unknown node", "  - {at: 1s, malformed_reply: {node: x, commands: [GET]}}\n", "faults[0].malformed_reply.node", "unknown node"},
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

func TestWindowExpectErrors(t *testing.T) {
	const head = "name: x\nduration: 1m\nexpect:\n"
	cases := []struct{ name, expect, field, msg string }{
		{"fixed window", "  during: [{window: 5s, outcomes: {ok: {min: 1}}}]\n", "expect.during[0].window", "range from..to"},
		{"window after end", "  during: [{window: 2m..3m, outcomes: {ok: {min: 1}}}]\n", "expect.during[0].window", "before the end"},
		{"empty window", "  during: [{window: 1s..2s}]\n", "expect.during[0]", "needs outcomes or dials"},
		{"bad bounds", "  during: [{window: 1s..2s, outcomes: {ok: {min: 3, max: 1}}}]\n", "expect.during[0].outcomes.ok.max", "below min"},
		{"unknown dial node", "  during: [{window: 1s..2s, dials: [{node: r9, max: 1}]}]\n", "expect.during[0].dials[0].node", "unknown node"},
		{"dials without bound", "  during: [{window: 1s..2s, dials: [{node: r1}]}]\n", "expect.during[0].dials[0]", "min or max"},
		{"rate without per", "  dial_rate: [{node: r1, max: 3}]\n", "expect.dial_rate[0].per", "positive"},
		{"negative rate", "  dial_rate: [{max: -1, per: 1s}]\n", "expect.dial_rate[0].max", "negative"},
		{"connect not failing", "  connect: {fails: false}\n", "expect.connect.fails", "must be true"},
		{"rate unknown node", "  dial_rate: [{node: x, max: 1, per: 1s}]\n", "expect.dial_rate[0].node", "unknown node"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(head + tc.expect))
			var se *Error
			if !errors.As(err, &se) || se.Field != tc.field || !strings.Contains(err.Error(), tc.msg) || se.Line != 4 {
				t.Fatalf("got %v, want %s: ...%s (line 4)", err, tc.field, tc.msg)
			}
		})
	}
}

func TestConnectExpectLazy(t *testing.T) {
	_, err := Parse([]byte("name: x\nduration: 1m\nclient: {connect: lazy}\nexpect:\n  connect: {fails: true}\n"))
	var se *Error
	if !errors.As(err, &se) || se.Field != "expect.connect" || !strings.Contains(err.Error(), "eager") || se.Line != 5 {
		t.Fatalf("got %v", err)
	}
}
