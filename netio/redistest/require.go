package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// minMajorVersion is the oldest Redis major version the generated
// configurations work with (cluster-port and enable-debug-command are 7.0).
const minMajorVersion = 7

// binaries holds the resolved paths of the Redis executables, or the reason
// they cannot be used.
type binaries struct {
	server   string
	sentinel string
	cli      string
	version  string
	problem  string // empty when everything is usable
}

var (
	binOnce sync.Once
	bins    binaries
)

// lookupBinaries resolves the executables once per process.
func lookupBinaries() binaries {
	binOnce.Do(func() { bins = findBinaries(exec.LookPath) })
	return bins
}

func findBinaries(lookPath func(string) (string, error)) binaries {
	var b binaries
	var missing []string
	for _, x := range []struct {
		name string
		dst  *string
	}{
		{"redis-server", &b.server},
		{"redis-sentinel", &b.sentinel},
		{"redis-cli", &b.cli},
	} {
		p, err := lookPath(x.name)
		if err != nil {
			missing = append(missing, x.name)
			continue
		}
		*x.dst = p
	}
	if len(missing) > 0 {
		b.problem = fmt.Sprintf("%s not found on PATH", strings.Join(missing, ", "))
		return b
	}
	out, err := exec.Command(b.server, "--version").CombinedOutput()
	if err != nil {
		b.problem = fmt.Sprintf("%s --version failed: %v: %s", b.server, err, strings.TrimSpace(string(out)))
		return b
	}
	b.version = parseVersion(string(out))
	if major, ok := majorVersion(b.version); ok && major < minMajorVersion {
		b.problem = fmt.Sprintf("%s is Redis %s; redistest needs %d.0 or newer", b.server, b.version, minMajorVersion)
	}
	return b
}

// parseVersion extracts "7.0.15" from "Redis server v=7.0.15 sha=...".
func parseVersion(out string) string {
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return ""
}

func majorVersion(v string) (int, bool) {
	head, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(head)
	return n, err == nil
}

// RedisVersion returns the version reported by redis-server --version, such
// as "7.0.15", or "" when it is unavailable.
func RedisVersion() string {
	return lookupBinaries().version
}

// Require gates a test on the Redis binaries. When redis-server,
// redis-sentinel and redis-cli (7.0 or newer) are on PATH it returns and the
// test continues. Otherwise the test is skipped, unless the environment
// variable CI holds a true value ("true", "1", ...), in which case it fails:
// CI runs .ci/install-redis.sh first and must never silently skip tests
// against real servers.
//
// [Start], [StartSentinelGroup] and [StartCluster] call Require themselves.
func Require(t testing.TB) {
	t.Helper()
	if p := lookupBinaries().problem; p != "" {
		gate(t, p, os.Getenv("CI"))
	}
}

// gate fails or skips t because of problem, depending on the CI variable.
func gate(t testing.TB, problem, ci string) {
	t.Helper()
	if isCI, err := strconv.ParseBool(strings.TrimSpace(ci)); err == nil && isCI {
		t.Fatalf("redistest: %s; CI=%s requires real Redis servers: run .ci/install-redis.sh before the tests", problem, ci)
		return
	}
	t.Skipf("redistest: %s; skipping (run .ci/install-redis.sh to install Redis)", problem)
}
