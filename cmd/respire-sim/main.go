// Command respire-sim replays fault scenarios against simulated Redis deployments and checks
// what happened: no replayed command, honest outcomes, the reconnect policy's rules,
// linearizability (porcupine) and liveness.
//
// Usage:
//
//	respire-sim run [flags] scenarios/*.yaml
//
// Each scenario runs with its own seed, or with every seed of --seeds A..B (randomized fault
// times and latencies). Results print as each run completes, like go test: one line per run, or
// with a seed range a line per failing seed (the first few) and one summary line per scenario.
// The same scenario and seed always give the same trace hash. A failing run writes a report
// directory (the resolved scenario, which replays as a fixed file, the trace, the violations and
// an HTML report), at most --max-reports of them, and the command exits with status 1.
//
// A sweep keeps nothing of a passing run and a few lines of a failing one, so --seeds
// 1..100000 runs in constant memory; seeds are generated as workers take them.
//
// `respire-sim replay capture.jsonl` replays a production client's journal capture and names the
// first divergence (replay.go); `respire-sim scenario capture.jsonl` turns one into a scenario
// skeleton (skeleton.go). See docs/capture.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/respire-go/respire/sim/scenario"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usageText = `usage: respire-sim run [flags] scenario.yaml...
       respire-sim replay [--html FILE] capture.jsonl     (respire-sim replay -h)
       respire-sim scenario [-o FILE] capture.jsonl       (respire-sim scenario -h)

flags:
  --seeds A..B        run every seed from A to B (inclusive) instead of each scenario's own seed
  --seed N            run seed N instead of each scenario's own seed
  -run REGEX          run only the scenarios whose name matches REGEX
  --fail-fast         stop starting runs after the first failure
  --report DIR        directory for failure reports (default "reports")
  --max-reports N     write at most N failure reports in all (default 10; 0: none)
  --jobs N            runs in parallel (default: the number of CPUs)
  --quiet             print only failures and the summary
  --json              print one JSON object per run (and a final summary object) instead of text
  --junit FILE        also write a JUnit XML file, one test case per scenario
  -h, --help          print this help`

// config is the parsed command line.
type config struct {
	seedFrom, seedTo uint64
	seedRange        bool
	reportDir        string
	maxReports       int
	jobs             int
	quiet            bool
	failFast         bool
	json             bool
	junit            string
	runFilter        *regexp.Regexp
	// progress shows a live progress line with an ETA (standard error is a terminal).
	progress bool
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprintln(stdout, usageText)
		return 0
	}
	if len(args) > 0 && args[0] == "replay" {
		return runReplay(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "scenario" {
		return runSkeleton(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "run" {
		fmt.Fprintln(stderr, usageText)
		return 2
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seeds := fs.String("seeds", "", "seed range A..B")
	seed := fs.String("seed", "", "single seed")
	filter := fs.String("run", "", "scenario name filter")
	cfg := config{}
	fs.StringVar(&cfg.reportDir, "report", "reports", "report directory")
	fs.IntVar(&cfg.maxReports, "max-reports", 10, "failure reports to write")
	fs.IntVar(&cfg.jobs, "jobs", runtime.NumCPU(), "parallel runs")
	fs.BoolVar(&cfg.quiet, "quiet", false, "print only failures")
	fs.BoolVar(&cfg.failFast, "fail-fast", false, "stop after the first failure")
	fs.BoolVar(&cfg.json, "json", false, "JSON output")
	fs.StringVar(&cfg.junit, "junit", "", "JUnit XML file")
	fs.Usage = func() {}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, usageText)
			return 0
		}
		fmt.Fprintln(stderr, usageText)
		return 2
	}
	if *seeds != "" && *seed != "" {
		fmt.Fprintln(stderr, "respire-sim: --seed and --seeds are exclusive")
		return 2
	}
	if *seeds != "" {
		from, to, err := parseSeedRange(*seeds)
		if err != nil {
			fmt.Fprintf(stderr, "respire-sim: bad --seeds %q: %v\n", *seeds, err)
			return 2
		}
		cfg.seedFrom, cfg.seedTo, cfg.seedRange = from, to, true
	}
	if *seed != "" {
		n, err := strconv.ParseUint(*seed, 10, 64)
		if err != nil {
			fmt.Fprintf(stderr, "respire-sim: bad --seed %q: want a non-negative integer\n", *seed)
			return 2
		}
		cfg.seedFrom, cfg.seedTo, cfg.seedRange = n, n, true
	}
	if *filter != "" {
		re, err := regexp.Compile(*filter)
		if err != nil {
			fmt.Fprintf(stderr, "respire-sim: bad -run %q: %v\n", *filter, err)
			return 2
		}
		cfg.runFilter = re
	}
	if cfg.maxReports < 0 {
		fmt.Fprintln(stderr, "respire-sim: --max-reports must not be negative")
		return 2
	}
	if cfg.jobs < 1 {
		cfg.jobs = 1
	}
	cfg.progress = !cfg.json && isTerminal(stderr)
	files := fs.Args()
	if len(files) == 0 {
		fmt.Fprintln(stderr, "respire-sim: no scenario files")
		return 2
	}
	var scenarios []*scenario.Scenario
	for _, f := range files {
		sc, err := scenario.Load(f)
		if err != nil {
			fmt.Fprintf(stderr, "respire-sim: %s\n", strings.ReplaceAll(err.Error(), "\n", ": "))
			return 2
		}
		if cfg.runFilter != nil && !cfg.runFilter.MatchString(sc.Name) {
			continue
		}
		scenarios = append(scenarios, sc)
	}
	if len(scenarios) == 0 {
		fmt.Fprintf(stderr, "respire-sim: no scenario matches -run %q\n", *filter)
		return 2
	}
	return execute(scenarios, cfg, stdout, stderr)
}

// parseSeedRange parses "A..B" with A <= B. The range is only bounds: seeds are generated one at
// a time as runs start, so its size costs no memory.
func parseSeedRange(s string) (uint64, uint64, error) {
	a, b, ok := strings.Cut(s, "..")
	if !ok {
		return 0, 0, errors.New("want A..B")
	}
	from, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 64)
	to, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 64)
	switch {
	case err1 != nil || err2 != nil:
		return 0, 0, errors.New("want A..B with non-negative integers")
	case to < from:
		return 0, 0, errors.New("want A <= B")
	}
	return from, to, nil
}

// isTerminal reports whether w is a character device (a terminal), where a progress line that
// rewrites itself with \r makes sense.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
