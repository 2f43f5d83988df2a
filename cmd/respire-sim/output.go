package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// printer writes results as they arrive: text lines like go test's, or one JSON object per run
// (--json); and, on a terminal, a progress line with an ETA on standard error.
type printer struct {
	cfg            config
	stdout, stderr io.Writer
	total          float64
	lastProgress   time.Time
	progressShown  bool
	enc            *json.Encoder
}

func newPrinter(cfg config, stdout, stderr io.Writer, total float64) *printer {
	p := &printer{cfg: cfg, stdout: stdout, stderr: stderr, total: total}
	if cfg.json {
		p.enc = json.NewEncoder(stdout)
	}
	return p
}

// jsonRun is the JSON object of one run.
type jsonRun struct {
	Scenario   string          `json:"scenario"`
	Seed       uint64          `json:"seed"`
	Verdict    string          `json:"verdict"`
	VirtualNS  int64           `json:"virtual_ns"`
	WallNS     int64           `json:"wall_ns"`
	Ops        int             `json:"ops"`
	Checks     int             `json:"checks"`
	Trace      string          `json:"trace,omitempty"`
	Error      string          `json:"error,omitempty"`
	Violations []jsonViolation `json:"violations,omitempty"`
	Unexpected int             `json:"unexpected,omitempty"`
	Missing    []string        `json:"missing,omitempty"`
	Report     string          `json:"report,omitempty"`
	ReportErr  string          `json:"report_error,omitempty"`
}

// jsonViolation is one violation of a failing run.
type jsonViolation struct {
	Checker string `json:"checker"`
	AtNS    int64  `json:"at_ns"`
	Message string `json:"message"`
}

// jsonSummary is the last JSON object of a run of the command.
type jsonSummary struct {
	Summary   bool  `json:"summary"`
	Scenarios int   `json:"scenarios"`
	Runs      int   `json:"runs"`
	Failures  int   `json:"failures"`
	Stopped   bool  `json:"stopped,omitempty"`
	WallNS    int64 `json:"wall_ns"`
}

func verdictWord(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

// run prints one finished run.
func (p *printer) run(r *runSummary, t *scenarioTally) {
	if p.enc != nil {
		j := jsonRun{Scenario: r.name, Seed: r.seed, Verdict: verdictWord(r.pass), VirtualNS: int64(r.virtual),
			WallNS: int64(r.wall), Ops: r.ops, Checks: r.checks, Trace: r.trace, Error: r.runErr, Unexpected: r.unexpected,
			Missing: r.missing, Report: r.report, ReportErr: r.reportErr}
		for _, v := range r.failures {
			j.Violations = append(j.Violations, jsonViolation{Checker: v.Checker, AtNS: int64(v.At), Message: v.Message})
		}
		_ = p.enc.Encode(j)
		return
	}
	sweep := p.cfg.seedRange && p.cfg.seedTo != p.cfg.seedFrom
	if r.pass {
		if !sweep && !p.cfg.quiet {
			p.clearProgress()
			fmt.Fprintf(p.stdout, "PASS %s seed=%d virtual=%s wall=%s ops=%d checks=%d trace=%s\n", r.name, r.seed,
				r.virtual, r.wall.Round(time.Millisecond), r.ops, r.checks, short(r.trace))
		}
		return
	}
	if sweep && t.printed >= maxFailLines {
		return
	}
	t.printed++
	p.clearProgress()
	fmt.Fprintf(p.stdout, "FAIL %s seed=%d %s\n", r.name, r.seed, failureText(r))
	switch {
	case r.reportErr != "":
		fmt.Fprintf(p.stdout, "     report: %s (incomplete: %s)\n", r.report, r.reportErr)
	case r.report != "":
		fmt.Fprintf(p.stdout, "     report: %s\n", r.report)
	default:
		fmt.Fprintf(p.stdout, "     report: none (--max-reports %d reached)\n", p.cfg.maxReports)
	}
}

// scenarioDone prints the summary line of a scenario's seed range.
func (p *printer) scenarioDone(name string, t *scenarioTally, cfg config) {
	if p.enc != nil || (cfg.quiet && t.failed == 0) {
		return
	}
	p.clearProgress()
	more := ""
	if t.failed > t.printed {
		more = fmt.Sprintf(" (%d failing seeds not listed)", t.failed-t.printed)
	}
	fmt.Fprintf(p.stdout, "%s %s seeds=%d..%d runs=%d failed=%d virtual=%s wall=%s ops=%d%s\n", verdictWord(t.failed == 0), name,
		cfg.seedFrom, cfg.seedTo, t.runs, t.failed, t.virtual, t.wall.Round(time.Millisecond), t.ops, more)
}

// progress updates the terminal's progress line, at most once a second.
func (p *printer) progress(done, failures int, elapsed time.Duration) {
	if !p.cfg.progress || p.total < 20 || time.Since(p.lastProgress) < time.Second {
		return
	}
	p.lastProgress = time.Now()
	frac := float64(done) / p.total
	eta := "?"
	if frac > 0 {
		eta = (time.Duration(float64(elapsed)/frac) - elapsed).Round(time.Second).String()
	}
	fmt.Fprintf(p.stderr, "\r\033[Krespire-sim: %d/%.0f runs (%.1f%%), %d failed, ETA %s", done, p.total, 100*frac, failures, eta)
	p.progressShown = true
}

// clearProgress erases the progress line before a result line.
func (p *printer) clearProgress() {
	if p.progressShown {
		fmt.Fprint(p.stderr, "\r\033[K")
		p.progressShown = false
	}
}

// summary prints the final line.
func (p *printer) summary(scenarios, runs, failures int, stopped bool, wall time.Duration) {
	if p.enc != nil {
		_ = p.enc.Encode(jsonSummary{Summary: true, Scenarios: scenarios, Runs: runs, Failures: failures, Stopped: stopped, WallNS: int64(wall)})
		return
	}
	p.clearProgress()
	tail := ""
	if stopped {
		tail = " (stopped at the first failure: --fail-fast)"
	}
	fmt.Fprintf(p.stdout, "%d scenario(s), %d run(s), %d failure(s), %s%s\n", scenarios, runs, failures, wall.Round(time.Millisecond), tail)
}

// failureText is a failing run's one-line summary: its first violations, with virtual times.
func failureText(r *runSummary) string {
	if r.runErr != "" {
		return "error: " + r.runErr
	}
	var parts []string
	for _, v := range r.failures {
		parts = append(parts, v.Checker+" at "+v.At.String()+": "+v.Message)
	}
	if r.unexpected > len(r.failures) {
		parts = append(parts, fmt.Sprintf("(%d violations in all)", r.unexpected))
	}
	for _, m := range r.missing {
		parts = append(parts, "expected "+m+" to fail, but it found nothing")
	}
	return strings.Join(parts, "; ")
}

func short(hash string) string {
	if len(hash) > 16 {
		return hash[:16]
	}
	return hash
}
