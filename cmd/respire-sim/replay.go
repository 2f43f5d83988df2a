package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/report"
	"github.com/respire-go/respire/sim/scenario"
)

const replayUsage = `usage: respire-sim replay [--html FILE] capture.jsonl

Feeds a journal capture (client.DumpJournal, docs/capture.md) to fresh state machines, or to
machines restored from the capture's snapshot, and checks that every event has exactly the
effects it had in production. The first divergence is named: the event's index, the machine,
the expected and the replayed effects. Exit status 0 when every effect matches, 1 on a
divergence, 2 when the file cannot be read.

flags:
  --html FILE   write the HTML timeline to FILE (default: the capture's path with .html;
                "-" writes none)`

// runReplay is `respire-sim replay`.
func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	htmlPath := fs.String("html", "", "HTML timeline file")
	path, f, code := captureArg(fs, args, "replay", replayUsage, stdout, stderr)
	if f == nil {
		return code
	}
	res, verdict, d, err := replayCapture(f, filepath.Base(path))
	if err != nil {
		fmt.Fprintln(stderr, "respire-sim replay:", err)
		return 2
	}
	if *htmlPath == "" {
		*htmlPath = strings.TrimSuffix(path, filepath.Ext(path)) + ".html"
	}
	if *htmlPath != "-" {
		if err := writeFile(*htmlPath, func(w io.Writer) error { return report.Write(w, res, verdict) }); err != nil {
			fmt.Fprintln(stderr, "respire-sim replay:", err)
			return 2
		}
	}
	from := "the first event"
	if f.Header.Snapshot {
		from = "a snapshot"
	}
	fmt.Fprintf(stdout, "%s: %d events (seq %d..%d, from %s), dumped on %s\n", path, len(f.Steps), f.Header.First,
		f.Header.First+uint64(len(f.Steps))-1, from, f.Header.Reason)
	if d != nil {
		fmt.Fprintf(stdout, "DIVERGES at event %d (seq %d), machine %s\n  event:    %s\n  %s\n", d.Index, d.Seq, d.Machine, d.Event, d.Detail)
		fmt.Fprintf(stdout, "  expected:\n%s  replayed:\n%s", indentEffects(d.Expected), indentEffects(d.Got))
		return 1
	}
	fmt.Fprintln(stdout, "every effect matches")
	return 0
}

// captureArg parses the flags of subcommand cmd and reads the one capture file they name. A nil
// file comes with the exit status to return: 0 after -h, 2 for bad usage or an unreadable file.
func captureArg(fs *flag.FlagSet, args []string, cmd, usage string, stdout, stderr io.Writer) (string, *engine.CaptureFile, int) {
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, usage)
			return "", nil, 0
		}
		fmt.Fprintln(stderr, usage)
		return "", nil, 2
	}
	path := fs.Arg(0)
	f, err := readCaptureFile(path)
	if err != nil {
		fmt.Fprintln(stderr, "respire-sim "+cmd+":", err)
		return path, nil, 2
	}
	return path, f, 0
}

func readCaptureFile(path string) (*engine.CaptureFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return engine.ReadCapture(fh)
}

func indentEffects(effects []engine.CapturedEffect) string {
	if len(effects) == 0 {
		return "    (none)\n"
	}
	var b strings.Builder
	for _, f := range effects {
		b.WriteString("    ")
		b.WriteString(f.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// replayCapture replays f and returns the run in the simulator's record form (for the HTML
// timeline, with times as offsets from the capture's first event), its verdict and the first
// divergence.
func replayCapture(f *engine.CaptureFile, name string) (*record.Result, *check.Verdict, *engine.Divergence, error) {
	var origin time.Duration
	if len(f.Steps) > 0 {
		origin = f.Steps[0].Event.At
	}
	sc := &scenario.Scenario{Name: "capture " + name, Description: fmt.Sprintf(
		"Journal capture replayed: %d events dumped on %s; times are offsets from the first captured event, %s after the client started.",
		len(f.Steps), f.Header.Reason, origin)}
	res := &record.Result{Scenario: sc}
	d, err := f.Replay(func(_ int, ev *fsm.Event, effects []fsm.Effect) {
		shown := *ev
		shown.At -= origin
		res.Steps = append(res.Steps, record.Step{Event: shown, Effects: append([]fsm.Effect(nil), effects...)})
		res.End = max(res.End, shown.At)
	})
	if err != nil {
		return nil, nil, nil, err
	}
	verdict := &check.Verdict{Checked: []string{check.CheckReplay}}
	if d != nil {
		v := check.Violation{Checker: check.CheckReplay, At: f.Steps[d.Index].Event.At - origin,
			Message: fmt.Sprintf("event %d (seq %d), machine %s: %s: %s", d.Index, d.Seq, d.Machine, d.Event, d.Detail)}
		verdict.Violations = append(verdict.Violations, v)
		verdict.Unexpected = append(verdict.Unexpected, v)
	}
	return res, verdict, d, nil
}
