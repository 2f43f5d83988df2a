package client

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
)

var (
	// versionForm is the form of Version: a semantic version, "-dev" between releases.
	versionForm = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)(-dev)?$`)
	// changelogHeading matches a version section's heading: "## [Unreleased]" or
	// "## [1.2.3] - 2026-01-31".
	changelogHeading = regexp.MustCompile(`(?m)^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?[ \t]*$`)
)

// checkVersion reports how version and changelog disagree, by the rules CHANGELOG.md states:
//   - a "-dev" version: the first section is Unreleased, it says "`client.Version` is
//     `<version>`", and the version before the suffix is newer than every release listed;
//   - a release: the newest release listed is that version, with a date, and Unreleased, if
//     present, lists no changes.
func checkVersion(version, changelog string) error {
	m := versionForm.FindStringSubmatch(version)
	if m == nil {
		return errors.Newf("Version %q is not MAJOR.MINOR.PATCH with an optional -dev", version)
	}
	dev := m[4] != ""
	headings := changelogHeading.FindAllStringSubmatchIndex(changelog, -1)
	if len(headings) == 0 {
		return errors.New("CHANGELOG.md has no version section (## [Unreleased] or ## [x.y.z] - date)")
	}
	type section struct{ name, date, body string }
	var sections []section
	for i, h := range headings {
		end := len(changelog)
		if i+1 < len(headings) {
			end = headings[i+1][0]
		}
		s := section{name: changelog[h[2]:h[3]], body: changelog[h[1]:end]}
		if h[4] >= 0 {
			s.date = changelog[h[4]:h[5]]
		}
		sections = append(sections, s)
	}
	var newest []int // the newest release's numbers, nil when none is listed
	var unreleased *section
	for i := range sections {
		s := &sections[i]
		if s.name == "Unreleased" {
			if i != 0 {
				return errors.New("CHANGELOG.md: Unreleased must be the first section")
			}
			unreleased = s
			continue
		}
		r := versionForm.FindStringSubmatch(s.name)
		if r == nil || r[4] != "" || s.date == "" {
			return errors.Newf("CHANGELOG.md: section %q is not a dated release (## [x.y.z] - yyyy-mm-dd)", s.name)
		}
		if nums := versionNumbers(r); newest == nil {
			newest = nums
		} else if !versionLess(nums, newest) {
			return errors.Newf("CHANGELOG.md: release %s is listed below an older one", s.name)
		}
	}
	if dev {
		switch {
		case unreleased == nil:
			return errors.Newf("Version %s is a development version, but CHANGELOG.md has no Unreleased section", version)
		case !strings.Contains(unreleased.body, "`client.Version` is `"+version+"`"):
			return errors.Newf("CHANGELOG.md's Unreleased section does not say \"`client.Version` is `%s`\"", version)
		case newest != nil && !versionLess(newest, versionNumbers(m)):
			return errors.Newf("Version %s is not newer than the newest release in CHANGELOG.md", version)
		}
		return nil
	}
	switch {
	case newest == nil || sections[releaseIndex(sections[0].name)].name != version:
		return errors.Newf("Version %s is a release, but it is not the newest release in CHANGELOG.md", version)
	case unreleased != nil && strings.Contains(unreleased.body, "\n### "):
		return errors.Newf("Version %s is a release, but CHANGELOG.md lists unreleased changes: use %s-dev or the next version with -dev", version, version)
	}
	return nil
}

// releaseIndex is the index of the newest release among the sections: 1 after an Unreleased
// section, else 0.
func releaseIndex(first string) int {
	if first == "Unreleased" {
		return 1
	}
	return 0
}

func versionNumbers(m []string) []int {
	out := make([]int, 3)
	for i := range out {
		out[i], _ = strconv.Atoi(m[i+1])
	}
	return out
}

func versionLess(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// TestVersionMatchesChangelog: Version and CHANGELOG.md agree, and the handshake sends Version.
func TestVersionMatchesChangelog(t *testing.T) {
	doc, err := os.ReadFile("../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkVersion(Version, string(doc)); err != nil {
		t.Fatal(err)
	}
	o, r := resolveForTest(t, Options{Endpoints: []Endpoint{{Host: "cache", Port: 6379}}})
	if got := o.transportConfig(&r).Handshake.LibraryVersion; got != Version {
		t.Fatalf("the handshake sends LIB-VER %q, want Version %q", got, Version)
	}
}

// TestCheckVersionCatches is checkVersion's positive control: each disagreement is reported.
func TestCheckVersionCatches(t *testing.T) {
	const dev = "# Changelog\n\n## [Unreleased]\n\n`client.Version` is `0.2.0-dev`.\n\n### Added\n\n- x\n\n" +
		"## [0.1.0] - 2026-01-31\n\n### Added\n\n- y\n"
	const released = "# Changelog\n\n## [Unreleased]\n\n## [0.2.0] - 2026-03-01\n\n### Added\n\n- x\n\n" +
		"## [0.1.0] - 2026-01-31\n\n### Added\n\n- y\n"
	for _, c := range []struct {
		name, version, changelog string
		ok                       bool
	}{
		{"development version", "0.2.0-dev", dev, true},
		{"release", "0.2.0", released, true},
		{"first development version", "0.1.0-dev", "## [Unreleased]\n\n`client.Version` is `0.1.0-dev`.\n", true},
		{"not semantic", "0.2-dev", dev, false},
		{"other suffix", "0.2.0-rc1", dev, false},
		{"unreleased names another version", "0.3.0-dev", dev, false},
		{"development version not newer", "0.1.0-dev", strings.Replace(dev, "0.2.0-dev", "0.1.0-dev", 1), false},
		{"development version without Unreleased", "0.2.0-dev", released, false},
		{"release with unreleased changes", "0.1.0", dev, false},
		{"release not the newest", "0.1.0", released, false},
		{"release not listed", "0.3.0", released, false},
		{"undated release", "0.2.0", strings.Replace(released, " - 2026-03-01", "", 1), false},
		{"releases out of order", "0.2.0", strings.Replace(released, "[0.1.0]", "[9.9.9]", 1), false},
		{"Unreleased below a release", "0.2.0", "## [0.2.0] - 2026-03-01\n\n## [Unreleased]\n", false},
		{"no sections", "0.1.0-dev", "# Changelog\n", false},
	} {
		err := checkVersion(c.version, c.changelog)
		t.Logf("%s: %v", c.name, err)
		if (err == nil) != c.ok {
			t.Errorf("%s: checkVersion(%s) = %v, want ok=%v", c.name, c.version, err, c.ok)
		}
	}
}
