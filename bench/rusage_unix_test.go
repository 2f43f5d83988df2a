//go:build unix

package bench

import (
	"syscall"
	"time"
)

// contextSwitches returns the voluntary context switches of the process so far, every thread
// counted: how often its threads went to sleep, each one a later wakeup. A hand-off between
// goroutines that parks one thread and wakes another adds to it; on a busy machine every wakeup
// waits for a core, so this count tells the clients apart even when their timings are noisy.
func contextSwitches() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Nvcsw
}

// cpuTime returns the CPU time the process has used so far, user and system, every thread
// counted. Divided by the operations, it is what a client costs in CPU per operation: on a
// machine whose cores other work also takes, it moves far less than the wall time does, because
// the time spent waiting for a core is not in it. The server's CPU is not in it either.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
