package redistest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// recordingTB records Skip and Fatal calls instead of acting on them.
type recordingTB struct {
	testing.TB
	skipped string
	fatal   string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
}
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
}

func TestGate(t *testing.T) {
	for _, tc := range []struct {
		ci       string
		wantFail bool
	}{
		{"", false},
		{"false", false},
		{"0", false},
		{"yes", false}, // not a boolean: not treated as CI
		{"true", true},
		{"TRUE", true},
		{"1", true},
	} {
		r := &recordingTB{TB: t}
		gate(r, "redis-server not found on PATH", tc.ci)
		if tc.wantFail {
			if r.fatal == "" || r.skipped != "" {
				t.Errorf("CI=%q: fatal=%q skipped=%q, want a failure", tc.ci, r.fatal, r.skipped)
			}
			if !strings.Contains(r.fatal, ".ci/install-redis.sh") || !strings.Contains(r.fatal, "redis-server not found") {
				t.Errorf("CI=%q: failure message %q does not name the problem and the install script", tc.ci, r.fatal)
			}
		} else if r.skipped == "" || r.fatal != "" {
			t.Errorf("CI=%q: fatal=%q skipped=%q, want a skip", tc.ci, r.fatal, r.skipped)
		}
	}
}

func TestFindBinaries(t *testing.T) {
	missing := func(name string) (string, error) {
		if name == "redis-sentinel" {
			return "", errors.New("not found")
		}
		return "/nonexistent/" + name, nil
	}
	b := findBinaries(missing)
	if b.problem != "redis-sentinel not found on PATH" {
		t.Fatalf("problem = %q", b.problem)
	}

	if v := parseVersion("Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64"); v != "7.0.15" {
		t.Fatalf("parseVersion = %q", v)
	}
	if m, ok := majorVersion("6.2.14"); !ok || m != 6 {
		t.Fatalf("majorVersion = %d, %v", m, ok)
	}
}

func TestRequireWithRedisInstalled(t *testing.T) {
	Require(t) // skips, or fails under CI, when Redis is missing
	if b := lookupBinaries(); b.problem != "" || b.server == "" || b.sentinel == "" || b.cli == "" {
		t.Fatalf("binaries = %+v", b)
	}
	t.Logf("Redis %s", RedisVersion())
}
