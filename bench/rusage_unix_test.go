//go:build unix

package bench

import "syscall"

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
