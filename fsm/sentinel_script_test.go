package fsm

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSentinelScripts runs the narrative scripts of the Sentinel machines in testdata/sentinel,
// like TestScripts: a "config resolution ..." or "config monitor ..." line builds a fresh
// machine, each "> event" line is stepped into it, and the lines below are the expected effects.
// Run with -rewrite to regenerate the expectations after an intended change, then review the
// diff.
func TestSentinelScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/sentinel/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runSentinelScript(t, file) })
	}
}

func runSentinelScript(t *testing.T, file string) {
	var (
		machine Stepper
		out     Outbox
		at      time.Duration
	)
	runScriptFile(t, file, scriptDriver{
		config: func(line string) { machine, at = parseSentinelMachine(t, line), 0 },
		step: func(event string) []string {
			ev := parseSentinelEvent(t, event, &at)
			out.Reset()
			machine.Step(&ev, &out)
			return effectLines(&out)
		},
	})
}

// parseSentinelMachine builds the machine of a "config resolution ..." or "config monitor ..."
// line. Identifiers start at zero (IDBase 0) so that scripts read plain numbers.
func parseSentinelMachine(t *testing.T, line string) Stepper {
	fields := strings.Fields(line)
	var sentinels []Endpoint
	var policy *Policy
	name, waiters := "mymaster", 0
	for _, f := range fields[2:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "sentinels":
			sentinels = parseEndpoints(t, v)
		case "policy":
			policy = parsePolicy(t, v)
		case "name":
			name = v
		case "waiters":
			waiters = atoi(t, v)
		default:
			t.Fatalf("unknown config field %q", k)
		}
	}
	switch fields[1] {
	case "resolution":
		return NewResolution(ResolutionConfig{Sentinels: sentinels, Policy: policy, MaxWaiters: waiters})
	case "monitor":
		return NewMonitor(MonitorConfig{Sentinels: sentinels, PrimaryName: name, Policy: policy})
	}
	t.Fatalf("unknown machine %q", fields[1])
	return nil
}

func parseEndpoints(t *testing.T, v string) []Endpoint {
	var eps []Endpoint
	for _, s := range strings.Split(v, ",") {
		ep, err := ParseEndpoint(s)
		if err != nil {
			t.Fatalf("endpoint %q: %v", s, err)
		}
		eps = append(eps, ep)
	}
	return eps
}

var sentinelEventKinds = map[string]EventKind{"demand": Demanded, "withdraw": Withdrew,
	"dialed": DialSucceeded, "handshake": HandshakeDone, "dial-failed": DialFailed, "lost": ConnLost,
	"timer": TimerFired, "dispose": Disposed, "ack": Acked, "reject": Rejected, "answer": Answered,
	"notify": Notified, "published": Published, "primary-failed": PrimaryFailed,
	"rediscover": RediscoveryRequested}

var scriptQueries = map[string]SentinelQuery{"master": SentinelQueryPrimary,
	"addr": SentinelQueryPrimaryAddr, "sentinels": SentinelQueryPeers, "role": SentinelQueryRole}

var scriptMessages = map[string]MessageKind{"+switch-master": MessageSwitchPrimary,
	"+sdown": MessageSubjectivelyDown, "-sdown": MessageSubjectivelyUp,
	"+odown": MessageObjectivelyDown, "-odown": MessageObjectivelyUp}

var scriptInstances = map[string]InstanceKind{"master": InstancePrimary, "slave": InstanceReplica,
	"sentinel": InstanceSentinel}

var scriptTriggers = map[string]SentinelTrigger{"switch-master": TriggerSwitchPrimary,
	"sdown": TriggerSubjectivelyDown, "odown": TriggerObjectivelyDown, "monitor-gap": TriggerMonitorGap}

// parseSentinelEvent parses an event line: its kind, then key=value fields.
func parseSentinelEvent(t *testing.T, s string, at *time.Duration) Event {
	fields := strings.Fields(s)
	k, ok := sentinelEventKinds[fields[0]]
	if !ok {
		t.Fatalf("unknown event %q", fields[0])
	}
	ev := Event{Kind: k}
	var d SentinelData
	payload := false
	for _, f := range fields[1:] {
		key, v, _ := strings.Cut(f, "=")
		switch key {
		case "at":
			*at = dur(t, v)
		case "draw":
			ev.Draw = atof(t, v)
		case "waiter":
			ev.Waiter = WaiterID(atoi(t, v))
		case "conn":
			ev.Conn = ConnID(atoi(t, v))
		case "timer":
			ev.Timer = TimerID(atoi(t, v))
		case "err":
			ev.Err = errors.New(v)
		case "topic":
			ev.Topic = parseTopic(t, v)
		default:
			payload = true
			parseSentinelField(t, &d, key, v)
		}
	}
	if payload || k == Answered || k == Notified || k == Published || k == PrimaryFailed || k == RediscoveryRequested {
		ev.Sentinel = &d
	}
	ev.At = *at
	return ev
}

func parseSentinelField(t *testing.T, d *SentinelData, key, v string) {
	switch key {
	case "query":
		q, ok := scriptQueries[v]
		if !ok {
			t.Fatalf("unknown query %q", v)
		}
		d.Query = q
	case "primary":
		d.Primary = parseEndpoints(t, v)[0]
	case "epoch":
		d.Epoch, d.EpochKnown = uint64(atoi(t, v)), true
	case "role":
		switch v {
		case "primary":
			d.Role = RolePrimary
		case "replica":
			d.Role = RoleReplica
		case "sentinel":
			d.Role = RoleUnknown
		default:
			t.Fatalf("unknown role %q", v)
		}
	case "denied":
		d.Denied = true
	case "in-failover":
		d.InFailover = true
	case "peers", "sentinels":
		d.Peers = parseEndpoints(t, v)
	case "generation":
		d.Generation = uint64(atoi(t, v))
	case "trigger":
		d.Trigger = scriptTriggers[v]
	case "msg":
		d.Message.Kind = scriptMessages[v]
		if d.Message.Kind == MessageSwitchPrimary {
			d.Message.Instance = InstancePrimary
		}
	case "instance":
		d.Message.Instance = scriptInstances[v]
	case "name":
		d.Message.Primary = v
	case "addr":
		d.Message.Addr = parseEndpoints(t, v)[0]
	case "old":
		d.Message.Old = parseEndpoints(t, v)[0]
	default:
		t.Fatalf("unknown event field %q", key)
	}
}
