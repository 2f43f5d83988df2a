package main

import (
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire-go/respire/sim"
	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/scenario"
)

// job is one run: a scenario and a seed.
type job struct {
	scenario int
	seed     uint64
}

// maxKeptViolations bounds the violations a failing run's summary keeps.
const maxKeptViolations = 3

// runSummary is what a sweep keeps of one run once it is judged: a few numbers and, for a
// failure, a few violations. The run's records are dropped as soon as the checkers are done.
type runSummary struct {
	job
	name     string
	pass     bool
	runErr   string
	virtual  time.Duration
	wall     time.Duration
	ops      int
	checks   int
	trace    string
	failures []check.Violation
	// unexpected is the number of unexpected violations (failures holds the first few).
	unexpected int
	missing    []string
	report     string
	reportErr  string
}

// scenarioTally aggregates the runs of one scenario: constant memory whatever the seed count.
type scenarioTally struct {
	runs, failed, printed int
	ops                   int
	virtual, wall         time.Duration
	firstFailures         []runSummary
}

// maxFailLines bounds the FAIL lines printed per scenario in a sweep; the summary line counts
// the rest.
const maxFailLines = 5

// execute runs every job, streaming: a producer generates jobs as workers take them, workers
// run, judge, write capped reports and pass on summaries, and this goroutine prints each result
// as it arrives. It returns the exit status.
func execute(scenarios []*scenario.Scenario, cfg config, stdout, stderr io.Writer) int {
	perScenario := uint64(1)
	if cfg.seedRange {
		perScenario = cfg.seedTo - cfg.seedFrom + 1 // 0 when the range is all of uint64
	}
	total := float64(perScenario) * float64(len(scenarios))
	if perScenario == 0 {
		total = math.Ldexp(1, 64) * float64(len(scenarios))
	}
	jobs := make(chan job)
	results := make(chan runSummary, cfg.jobs)
	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	go produce(scenarios, cfg, jobs, stop)
	var reports atomic.Int64
	var wg sync.WaitGroup
	for range cfg.jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				select {
				case <-stop:
					continue // --fail-fast: drain without running
				default:
				}
				r := runJob(scenarios[j.scenario], j, cfg, &reports)
				if !r.pass && cfg.failFast {
					halt()
				}
				results <- r
			}
		}()
	}
	go func() {
		wg.Wait()
		close(results)
	}()

	out := newPrinter(cfg, stdout, stderr, total)
	tallies := make([]scenarioTally, len(scenarios))
	started := time.Now()
	done, failures := 0, 0
	for r := range results {
		done++
		t := &tallies[r.scenario]
		t.runs++
		t.ops += r.ops
		t.virtual += r.virtual
		t.wall += r.wall
		if !r.pass {
			failures++
			t.failed++
			if len(t.firstFailures) < maxFailLines {
				t.firstFailures = append(t.firstFailures, r)
			}
		}
		out.run(&r, t)
		if cfg.seedRange && perScenario > 1 && uint64(t.runs) == perScenario {
			out.scenarioDone(scenarios[r.scenario].Name, t, cfg)
		}
		out.progress(done, failures, time.Since(started))
	}
	halt()
	stopped := cfg.failFast && failures > 0
	if cfg.seedRange && perScenario > 1 {
		// Scenarios cut short by --fail-fast still get their summary line.
		for i, sc := range scenarios {
			if t := &tallies[i]; t.runs > 0 && uint64(t.runs) != perScenario {
				out.scenarioDone(sc.Name, t, cfg)
			}
		}
	}
	out.summary(len(scenarios), done, failures, stopped, time.Since(started))
	if cfg.junit != "" {
		if err := writeJUnit(cfg.junit, scenarios, tallies, cfg); err != nil {
			fmt.Fprintf(stderr, "respire-sim: writing %s: %v\n", cfg.junit, err)
			return 2
		}
	}
	if failures > 0 {
		return 1
	}
	return 0
}

// produce sends every job in order, scenario by scenario, generating seeds as they are taken;
// it stops early when stop closes.
func produce(scenarios []*scenario.Scenario, cfg config, jobs chan<- job, stop <-chan struct{}) {
	defer close(jobs)
	send := func(j job) bool {
		select {
		case jobs <- j:
			return true
		case <-stop:
			return false
		}
	}
	for i, sc := range scenarios {
		if !cfg.seedRange {
			if !send(job{i, sc.Seed}) {
				return
			}
			continue
		}
		for s := cfg.seedFrom; ; s++ {
			if !send(job{i, s}) {
				return
			}
			if s == cfg.seedTo {
				break
			}
		}
	}
}

// runJob runs and judges one job, writes its report when it failed and the cap allows, and
// returns its summary. Nothing of the run outlives this call but the summary.
func runJob(sc *scenario.Scenario, j job, cfg config, reports *atomic.Int64) runSummary {
	start := time.Now()
	// The run's records are judged as it goes and dropped (check.Stream): its memory does not
	// grow with its length.
	stream := check.NewStream()
	res, err := sim.Run(sc, j.seed, sim.RunOptions{Sink: stream})
	s := runSummary{job: j, name: sc.Name, wall: time.Since(start)}
	var verdict *check.Verdict
	if res != nil {
		s.virtual = res.End
		s.trace = res.TraceHash
	}
	if err != nil {
		s.runErr = err.Error()
	} else {
		verdict = stream.Judge(res)
		s.ops = verdict.Ops
		s.checks = len(verdict.Checked)
		s.pass = verdict.Pass()
		s.unexpected = len(verdict.Unexpected)
		s.failures = append(s.failures, verdict.Unexpected[:min(len(verdict.Unexpected), maxKeptViolations)]...)
		s.missing = verdict.Missing
	}
	if s.pass {
		return s
	}
	if reports.Add(1) <= int64(cfg.maxReports) {
		dir, rerr := writeReport(sc, j.seed, s.trace, cfg.reportDir)
		s.report = dir
		if rerr != nil {
			s.reportErr = rerr.Error()
		}
	}
	return s
}
