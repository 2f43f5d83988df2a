package redistest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain checks, after all tests, that no child process and no extra
// goroutine outlived them.
func TestMain(m *testing.M) {
	baseline := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		if kids := childProcesses(); len(kids) > 0 {
			fmt.Fprintf(os.Stderr, "leaked child processes: %s\n", strings.Join(kids, "; "))
			code = 1
		}
		if err := waitGoroutines(baseline, 5*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// childProcesses lists the live children of this process (Linux /proc only).
func childProcesses() []string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	me := os.Getpid()
	var kids []string
	for _, p := range stats {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may contain spaces.
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil && ppid == me {
			kids = append(kids, strings.TrimSpace(s[:i+1]))
		}
	}
	return kids
}

func waitGoroutines(baseline int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n := runtime.NumGoroutine()
		if n <= baseline {
			return nil
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			return fmt.Errorf("leaked goroutines: %d running, %d at start\n%s", n, baseline, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
