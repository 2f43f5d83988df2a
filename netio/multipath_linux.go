package netio

import (
	"errors"
	"sync"
	"syscall"
)

// ipprotoMPTCP is Linux's IPPROTO_MPTCP.
const ipprotoMPTCP = 262

// multipathAvailable probes the kernel once.
var multipathAvailable = sync.OnceValue(func() bool {
	return multipathProbe(func() error {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, ipprotoMPTCP)
		if err == nil {
			_ = syscall.Close(fd)
		}
		return err
	})
})

// multipathProbe interprets the result of creating an MPTCP socket.
func multipathProbe(create func() error) bool {
	err := create()
	switch {
	case err == nil:
		return true
	case errors.Is(err, syscall.EPROTONOSUPPORT), errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.ENOPROTOOPT):
		return false
	}
	return true
}
