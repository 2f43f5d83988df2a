package sim

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/scenario"
)

// cachedDNS answers every name with one address: a client that resolved its node's name once
// and kept the answer, the negative control of TestRestartMovesAddress.
type cachedDNS string

func (c cachedDNS) LookupHost(context.Context, string) ([]string, error) {
	return []string{string(c)}, nil
}

// TestRestartMovesAddress: the node restarts at 10.0.0.9 and its name resolves there. The
// client, which resolves the name on every dial (engine.DialAddresses over the simulated DNS),
// is refused during the outage and reaches the node at its new address after the restart. Its
// negative control resolves to the node's first address for good: the old address refuses every
// dial after the move, and liveness fails.
func TestRestartMovesAddress(t *testing.T) {
	sc := mustLoad(t, "../scenarios/restart-moves-address.yaml")
	res := run(t, sc, sc.Seed, true)
	if v := check.Judge(res); !v.Pass() {
		t.Fatalf("violations %v", v.Unexpected)
	}
	killed, moved, refused, dialedAfter := -1, -1, 0, 0
	for i, l := range res.Trace {
		switch {
		case strings.Contains(l, "fault start") && strings.Contains(l, "kind=kill"):
			killed = i
		case strings.Contains(l, "fault moved"):
			if moved >= 0 || !strings.Contains(l, "node=r1") || !strings.Contains(l, "addr=10.0.0.9") || !strings.Contains(l, "t=5.") {
				t.Fatalf("unexpected move line %q (an earlier one at line %d)", l, moved)
			}
			moved = i
		case killed >= 0 && moved < 0 && strings.Contains(l, "conn failed") && strings.Contains(l, "connection refused"):
			refused++
		case moved >= 0 && strings.Contains(l, "conn dialed"):
			dialedAfter++
		}
	}
	if killed < 0 || moved < 0 || refused == 0 || dialedAfter == 0 {
		t.Fatalf("kill at line %d, move at line %d, %d dials refused between, %d connects after: want a kill, refusals, the move, then connects",
			killed, moved, refused, dialedAfter)
	}

	stale, err := Run(sc, sc.Seed, RunOptions{KeepTrace: true, resolver: cachedDNS("r1")})
	if err != nil {
		t.Fatal(err)
	}
	v := check.Judge(stale)
	if v.Pass() {
		t.Fatal("a client that kept the old address passed: the move is not observable")
	}
	for _, l := range stale.Trace[len(stale.Trace)/2:] {
		if strings.Contains(l, "conn dialed") {
			t.Fatalf("a dial to the old address connected after the move: %q", l)
		}
	}
}

// TestMoveRefusesConnectResolvedBefore: with a 400 ms one-way latency, connects whose name was
// resolved before the restart reach the node's old address after it moved, and are refused;
// only connects opened after the move reach it. Without the check of the node's moves at the
// SYN, they would be accepted at an address the node left.
func TestMoveRefusesConnectResolvedBefore(t *testing.T) {
	crossing := 0
	for lat := 300 * time.Millisecond; lat <= 900*time.Millisecond; lat += 100 * time.Millisecond {
		sc := mustLoad(t, "../scenarios/restart-moves-address.yaml")
		sc.Network.Latency = lat
		sc.Client.ConnectTimeout = 3 * time.Second
		sc.Client.CommandTimeout = 3 * time.Second
		sc.Expect.Liveness = nil
		sc.Client.Connect = scenario.ConnectLazy
		res := run(t, sc, sc.Seed, true)
		kill := sc.Faults[0].At.Min
		restart := kill + sc.Faults[0].Kill.RestartAfter.Min
		opened := map[string]time.Duration{} // conn id -> open time
		for _, l := range res.Trace {
			at, rest := lineTime(t, l)
			switch {
			case strings.HasPrefix(rest, "conn open "):
				opened[field(rest, "conn")] = at
			case strings.HasPrefix(rest, "conn dialed "):
				if o := opened[field(rest, "conn")]; o > kill && o < restart {
					t.Fatalf("latency %v: a connect opened at %v, before the move at %v, was accepted at %v", lat, o, restart, at)
				}
			case strings.HasPrefix(rest, "conn failed ") && strings.Contains(rest, "connection refused"):
				if o := opened[field(rest, "conn")]; o > kill && o < restart && o+lat > restart {
					crossing++ // its SYN reached the old address after the node moved
				}
			}
		}
	}
	if crossing == 0 {
		t.Fatal("no connect crossed the move: the test saw nothing to refuse")
	}
}

// lineTime splits a trace line "t=S.NNNNNNNNN rest" into its time and the rest.
func lineTime(t *testing.T, l string) (time.Duration, string) {
	ts, rest, _ := strings.Cut(strings.TrimPrefix(l, "t="), " ")
	f, err := strconv.ParseFloat(ts, 64)
	if err != nil {
		t.Fatalf("trace line %q: %v", l, err)
	}
	return time.Duration(f * float64(time.Second)), rest
}

// field returns the value of name=value in a trace line's rest.
func field(rest, name string) string {
	for _, w := range strings.Fields(rest) {
		if v, ok := strings.CutPrefix(w, name+"="); ok {
			return v
		}
	}
	return ""
}
