package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/respire-go/respire/sim"
	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/report"
	"github.com/respire-go/respire/sim/scenario"
)

// writeReport reruns a failing seed with its trace kept (runs are deterministic: the rerun must
// give wantHash) and writes the resolved scenario, the trace, the violations and the
// linearizability visualization into root/<scenario>-seed<N>.
func writeReport(sc *scenario.Scenario, seed uint64, wantHash, root string) (string, error) {
	dir := filepath.Join(root, fmt.Sprintf("%s-seed%d", sanitize(sc.Name), seed))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// The trace goes to its file as the run produces it, and the records are judged in segments
	// (check.Stream): a report of a long run costs no more memory than the run.
	traceFile, err := os.Create(filepath.Join(dir, "trace.txt"))
	if err != nil {
		return dir, err
	}
	stream := check.NewStream()
	stream.KeepJournal() // the timeline is drawn from the steps
	res, runErr := sim.Run(sc, seed, sim.RunOptions{Sink: stream, TraceTo: traceFile})
	if err := traceFile.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if res == nil {
		return dir, os.WriteFile(filepath.Join(dir, "violations.txt"), []byte(fmt.Sprintf("run error: %v\n", runErr)), 0o644)
	}
	if data, err := scenario.Marshal(res.Scenario); err == nil {
		if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), data, 0o644); err != nil {
			return dir, err
		}
	}
	var verdict *check.Verdict
	if runErr == nil {
		verdict = stream.Judge(res)
	}
	// The report shows the failing window: the segment of the first violation, or the last.
	window := stream.Window(res)
	var b strings.Builder
	if runErr != nil {
		fmt.Fprintf(&b, "run error: %v\n", runErr)
	}
	if verdict != nil {
		fmt.Fprintf(&b, "checkers: %s\n", strings.Join(verdict.Checked, ", "))
		vs := append([]check.Violation(nil), verdict.Violations...)
		sort.SliceStable(vs, func(i, j int) bool { return vs[i].At < vs[j].At })
		for _, v := range vs {
			fmt.Fprintf(&b, "%s t=%s %s\n", v.Checker, v.At, v.Message)
		}
		for _, m := range verdict.Missing {
			fmt.Fprintf(&b, "expected %s to fail, but it found nothing\n", m)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "violations.txt"), []byte(b.String()), 0o644); err != nil {
		return dir, err
	}
	if verdict != nil {
		if err := writeFile(filepath.Join(dir, "report.html"), func(w io.Writer) error { return report.Write(w, window, verdict) }); err != nil {
			return dir, err
		}
		if keys := failingKeys(verdict, stream, res); len(keys) > 0 {
			err := writeFile(filepath.Join(dir, "linearizability.html"), func(w io.Writer) error {
				return check.WriteLinearizabilityKey(window, keys[0], w)
			})
			if err != nil {
				return dir, err
			}
		}
	}
	if wantHash != "" && res.TraceHash != wantHash {
		return dir, errors.New("rerun gave a different trace hash: the run is not deterministic")
	}
	return dir, nil
}

// failingKeys returns the keys whose history is not linearizable, when the linearizability
// checker failed.
func failingKeys(v *check.Verdict, stream *check.Stream, res *record.Result) []string {
	for _, x := range v.Violations {
		if x.Checker == check.CheckLinearizable {
			return stream.IllegalKeys(res)
		}
	}
	return nil
}

// writeFile creates path and writes it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == os.PathSeparator {
			return '-'
		}
		return r
	}, name)
}

// JUnit XML, one test case per scenario.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// writeJUnit writes one test case per scenario that ran; a failing case lists its first failing
// seeds with their violations and report directories.
func writeJUnit(path string, scenarios []*scenario.Scenario, tallies []scenarioTally, cfg config) error {
	suite := junitSuite{Name: "respire-sim"}
	var wall time.Duration
	for i, sc := range scenarios {
		t := &tallies[i]
		if t.runs == 0 {
			continue
		}
		wall += t.wall
		c := junitCase{Name: sc.Name, Classname: "respire-sim", Time: seconds(t.wall),
			SystemOut: fmt.Sprintf("runs=%d failed=%d virtual=%s ops=%d", t.runs, t.failed, t.virtual, t.ops)}
		if t.failed > 0 {
			var b strings.Builder
			for _, f := range t.firstFailures {
				fmt.Fprintf(&b, "seed=%d %s\n", f.seed, failureText(&f))
				if f.report != "" {
					fmt.Fprintf(&b, "report: %s\n", f.report)
				}
			}
			if t.failed > len(t.firstFailures) {
				fmt.Fprintf(&b, "(%d more failing seeds)\n", t.failed-len(t.firstFailures))
			}
			c.Failure = &junitFailure{Message: fmt.Sprintf("%d of %d runs failed", t.failed, t.runs), Text: b.String()}
			suite.Failures++
		}
		suite.Tests++
		suite.Cases = append(suite.Cases, c)
	}
	suite.Time = seconds(wall)
	data, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{suite}}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(data, '\n')...), 0o644)
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
