package fsm

import (
	"errors"
	"flag"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected effects in testdata/*.txt")

// TestScripts runs the narrative scripts in testdata: each "> event" line is stepped into a fresh
// machine built by the script's "config" line, and the lines below it are the expected effects.
// Run with -rewrite to regenerate the expectations after an intended change, then review the diff.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runScript(t, file) })
	}
}

func runScript(t *testing.T, file string) {
	var (
		mux Stepper
		out Outbox
		at  time.Duration
	)
	runScriptFile(t, file, scriptDriver{
		config: func(line string) { mux, at = parseMachine(t, line), 0 },
		step: func(event string) []string {
			ev := parseEvent(t, event, &at)
			out.Reset()
			mux.Step(&ev, &out)
			return effectLines(&out)
		},
	})
}

// parseMachine builds the machine a config line names: "config pool ...", "config pubsub ...",
// "config sharded ..." or "config slots=..." (the command-slot machine).
func parseMachine(t *testing.T, line string) Stepper {
	fields := strings.Fields(line)
	switch fields[1] {
	case "pool":
		cfg := PoolConfig{MaximumIdle: 4}
		for _, f := range fields[2:] {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "policy":
				cfg.Policy = parsePolicy(t, v)
			case "min":
				cfg.MinimumSize = atoi(t, v)
			case "max":
				cfg.MaximumSize = atoi(t, v)
			case "idle":
				cfg.MaximumIdle = atoi(t, v)
			case "idletimeout":
				cfg.IdleTimeout = dur(t, v)
			case "lifetime":
				cfg.Lifetime = dur(t, v)
			case "lifetime-jitter":
				cfg.LifetimeJitter = dur(t, v)
			default:
				t.Fatalf("unknown pool field %q", k)
			}
		}
		return NewPool(cfg)
	case "cluster":
		return NewCluster(parseClusterConfig(t, fields[2:]))
	case "pubsub", "sharded":
		cfg := EpisodeConfig{Machine: MachinePubSub}
		if fields[1] == "sharded" {
			cfg.Machine = MachineShardedPubSub
		}
		for _, f := range fields[2:] {
			k, v, _ := strings.Cut(f, "=")
			if k != "policy" {
				t.Fatalf("unknown episode field %q", k)
			}
			cfg.Policy = parsePolicy(t, v)
		}
		return NewEpisode(cfg)
	}
	return NewMux(parseConfig(t, line))
}

func parsePolicy(t *testing.T, v string) *Policy {
	p := &Policy{}
	for _, kv := range strings.Split(v, ",") {
		pk, pv, _ := strings.Cut(kv, ":")
		switch pk {
		case "initial":
			p.InitialDelay = dur(t, pv)
		case "mult":
			p.BackoffMultiplier = atof(t, pv)
		case "max":
			p.MaxDelay = dur(t, pv)
		case "jitter":
			p.JitterRatio = atof(t, pv)
		case "attempts":
			p.MaxAttempts = atoi(t, pv)
		default:
			t.Fatalf("unknown policy field %q", pk)
		}
	}
	return p
}

func parseConfig(t *testing.T, line string) MuxConfig {
	cfg := MuxConfig{Slots: 1}
	for _, f := range strings.Fields(line)[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "slots":
			cfg.Slots = atoi(t, v)
		case "policy":
			cfg.Policy = parsePolicy(t, v)
		case "waiters":
			cfg.MaxWaiters = atoi(t, v)
		case "lifetime":
			cfg.Lifetime = dur(t, v)
		case "lifetime-jitter":
			cfg.LifetimeJitter = dur(t, v)
		default:
			t.Fatalf("unknown config field %q", k)
		}
	}
	return cfg
}

func parseEvent(t *testing.T, s string, at *time.Duration) Event {
	fields := strings.Fields(s)
	ev := Event{}
	kinds := map[string]EventKind{"demand": Demanded, "notice": Noticed, "withdraw": Withdrew,
		"dialed": DialSucceeded, "handshake": HandshakeDone, "dial-failed": DialFailed,
		"lost": ConnLost, "timer": TimerFired, "retire": Retired, "dispose": Disposed,
		"return": Returned, "ack": Acked, "reject": Rejected, "unsubscribe": Unsubscribed,
		"replied": Replied, "query-failed": QueryFailed, "moved": Moved, "moving": MovingNoticed,
		"slots-migrated": SlotsMigrated}
	k, ok := kinds[fields[0]]
	if !ok {
		t.Fatalf("unknown event %q", fields[0])
	}
	ev.Kind = k
	for _, f := range fields[1:] {
		key, v, _ := strings.Cut(f, "=")
		switch key {
		case "at":
			*at = dur(t, v)
		case "draw":
			ev.Draw = atof(t, v)
		case "waiter":
			ev.Waiter = WaiterID(atoi(t, v))
		case "need":
			switch v {
			case "all":
				ev.Need = NeedAll
			case "topology":
				ev.Need = NeedTopology
			}
		case "slot":
			if v == "any" {
				ev.Slot = -1
			} else {
				ev.Slot = atoi(t, v)
			}
		case "conn":
			ev.Conn = ConnID(parseID(t, v))
		case "timer":
			ev.Timer = TimerID(parseID(t, v))
		case "query":
			ev.Waiter = WaiterID(parseID(t, v))
		case "machine":
			ev.Machine = parseMachineName(t, v)
		case "node":
			ev.Node = uint32(atoi(t, v))
		case "endpoint", "to", "from":
			ev.Endpoint = parseEndpointArg(t, v)
		case "reply":
			ev.Reply = parseReply(t, v)
		case "grace":
			ev.Grace = dur(t, v)
		case "err":
			ev.Err = errors.New(v)
		case "permanent":
			ev.Class = Permanent
		case "healthy":
			ev.Healthy = true
		case "topic":
			ev.Topic = parseTopic(t, v)
		case "topics":
			for _, s := range strings.Split(v, ",") {
				ev.Topics = append(ev.Topics, parseTopic(t, s))
			}
		default:
			t.Fatalf("unknown event field %q", key)
		}
	}
	ev.At = *at
	return ev
}

func parseTopic(t *testing.T, s string) Topic {
	kind, name, _ := strings.Cut(s, ":")
	switch kind {
	case "channel":
		return Topic{Kind: TopicChannel, Name: name}
	case "pattern":
		return Topic{Kind: TopicPattern, Name: name}
	case "shard":
		return Topic{Kind: TopicShard, Name: name}
	}
	t.Fatalf("bad topic %q", s)
	return Topic{}
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func atof(t *testing.T, s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func dur(t *testing.T, s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
