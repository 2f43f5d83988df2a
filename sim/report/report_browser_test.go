//go:build browser

// The browser test renders reports in headless Chromium (about 350 MB, installed by
// .ci/install-chromium.sh when missing). It is behind the browser build tag so that a plain
// `go test ./...` needs no browser; ./test.sh runs it (`go test -tags browser ./sim/report/`),
// keeping the screenshots in sim/report/testdata/screenshots. TestReportContent checks the same
// pages without a browser in every run.

package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromium returns a headless Chromium, installing it with .ci/install-chromium.sh when missing.
func chromium(t *testing.T) string {
	t.Helper()
	find := func() string {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				return p
			}
		}
		return ""
	}
	if p := find(); p != "" {
		return p
	}
	out, err := exec.Command(filepath.Join("..", "..", ".ci", "install-chromium.sh")).CombinedOutput()
	if p := find(); err == nil && p != "" {
		return p
	}
	t.Fatalf("no Chromium, and installing it failed: %v\n%s", err, out)
	return ""
}

// visibilityProbe is appended to a report in the browser test: once the page and the
// porcupine frame have rendered, it records what a reader sees into the DOM, which
// --dump-dom prints.
const visibilityProbe = `<script>
window.addEventListener('load', () => setTimeout(() => {
  const seen = (el) => {
    if (!el) return false
    const r = el.getBoundingClientRect(), s = getComputedStyle(el)
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none' && r.top < 3000
  }
  const out = []
  const table = document.querySelector('#violations + table')
  if (seen(table) && table.innerText.length > 0) out.push('violations:' + table.rows.length + ':' + table.rows[1].innerText.replace(/\s+/g, ' '))
  const svg = document.querySelector('#timeline-svg')
  if (seen(svg)) out.push('timeline:' + svg.querySelectorAll('rect').length)
  // A vertical mark is a line: no width of its own.
  const marks = [...document.querySelectorAll('.violation-mark')].filter((el) => el.getBoundingClientRect().height > 0)
  out.push('marks:' + marks.length)
  const frame = document.querySelector('iframe')
  if (frame && seen(frame)) {
    const doc = frame.contentDocument, win = frame.contentWindow
    const red = doc ? doc.querySelectorAll('rect, line, path').length : 0
    out.push('porcupine:' + (doc ? doc.title : '') + ':scrolled=' + (win.scrollX > 0 || doc.scrollingElement.scrollLeft > 0) + ':shapes=' + red)
  }
  const d = document.createElement('pre')
  d.id = 'probe'
  d.textContent = out.join('\n')
  document.body.appendChild(d)
}, 1500))
</script>
</body>`

// TestReportInBrowser renders the planted-replay and stale-read reports in headless Chromium:
// the violation text, the timeline and its violation marks are visible, and for the stale read
// porcupine's frame shows the failing key scrolled to its first error. The screenshots are kept
// in $RESPIRE_ARTIFACTS (default: a directory under the system's temporary directory).
func TestReportInBrowser(t *testing.T) {
	browser := chromium(t)
	artifacts := os.Getenv("RESPIRE_ARTIFACTS")
	if artifacts == "" {
		artifacts = filepath.Join(os.TempDir(), "respire-sim-report-screenshots")
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		file, name, violation string
		porcupine             bool
	}{
		{"plant_replay_accepted.yaml", "planted-replay", "no-replay", false},
		{"plant_stale_read.yaml", "stale-read", "linearizable", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, v := failing(t, tc.file)
			var b bytes.Buffer
			if err := Write(&b, res, v); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			page := filepath.Join(dir, "report.html")
			if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			probed := filepath.Join(dir, "probed.html")
			if err := os.WriteFile(probed, []byte(strings.Replace(b.String(), "</body>", visibilityProbe, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			shot := filepath.Join(artifacts, "report-"+tc.name+".png")
			runChromium(t, browser, "--window-size=1280,1400", "--screenshot="+shot, "file://"+page)
			if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
				t.Fatalf("screenshot %s: %v", shot, err)
			}
			t.Logf("screenshot: %s", shot)
			dom := runChromium(t, browser, "--window-size=1280,1400", "--virtual-time-budget=5000", "--dump-dom", "file://"+probed)
			m := regexp.MustCompile(`(?s)<pre id="probe">(.*?)</pre>`).FindStringSubmatch(dom)
			if m == nil {
				t.Fatalf("the probe did not run:\n%.2000s", dom)
			}
			probe := m[1]
			t.Logf("probe:\n%s", probe)
			if !strings.Contains(probe, "violations:") || !strings.Contains(probe, tc.violation) {
				t.Fatalf("the violation %s is not visible:\n%s", tc.violation, probe)
			}
			if !regexp.MustCompile(`timeline:\d{2,}`).MatchString(probe) || strings.Contains(probe, "marks:0") {
				t.Fatalf("the timeline or its violation marks are not visible:\n%s", probe)
			}
			if tc.porcupine && !strings.Contains(probe, "porcupine:respire-sim: history of key k0:scrolled=true") {
				t.Fatalf("porcupine's view of the failing key is not open at its first error:\n%s", probe)
			}
		})
	}
}

// runChromium runs headless Chromium with args and returns its standard output.
func runChromium(t *testing.T, browser string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, browser, append(base, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errOut.String())
	}
	return out.String()
}
