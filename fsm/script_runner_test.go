package fsm

import (
	"os"
	"strings"
	"testing"
)

// scriptDriver adapts one kind of machine to runScriptFile.
type scriptDriver struct {
	// config builds a fresh machine from a "config ..." line.
	config func(line string)
	// step feeds the event written on a "> ..." line (without the marker) to the machine and
	// returns what it did, one line per effect.
	step func(event string) []string
}

// runScriptFile runs one narrative script: "#" lines and blank lines are comments, a "config"
// line builds a fresh machine, each "> event" line is stepped into it, and the lines below it
// are the expected effects. With -rewrite the file is written back with the effects the
// machine produced, for review as a diff.
func runScriptFile(t *testing.T, file string, d scriptDriver) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var (
		result    strings.Builder
		got, want []string
		event     string
		eventLine int
	)
	flush := func() {
		if event != "" {
			if strings.Join(got, "\n") != strings.Join(want, "\n") && !*rewrite {
				t.Errorf("%s:%d: %s\n got:\n  %s\nwant:\n  %s", file, eventLine, event,
					strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			for _, g := range got {
				result.WriteString(g + "\n")
			}
		}
		event, got, want = "", nil, nil
	}
	for n, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "":
			flush()
			result.WriteString(line + "\n")
		case strings.HasPrefix(line, "config "):
			flush()
			d.config(line)
			result.WriteString(line + "\n")
		case strings.HasPrefix(line, "> "):
			flush()
			event, eventLine = line, n+1
			got = d.step(line[2:])
			result.WriteString(line + "\n")
		default:
			want = append(want, line)
		}
	}
	flush()
	if *rewrite {
		if err := os.WriteFile(file, []byte(result.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// effectLines returns the effects of an Outbox, one line each.
func effectLines(out *Outbox) []string {
	lines := make([]string, 0, len(out.Effects))
	for i := range out.Effects {
		lines = append(lines, out.Effects[i].String())
	}
	return lines
}
