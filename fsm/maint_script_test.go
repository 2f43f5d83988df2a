package fsm

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRelaxationScripts runs the narrative scripts of the maintenance relaxation machine in
// testdata/maint, like TestScripts: "config relaxed=D window=D" builds a fresh machine, each
// "> event" line is stepped into it, and the lines below are the expected effects. Run with
// -rewrite to regenerate the expectations after an intended change, then review the diff.
//
// Events: "> T start op=N [at=T] timeout=D", "> T end op=N", "> T timer",
// "> T notice KIND [time=D] [to=host:port]"; T is a duration since the origin ("1.5s", "300ms").
func TestRelaxationScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/maint/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runRelaxationScript(t, file) })
	}
}

var maintOrigin = time.Unix(0, 0)

func runRelaxationScript(t *testing.T, file string) {
	var r *Relaxation
	runScriptFile(t, file, scriptDriver{
		config: func(line string) {
			var cfg MaintConfig
			for _, f := range strings.Fields(line)[1:] {
				k, v, _ := strings.Cut(f, "=")
				d := mustDuration(t, v)
				switch k {
				case "relaxed":
					cfg.RelaxedTimeout = d
				case "window":
					cfg.WindowTimeout = d
				default:
					t.Fatalf("%s: unknown config key %q in %q", file, k, line)
				}
			}
			r = NewRelaxation(cfg)
		},
		step: func(event string) []string {
			ev := parseMaintEvent(t, event)
			var lines []string
			for _, f := range r.Step(&ev, nil) {
				lines = append(lines, f.String())
			}
			return lines
		},
	})
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("bad duration %q: %v", s, err)
	}
	return d
}

func parseMaintEvent(t *testing.T, s string) MaintEvent {
	t.Helper()
	f := strings.Fields(s)
	if len(f) < 2 {
		t.Fatalf("short event %q", s)
	}
	ev := MaintEvent{Now: maintOrigin.Add(mustDuration(t, f[0]))}
	args := map[string]string{}
	for _, a := range f[2:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			args[k] = v
		}
	}
	op := func() uint64 {
		n, err := strconv.ParseUint(args["op"], 10, 64)
		if err != nil {
			t.Fatalf("bad op in %q", s)
		}
		return n
	}
	switch f[1] {
	case "start":
		ev.Kind, ev.Op, ev.Start = MaintOpStarted, op(), ev.Now
		if at, ok := args["at"]; ok {
			ev.Start = maintOrigin.Add(mustDuration(t, at))
		}
		if d, ok := args["timeout"]; ok {
			ev.Timeout = mustDuration(t, d)
		}
	case "end":
		ev.Kind, ev.Op = MaintOpEnded, op()
	case "timer":
		ev.Kind = MaintTimerFired
	case "notice":
		ev.Kind = MaintNoticeReceived
		if len(f) < 3 {
			t.Fatalf("notice without a kind: %q", s)
		}
		for k := MaintMoving; k <= MaintSlotMigrated; k++ {
			if k.String() == f[2] {
				ev.Notice.Kind = k
			}
		}
		if ev.Notice.Kind == 0 {
			t.Fatalf("unknown notice %q", f[2])
		}
		if d, ok := args["time"]; ok {
			ev.Notice.Time = mustDuration(t, d)
		}
		if to, ok := args["to"]; ok {
			ep, err := ParseEndpoint(to)
			if err != nil {
				t.Fatal(err)
			}
			ev.Notice.Target = ep
		}
	default:
		t.Fatalf("unknown event %q", s)
	}
	return ev
}
