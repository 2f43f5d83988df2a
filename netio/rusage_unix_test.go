//go:build unix

package netio_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used so far, user and system, every thread
// counted (benchmarks report it per operation: waiting for a core is not in it).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
