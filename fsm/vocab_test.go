package fsm

import (
	"strings"
	"testing"
)

// TestIDsPrintTheirMachineAndNumber: connection and timer ids print as the machine and a small
// number, never as the raw value with the machine in its top bits.
func TestIDsPrintTheirMachineAndNumber(t *testing.T) {
	cases := []struct {
		id   uint64
		want string
	}{
		{7, "7"},
		{IDBase(MachinePool) + 1, "dedicated#1"},
		{IDBase(MachinePubSub) + 3, "pubsub#3"},
		{IDBase(MachineShardedPubSub) + 12, "sharded-pubsub#12"},
		{IDBase(MachineCluster) + 5, "cluster#5"},
		{NodeIDBase(MachineNodeMux, 3) + 7, "n3.7"},
		{NodeIDBase(MachineNodePool, MaxNodeNumber) + 2, "n1048575.dedicated#2"},
		{IDBase(MachineSentinel) + 1, "sentinel#1"},
		{IDBase(MachineSentinelMonitor) + 2, "sentinel-monitor#2"},
		{IDBase(MachineFence) + 3, "fence#3"},
		{IDBase(Machine(14)) + 4, "machine14#4"},
	}
	for _, c := range cases {
		if got := ConnID(c.id).String(); got != c.want {
			t.Errorf("ConnID(%d) = %q, want %q", c.id, got, c.want)
		}
		if got := TimerID(c.id).String(); got != c.want {
			t.Errorf("TimerID(%d) = %q, want %q", c.id, got, c.want)
		}
	}
	pool := ConnID(IDBase(MachinePool) + 2)
	lines := []string{
		(&Effect{Kind: Dial, Slot: -1, Conn: pool, Attempt: 1}).String(),
		(&Effect{Kind: ArmTimer, Timer: TimerID(IDBase(MachinePool) + 3)}).String(),
		(&Event{Kind: ConnLost, Conn: pool}).String(),
		(&Event{Kind: TimerFired, Timer: TimerID(IDBase(MachinePool) + 3)}).String(),
	}
	want := []string{"dial conn=dedicated#2 attempt=1", "arm-timer timer=dedicated#3 after=0s", "conn-lost conn=dedicated#2", "timer-fired timer=dedicated#3"}
	for i, line := range lines {
		if !strings.Contains(line, want[i]) {
			t.Errorf("trace line %q lacks %q", line, want[i])
		}
	}
}
