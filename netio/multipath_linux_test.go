package netio

import (
	"syscall"
	"testing"
)

// TestMultipathProbe interprets injected socket-creation results: the three errors of a kernel
// without MPTCP mean no, success means yes, and other errors are not evidence against support.
func TestMultipathProbe(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, true},
		{syscall.EPROTONOSUPPORT, false},
		{syscall.EINVAL, false},
		{syscall.ENOPROTOOPT, false},
		{&wrapped{syscall.ENOPROTOOPT}, false},
		{syscall.EMFILE, true},
		{syscall.EACCES, true},
	} {
		if got := multipathProbe(func() error { return c.err }); got != c.want {
			t.Errorf("socket error %v: supported %v, want %v", c.err, got, c.want)
		}
	}
}

type wrapped struct{ err error }

func (w *wrapped) Error() string { return "socket: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }
