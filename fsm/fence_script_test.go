package fsm

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFenceScripts runs the narrative scripts of the fence machine in testdata/fence, like
// TestScripts: a "config fence ..." line builds a fresh machine, each "> event" line is stepped
// into it, and the lines below are the expected effects. Identifiers written "fence#N" are the
// machine's own (control connections and timers); plain numbers are command-slot connections.
// Run with -rewrite to regenerate the expectations after an intended change, then review the
// diff.
func TestFenceScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/fence/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runFenceScript(t, file) })
	}
}

func runFenceScript(t *testing.T, file string) {
	var (
		machine *Fence
		out     Outbox
		at      time.Duration
	)
	runScriptFile(t, file, scriptDriver{
		config: func(line string) { machine, at = parseFenceMachine(t, line), 0 },
		step: func(event string) []string {
			if event == "state" {
				return []string{machine.Describe()}
			}
			ev := parseFenceEvent(t, event, &at)
			out.Reset()
			machine.Step(&ev, &out)
			return effectLines(&out)
		},
	})
}

func parseFenceMachine(t *testing.T, line string) *Fence {
	cfg := FenceConfig{IDBase: IDBase(MachineFence)}
	for _, f := range strings.Fields(line)[2:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "kills":
			cfg.MaxKills = atoi(t, v)
		case "forgotten":
			cfg.MaxForgotten = atoi(t, v)
		default:
			t.Fatalf("unknown config field %q", k)
		}
	}
	return NewFence(cfg)
}

var fenceEventKinds = map[string]EventKind{"owe": Owed, "settle": Demanded, "withdraw": Withdrew,
	"dialed": DialSucceeded, "handshake": HandshakeDone, "dial-failed": DialFailed, "lost": ConnLost,
	"killed": Killed, "timer": TimerFired, "retire": Retired, "dispose": Disposed}

// fenceID parses "fence#N" as the fence machine's identifier N, and a plain number as itself.
func fenceID(t *testing.T, v string) uint64 {
	if n, ok := strings.CutPrefix(v, "fence#"); ok {
		return IDBase(MachineFence) + uint64(atoi(t, n))
	}
	return uint64(atoi(t, v))
}

// parseFenceEvent parses an event line: its kind, then key=value fields.
func parseFenceEvent(t *testing.T, s string, at *time.Duration) Event {
	fields := strings.Fields(s)
	k, ok := fenceEventKinds[fields[0]]
	if !ok {
		t.Fatalf("unknown event %q", fields[0])
	}
	ev := Event{Kind: k}
	if k == Demanded || k == Withdrew {
		ev.Machine = MachineFence
	}
	var d FenceData
	for _, f := range fields[1:] {
		key, v, _ := strings.Cut(f, "=")
		switch key {
		case "at":
			*at = dur(t, v)
		case "waiter":
			ev.Waiter = WaiterID(atoi(t, v))
		case "conn":
			ev.Conn = ConnID(fenceID(t, v))
		case "timer":
			ev.Timer = TimerID(fenceID(t, v))
		case "err":
			ev.Err = errors.New(v)
		case "class":
			if v == "permanent" {
				ev.Class = Permanent
			}
		case "id":
			d.ClientID = int64(atoi(t, v))
		case "peer":
			ep, err := ParseEndpoint(v)
			if err != nil {
				t.Fatalf("peer %q: %v", v, err)
			}
			d.Peer = ep
		default:
			t.Fatalf("unknown event field %q", key)
		}
	}
	if k == Owed {
		d.Owed = ev.Conn
		ev.Fence = &d
	}
	ev.At = *at
	return ev
}
