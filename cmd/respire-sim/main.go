// Command respire-sim replays fault scenarios against simulated Redis deployments and checks
// what happened: no replayed command, honest outcomes, the reconnect policy's rules,
// linearizability (porcupine) and liveness.
//
// Usage:
//
//	respire-sim run [flags] scenarios/*.yaml
//
// Each scenario runs with its own seed, or with every seed of --seeds A..B (randomized fault
// times and latencies). One line per scenario reports the verdict, seed, virtual time covered,
// wall time, operations checked and the trace hash; the same scenario and seed always give the
// same hash. A failing run writes a report directory (the resolved scenario, which replays as a
// fixed file, the trace, the violations and porcupine's HTML visualization) and the command
// exits with status 1.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/respire-go/respire/sim"
	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func usage(w io.Writer) {
	fmt.Fprintln(w, `usage: respire-sim run [flags] scenario.yaml...

flags:
  --seeds A..B   run every seed from A to B (inclusive) instead of each scenario's own seed
  --seed N       run seed N instead of each scenario's own seed
  --report DIR   directory for failure reports (default "reports")
  --jobs N       scenarios run in parallel (default: the number of CPUs)
  --quiet        print only failures and the summary`)
}

type config struct {
	seedFrom, seedTo uint64
	seedRange        bool
	reportDir        string
	jobs             int
	quiet            bool
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "run" {
		usage(stderr)
		return 2
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seeds := fs.String("seeds", "", "seed range A..B")
	seed := fs.String("seed", "", "single seed")
	cfg := config{}
	fs.StringVar(&cfg.reportDir, "report", "reports", "report directory")
	fs.IntVar(&cfg.jobs, "jobs", runtime.NumCPU(), "parallel runs")
	fs.BoolVar(&cfg.quiet, "quiet", false, "print only failures")
	fs.Usage = func() { usage(stderr) }
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *seeds != "" && *seed != "" {
		fmt.Fprintln(stderr, "respire-sim: --seed and --seeds are exclusive")
		return 2
	}
	if *seeds != "" {
		a, b, ok := strings.Cut(*seeds, "..")
		from, err1 := strconv.ParseUint(a, 10, 64)
		to, err2 := strconv.ParseUint(b, 10, 64)
		if !ok || err1 != nil || err2 != nil || to < from {
			fmt.Fprintf(stderr, "respire-sim: bad --seeds %q: want A..B with A <= B\n", *seeds)
			return 2
		}
		cfg.seedFrom, cfg.seedTo, cfg.seedRange = from, to, true
	}
	if *seed != "" {
		n, err := strconv.ParseUint(*seed, 10, 64)
		if err != nil {
			fmt.Fprintf(stderr, "respire-sim: bad --seed %q\n", *seed)
			return 2
		}
		cfg.seedFrom, cfg.seedTo, cfg.seedRange = n, n, true
	}
	if cfg.jobs < 1 {
		cfg.jobs = 1
	}
	files := fs.Args()
	if len(files) == 0 {
		fmt.Fprintln(stderr, "respire-sim: no scenario files")
		return 2
	}
	scenarios := make([]*scenario.Scenario, 0, len(files))
	for _, f := range files {
		sc, err := scenario.Load(f)
		if err != nil {
			fmt.Fprintf(stderr, "respire-sim: %v\n", err)
			return 2
		}
		scenarios = append(scenarios, sc)
	}
	return execute(scenarios, files, cfg, stdout, stderr)
}

// job is one run: a scenario and a seed.
type job struct {
	scenario int
	seed     uint64
}

// outcome is what one run produced.
type outcome struct {
	job     job
	res     *record.Result
	verdict *check.Verdict
	err     error
	wall    time.Duration
}

func execute(scenarios []*scenario.Scenario, files []string, cfg config, stdout, stderr io.Writer) int {
	var jobs []job
	for i, sc := range scenarios {
		if cfg.seedRange {
			for s := cfg.seedFrom; ; s++ {
				jobs = append(jobs, job{i, s})
				if s == cfg.seedTo {
					break
				}
			}
		} else {
			jobs = append(jobs, job{i, sc.Seed})
		}
	}
	results := make([]outcome, len(jobs))
	var (
		wg       sync.WaitGroup
		next     = make(chan int)
		mu       sync.Mutex
		done     int
		lastShow time.Time
	)
	started := time.Now()
	for w := 0; w < cfg.jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = runOne(scenarios[jobs[i].scenario], jobs[i])
				mu.Lock()
				done++
				if len(jobs) > 20 && time.Since(lastShow) > time.Second {
					lastShow = time.Now()
					fmt.Fprintf(stderr, "\rrespire-sim: %d/%d runs (%.0f%%)", done, len(jobs), 100*float64(done)/float64(len(jobs)))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(jobs) > 20 {
		fmt.Fprintf(stderr, "\rrespire-sim: %d/%d runs (100%%)\n", len(jobs), len(jobs))
	}
	failures := 0
	for i := range scenarios {
		failures += report(scenarios[i], files[i], results, i, cfg, stdout, stderr)
	}
	fmt.Fprintf(stdout, "%d scenario(s), %d run(s), %d failure(s), %s\n", len(scenarios), len(jobs), failures, time.Since(started).Round(time.Millisecond))
	if failures > 0 {
		return 1
	}
	return 0
}

func runOne(sc *scenario.Scenario, j job) outcome {
	start := time.Now()
	res, err := sim.Run(sc, j.seed, sim.RunOptions{})
	o := outcome{job: j, res: res, err: err, wall: time.Since(start)}
	if err == nil {
		o.verdict = check.Judge(res)
	}
	return o
}

// report prints the lines of scenario i and writes reports for its failing runs. It returns the
// number of failing runs.
func report(sc *scenario.Scenario, file string, results []outcome, i int, cfg config, stdout, stderr io.Writer) int {
	var (
		runs, failures, ops int
		virtual, wall       time.Duration
		first               *outcome
	)
	for k := range results {
		o := &results[k]
		if o.job.scenario != i {
			continue
		}
		runs++
		wall += o.wall
		if first == nil {
			first = o
		}
		if o.res != nil {
			virtual += o.res.End
			ops += len(o.res.Ops) + len(o.res.Dedicated)
		}
		if o.err == nil && o.verdict.Pass() {
			continue
		}
		failures++
		dir, rerr := writeReport(sc, o, cfg.reportDir)
		fmt.Fprintf(stdout, "FAIL %s seed=%d %s\n", sc.Name, o.job.seed, failureSummary(o))
		if rerr != nil {
			fmt.Fprintf(stderr, "respire-sim: writing report: %v\n", rerr)
		} else {
			fmt.Fprintf(stdout, "     report: %s\n", dir)
		}
	}
	if runs == 1 && failures == 0 && !cfg.quiet {
		fmt.Fprintf(stdout, "PASS %s seed=%d virtual=%s wall=%s ops=%d checks=%d trace=%s\n", sc.Name, first.job.seed,
			first.res.End, first.wall.Round(time.Millisecond), ops, len(first.verdict.Checked), first.res.TraceHash[:16])
	} else if runs > 1 && !cfg.quiet || failures > 0 && runs > 1 {
		verdict := "PASS"
		if failures > 0 {
			verdict = "FAIL"
		}
		fmt.Fprintf(stdout, "%s %s seeds=%d..%d runs=%d failed=%d virtual=%s wall=%s ops=%d\n", verdict, sc.Name,
			cfg.seedFrom, cfg.seedTo, runs, failures, virtual, wall.Round(time.Millisecond), ops)
	}
	_ = file
	return failures
}

func failureSummary(o *outcome) string {
	if o.err != nil {
		return "error: " + o.err.Error()
	}
	var parts []string
	for _, v := range o.verdict.Unexpected {
		parts = append(parts, v.Checker+" at "+v.At.String()+": "+v.Message)
		if len(parts) == 3 {
			parts = append(parts, fmt.Sprintf("(%d violations in all)", len(o.verdict.Unexpected)))
			break
		}
	}
	for _, m := range o.verdict.Missing {
		parts = append(parts, "expected "+m+" to fail, but it found nothing")
	}
	return strings.Join(parts, "; ")
}

// writeReport reruns the failing seed with its trace kept (runs are deterministic) and writes the
// resolved scenario, the trace, the violations and the linearizability visualization.
func writeReport(sc *scenario.Scenario, o *outcome, root string) (string, error) {
	dir := filepath.Join(root, fmt.Sprintf("%s-seed%d", sanitize(sc.Name), o.job.seed))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	res, err := sim.Run(sc, o.job.seed, sim.RunOptions{KeepTrace: true})
	if res != nil && res.Scenario != nil {
		if data, merr := scenario.Marshal(res.Scenario); merr == nil {
			if werr := os.WriteFile(filepath.Join(dir, "scenario.yaml"), data, 0o644); werr != nil {
				return "", werr
			}
		}
	}
	if res != nil {
		trace := strings.Join(res.Trace, "\n") + "\n"
		if werr := os.WriteFile(filepath.Join(dir, "trace.txt"), []byte(trace), 0o644); werr != nil {
			return "", werr
		}
		if res.TraceHash != o.res.TraceHash && o.res != nil {
			return dir, errors.New("rerun gave a different trace hash: the run is not deterministic")
		}
		html, herr := os.Create(filepath.Join(dir, "linearizability.html"))
		if herr == nil {
			_ = check.WriteLinearizability(res, html)
			html.Close()
		}
	}
	var b strings.Builder
	if err != nil {
		fmt.Fprintf(&b, "run error: %v\n", err)
	}
	if o.verdict != nil {
		fmt.Fprintf(&b, "checkers: %s\n", strings.Join(o.verdict.Checked, ", "))
		vs := append([]check.Violation(nil), o.verdict.Violations...)
		sort.SliceStable(vs, func(i, j int) bool { return vs[i].At < vs[j].At })
		for _, v := range vs {
			fmt.Fprintf(&b, "%s t=%s %s\n", v.Checker, v.At, v.Message)
		}
		for _, m := range o.verdict.Missing {
			fmt.Fprintf(&b, "expected %s to fail, but it found nothing\n", m)
		}
	}
	return dir, os.WriteFile(filepath.Join(dir, "violations.txt"), []byte(b.String()), 0o644)
}

func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == os.PathSeparator {
			return '-'
		}
		return r
	}, name)
}
