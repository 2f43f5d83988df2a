package fsm

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRouterScripts runs the narrative scripts of the read router in testdata/replica, like
// TestScripts: a "config router ..." line builds a fresh router, each "> event" line is stepped
// into it, and the lines below are the expected effects. Run with -rewrite to regenerate the
// expectations after an intended change, then review the diff.
func TestRouterScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/replica/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runRouterScript(t, file) })
	}
}

func runRouterScript(t *testing.T, file string) {
	var (
		router *Router
		out    RouterOutbox
		ev     RouterEvent
	)
	runScriptFile(t, file, scriptDriver{
		config: func(line string) { router, ev = NewRouter(parseRouterConfig(t, line)), RouterEvent{} },
		step: func(event string) []string {
			ev = parseRouterEvent(t, event, ev.At)
			out.Reset()
			router.Step(&ev, &out)
			lines := make([]string, 0, len(out.Effects))
			for i := range out.Effects {
				lines = append(lines, out.Effects[i].String())
			}
			return lines
		},
	})
}

// parseRouterConfig reads "config router replicas=N default=POLICY tolerance=D interval=D
// zone=Z hedge=DELAY:PERCENT".
func parseRouterConfig(t *testing.T, line string) RouterConfig {
	t.Helper()
	cfg := RouterConfig{RefreshInterval: 1e9}
	replicas := 1
	for _, f := range strings.Fields(line)[2:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "replicas":
			replicas = atoi(t, v)
		case "default":
			cfg.Default = parseReadFrom(t, v)
		case "tolerance":
			cfg.Banded, cfg.Tolerance = true, dur(t, v)
		case "interval":
			cfg.RefreshInterval = dur(t, v)
		case "zone":
			cfg.Zone = v
		case "hedge":
			d, p, _ := strings.Cut(v, ":")
			cfg.HedgeDelay, cfg.HedgeLoadPercent = dur(t, d), atoi(t, p)
		default:
			t.Fatalf("unknown router field %q", k)
		}
	}
	for i := 0; i <= replicas; i++ {
		cfg.Endpoints = append(cfg.Endpoints, MakeEndpoint("10.0.0."+strconv.Itoa(i+1), 6379))
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func parseReadFrom(t *testing.T, s string) ReadFrom {
	t.Helper()
	for p := ReadFrom(0); p < ReadPolicies; p++ {
		if p.String() == s {
			return p
		}
	}
	t.Fatalf("unknown read policy %q", s)
	return 0
}

// parseRouterEvent reads one event: "woke", "read read=N policy=P [hedgeable]",
// "withdrawn read=N", "ended read=N target=I ok|failed", "failed target=I", "probe target=I
// rtt=D", "probe-failed target=I", "role target=I replica|primary [link=L] [stale] [zone=Z]",
// "role-failed target=I"; each may carry at=D, and time stays where the last event left it.
func parseRouterEvent(t *testing.T, line string, at time.Duration) RouterEvent {
	t.Helper()
	fields := strings.Fields(line)
	ev := RouterEvent{At: at, Policy: ReadPolicies}
	kinds := map[string]RouterEventKind{"woke": Woke, "read": ReadStarted, "withdrawn": ReadWithdrawn,
		"ended": ReadEnded, "failed": TargetFailed, "probe": ProbeAnswered, "probe-failed": ProbeFailed,
		"role": RoleAnswered, "role-failed": RoleFailed}
	kind, ok := kinds[fields[0]]
	if !ok {
		t.Fatalf("unknown router event %q", fields[0])
	}
	ev.Kind = kind
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "at":
			ev.At = dur(t, v)
		case "read":
			ev.Read = ReadID(atoi(t, v))
		case "policy":
			ev.Policy = parseReadFrom(t, v)
		case "hedgeable":
			ev.Hedgeable = true
		case "target":
			ev.Target = atoi(t, v)
		case "ok":
			ev.OK = true
		case "failed":
		case "rtt":
			ev.RTT = dur(t, v)
		case "replica":
			ev.Replica = true
		case "primary":
		case "link":
			ev.Link = ParseLink(v)
		case "stale":
			ev.ServeStale = true
		case "zone":
			ev.Zone, ev.ZoneKnown = v, true
		default:
			t.Fatalf("unknown router event field %q", k)
		}
	}
	return ev
}
