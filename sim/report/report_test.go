package report

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/respire-go/respire/sim"
	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// failing runs a planted scenario of sim/testdata without its expect.fail, so that the
// planted bug is an unexpected violation, as a user's failing run would be.
func failing(t *testing.T, file string) (*record.Result, *check.Verdict) {
	t.Helper()
	sc, err := scenario.Load(filepath.Join("..", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	sc.Expect.Fail = nil
	sc.Expect.Linearizable = true
	res, err := sim.Run(sc, sc.Seed, sim.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := check.Judge(res)
	if v.Pass() {
		t.Fatalf("%s: the planted run passed", file)
	}
	return res, v
}

// TestReportContent: the page names the scenario, the seed, each violation with its checker,
// virtual time and operation ids, draws the timeline, lists the operations the violations name
// and, for linearizability, embeds only the failing key's history.
func TestReportContent(t *testing.T) {
	res, v := failing(t, "plant_stale_read.yaml")
	var b bytes.Buffer
	if err := Write(&b, res, v); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	want := []string{"plant-stale-read", "seed <b>53</b>", "<b>linearizable</b>", "key k0: op ", `id="timeline-svg"`,
		`class="named-op"`, "Operations named by the violations", "<iframe title=\"history of key k0\"",
		"respire-sim: history of key k0", "jump-link"}
	for _, w := range want {
		if !strings.Contains(page, w) {
			t.Fatalf("the report lacks %q", w)
		}
	}
	if strings.Contains(page, "history of key k1") || strings.Contains(page, "<title>Porcupine</title>") {
		t.Fatal("the report embeds a key that is linearizable, or porcupine's untitled page")
	}
	// The page stays as wide as its timeline, whatever the run's length.
	if m := regexp.MustCompile(`<svg id="timeline-svg" xmlns="[^"]*" width="(\d+)"`).FindStringSubmatch(page); m == nil || m[1] != "1200" {
		t.Fatalf("timeline width %v", m)
	}
}

// TestReportSources: a pub/sub run's report draws its episodes' states as a row of the
// timeline.
func TestReportSources(t *testing.T) {
	res, v := failing(t, "plant_pubsub_skip_gap.yaml")
	var b bytes.Buffer
	if err := Write(&b, res, v); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, ">pub/sub episodes</text>") || !strings.Contains(page, `class="source"`) ||
		!strings.Contains(page, ">pubsub (") || strings.Contains(page, "slot -1") {
		t.Fatal("the report draws no pub/sub episode row")
	}
}
