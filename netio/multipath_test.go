package netio

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/respire-go/respire/engine"
)

// TestPlanMultipath checks the decision with injected kernel probes, for every branch.
func TestPlanMultipath(t *testing.T) {
	yes := func() bool { return true }
	no := func() bool { return false }
	asked := false
	spy := func() bool { asked = true; return true }
	for _, c := range []struct {
		requested bool
		available func() bool
		want      multipathPlan
	}{
		{false, yes, multipathOff},
		{false, no, multipathOff},
		{true, yes, multipathOn},
		{true, no, multipathFallback},
	} {
		if got := planMultipath(c.requested, c.available); got != c.want {
			t.Errorf("requested %v, available %v: plan %v, want %v", c.requested, c.available(), got, c.want)
		}
	}
	if planMultipath(false, spy); asked {
		t.Error("the kernel was probed although MPTCP was not requested")
	}
}

// TestMultipathDialBranch dials a loopback listener with MultipathTCP on whatever this kernel
// supports, and checks the branch it takes: with kernel support the dial asks for MPTCP, reports
// no fallback, and the connection is MPTCP when the listener is MPTCP too (an ordinary listener
// makes the kernel continue over plain TCP, silently: still no fallback); without support the
// dial uses TCP and reports the fallback on every dial. Custom dialers and Unix sockets never
// report one.
func TestMultipathDialBranch(t *testing.T) {
	available := MultipathTCPAvailable()
	t.Logf("kernel Multipath TCP available: %v", available)
	for _, mptcpListener := range []bool{false, true} {
		var lc net.ListenConfig
		lc.SetMultipathTCP(mptcpListener)
		l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close()
			}
		}()
		var fallbacks atomic.Int32
		d := Dialer{MultipathTCP: true, MultipathFallback: func() { fallbacks.Add(1) }}
		addr := l.Addr().(*net.TCPAddr)
		nc, err := d.DialContext(context.Background(), engine.Endpoint{Host: "127.0.0.1", Port: addr.Port})
		if err != nil {
			t.Fatal(err)
		}
		used, err := nc.(*net.TCPConn).MultipathTCP()
		_ = nc.Close()
		switch {
		case available && fallbacks.Load() != 0:
			t.Fatalf("listener mptcp=%v: fallback reported although the kernel supports MPTCP", mptcpListener)
		case !available && fallbacks.Load() != 1:
			t.Fatalf("listener mptcp=%v: %d fallbacks reported, want 1", mptcpListener, fallbacks.Load())
		case available && mptcpListener && (err != nil || !used):
			t.Fatalf("MPTCP to an MPTCP listener not in use: %v, %v", used, err)
		case !available && used:
			t.Fatal("MPTCP in use although the kernel lacks it")
		}
	}

	// A custom dialer takes precedence and a Unix socket ignores the option: no fallback either way.
	var fallbacks atomic.Int32
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d := Dialer{MultipathTCP: true, MultipathFallback: func() { fallbacks.Add(1) },
		Dial: func(ctx context.Context, _ engine.Endpoint) (net.Conn, error) {
			var nd net.Dialer
			return nd.DialContext(ctx, "tcp", l.Addr().String())
		}}
	if nc, err := d.DialContext(context.Background(), engine.Endpoint{Host: "cache", Port: 1}); err != nil {
		t.Fatal(err)
	} else {
		_ = nc.Close()
	}
	path := t.TempDir() + "/s"
	ul, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	d.Dial = nil
	if nc, err := d.DialContext(context.Background(), engine.Endpoint{Host: path}); err != nil {
		t.Fatal(err)
	} else {
		_ = nc.Close()
	}
	if fallbacks.Load() != 0 {
		t.Fatalf("%d fallbacks reported for a custom dialer or a Unix socket", fallbacks.Load())
	}
}
