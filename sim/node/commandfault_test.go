package node

import (
	"slices"
	"strings"
	"testing"

	"github.com/respire-go/respire/sim/scenario"
)

// faultEnv is a testEnv whose command faults are the given command_error faults.
type faultEnv struct {
	testEnv
	faults []scenario.CommandErrorFault
}

func (e *faultEnv) CommandError(name string, args [][]byte) (string, bool) {
	for i := range e.faults {
		if e.faults[i].Matches(name, args) {
			return e.faults[i].Reply, true
		}
	}
	return "", false
}

// TestCommandErrorFault: a command fault refuses exactly the commands and subcommands it names,
// keys matching its pattern only, without executing them; the others run as usual.
func TestCommandErrorFault(t *testing.T) {
	env := &faultEnv{faults: []scenario.CommandErrorFault{
		{Commands: []string{"GET"}, Keys: "k*", Reply: "BUSY busy"},
		{Commands: []string{"client setinfo", "SELECT"}, Reply: "NOPERM no"},
		{Commands: []string{"SET"}, Keys: "c?", Reply: "OOM full"},
	}}
	n := New("r1", "", env, &Plants{})
	c := &Conn{}
	l := &testLink{n: n, c: c}
	n.Accept(c, 7, l)
	l.send("SET", "k1", "v")                     // spared: the SET pattern is c?
	l.send("GET", "k1")                          // refused
	l.send("GET", "x1")                          // spared: the GET pattern is k*
	l.send("SET", "c1", "5")                     // refused, not executed
	l.send("GET", "c1")                          // spared: c1 was never set
	l.send("CLIENT", "SETINFO", "LIB-NAME", "x") // refused by the fault
	l.send("CLIENT", "SETNAME", "n")             // spared: another subcommand
	l.send("SELECT", "1")                        // refused
	n.Serve(c)
	got := l.replies(t)
	want := []string{"OK", "error BUSY busy", "null", "error OOM full", "null", "error NOPERM no", "OK", "error NOPERM no"}
	if len(got) != len(want) {
		t.Fatalf("replies %q", got)
	}
	for i := range want {
		if !strings.Contains(strings.ToLower(got[i]), strings.ToLower(strings.TrimPrefix(want[i], "error "))) {
			t.Fatalf("reply %d = %q, want %q (all: %q)", i, got[i], want[i], got)
		}
	}
	if !slices.Equal(env.applied, []string{"SET", "GET", "GET", "CLIENT"}) {
		t.Fatalf("applied %v: refused commands must not execute", env.applied)
	}
}
