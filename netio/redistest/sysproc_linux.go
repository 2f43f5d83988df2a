package redistest

import "syscall"

// sysProcAttr makes the kernel kill a Redis process when the test binary dies
// (for example on a test timeout), so no server outlives its test run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
