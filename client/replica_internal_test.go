package client

import (
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/internal/command"
)

// TestReadableCommands: only read-only catalogue commands without a cursor follow the read
// policy; writes, unknown commands and cursors stay on the primary.
func TestReadableCommands(t *testing.T) {
	for _, tc := range []struct {
		name, sub string
		want      bool
	}{
		{"GET", "", true}, {"MGET", "", true}, {"XRANGE", "", true}, {"EVAL_RO", "", true},
		{"SET", "", false}, {"INCR", "", false}, {"EVAL", "", false},
		{"SCAN", "", false}, {"HSCAN", "", false}, {"SSCAN", "", false}, {"ZSCAN", "", false},
	} {
		if got := readable(command.Lookup(tc.name, tc.sub)); got != tc.want {
			t.Errorf("readable(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
	if readable(nil) {
		t.Error("an unknown command follows the read policy")
	}
}

// TestReadFromMatchesMachine: the client's policies keep the machine's numbering.
func TestReadFromMatchesMachine(t *testing.T) {
	for p := Primary; p <= AzAffinityReplicasAndPrimary; p++ {
		if got := fsm.ReadFrom(p).String(); got == "" || fsm.ReadFrom(p) >= fsm.ReadPolicies {
			t.Fatalf("policy %s has no machine counterpart", p)
		}
	}
	if int(AzAffinityReplicasAndPrimary)+1 != int(fsm.ReadPolicies) {
		t.Fatalf("client has %d policies, the machine %d", AzAffinityReplicasAndPrimary+1, fsm.ReadPolicies)
	}
	if fsm.ReadFrom(Nearest) != fsm.ReadNearest || fsm.ReadFrom(AzAffinity) != fsm.ReadAzAffinity {
		t.Fatal("the numbering differs")
	}
}
