package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/respire-go/respire/netio/resp"
)

// TestMultiOnClusterFails: a Cluster engine refuses a pipeline sent as one command, whichever
// way it is submitted: the command completes once with ErrMultiOnCluster inside an
// *AcquireError, as a definite failure, and nothing reaches a node. The group's other commands
// fail with it.
func TestMultiOnClusterFails(t *testing.T) {
	h := newClusterHarness(t, 3)
	if cmd := h.do("SET", "a", "1"); replyText(cmd) != "OK" {
		t.Fatalf("SET: %s", replyText(cmd))
	}
	submits := []struct {
		name   string
		submit func(cmds []*Command)
	}{
		{"Submit", func(cmds []*Command) { h.eng.Submit(cmds[0]) }},
		{"SubmitGroup", h.eng.SubmitGroup},
		{"SubmitGroupReadOwn", func(cmds []*Command) {
			if done, _ := h.eng.SubmitGroupReadOwn(context.Background(), cmds, nil); done {
				t.Error("SubmitGroupReadOwn read a group on a Cluster engine")
			}
		}},
	}
	for _, s := range submits {
		name, submit := s.name, s.submit
		t.Run(name, func(t *testing.T) {
			sent := h.sentCount()
			completions := map[*Command]int{}
			newCmd := func() *Command {
				cmd := &Command{Name: "PIPELINE", Frame: resp.AppendCommand(resp.AppendCommand(nil, "GET", "a"), "GET", "b")}
				cmd.Done = func(c *Command) { completions[c]++ }
				return cmd
			}
			m := newCmd()
			m.Multi = &Multi{}
			m.Multi.Reset(2)
			cmds := []*Command{m}
			if name != "Submit" {
				cmds = append(cmds, newCmd())
			}
			submit(cmds)
			h.eng.RunPending()
			for i, cmd := range cmds {
				var ae *AcquireError
				if completions[cmd] != 1 || !errors.Is(cmd.Err, ErrMultiOnCluster) || !errors.As(cmd.Err, &ae) || cmd.MaybeSent() {
					t.Fatalf("command %d: %d completions, err %v, maybe sent %v; want one definite ErrMultiOnCluster", i, completions[cmd], cmd.Err, cmd.MaybeSent())
				}
			}
			if !strings.HasPrefix(m.Err.Error(), "respire:") {
				t.Fatalf("error %q lacks the respire: prefix", m.Err)
			}
			if n := h.sentCount(); n != sent {
				t.Fatalf("%d frames reached the nodes", n-sent)
			}
		})
	}
}

// TestMultiReset: Reset sizes Replies to n, keeping each slot's storage when shrinking or
// growing; it forgets the arena's blocks (payloads handed out stay intact) and the counts of a
// previous run.
func TestMultiReset(t *testing.T) {
	var m Multi
	m.Reset(3)
	cmd := &Command{Multi: &m}
	for i := range 3 {
		if cmd.Pair() != (i == 2) {
			t.Fatalf("Pair on reply %d", i)
		}
		v := resp.Value{}
		wire := "$3\r\nabc\r\n"
		if i == 1 {
			wire = "*1\r\n$2\r\nxy\r\n" // an aggregate keeps the storage it was read into
		}
		if _, err := resp.Parse([]byte(wire), &v, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cmd.DeliverPart(&v, true); err != nil {
			t.Fatal(err)
		}
	}
	if m.Stored() != 3 || !cmd.Paired() {
		t.Fatalf("stored %d, paired %v", m.Stored(), cmd.Paired())
	}
	kept := m.Replies[0].Str
	storage := m.Replies[1].StorageSize()
	if storage == 0 {
		t.Fatal("the aggregate reply brought no storage: the test cannot tell it is kept")
	}
	m.Reset(2)
	if len(m.Replies) != 2 || m.Stored() != 0 || m.Arrived() != 0 || cmd.Paired() {
		t.Fatalf("after Reset(2): %d slots, stored %d, arrived %d, paired %v", len(m.Replies), m.Stored(), m.Arrived(), cmd.Paired())
	}
	if _, ok := m.Arena.String(kept); ok {
		t.Fatal("Reset kept the arena's blocks")
	}
	if string(kept) != "abc" {
		t.Fatalf("a payload handed out changed: %q", kept)
	}
	m.Reset(40)
	if len(m.Replies) != 40 || m.Replies[1].StorageSize() != storage {
		t.Fatalf("after Reset(40): %d slots, slot 1 storage %d (want %d kept)", len(m.Replies), m.Replies[1].StorageSize(), storage)
	}
}

// TestLeaveMulti: a caller leaving a pipeline reads the replies that arrived while it still owns
// the command (keep runs before it leaves, with Arrived), then leaves: true while it waited,
// false once the completion came first, whose replies are then judged from Stored.
func TestLeaveMulti(t *testing.T) {
	for _, completedFirst := range []bool{false, true} {
		var m Multi
		m.Reset(4)
		cmd := &Command{Multi: &m}
		for range 2 {
			cmd.Pair()
			v := resp.BulkString("v")
			if _, err := cmd.DeliverPart(&v, true); err != nil {
				t.Fatal(err)
			}
		}
		if completedFirst && !cmd.Answered() {
			t.Fatal("Answered on a waiting command")
		}
		calls := 0
		left := cmd.LeaveMulti(func(arrived int) {
			calls++
			if arrived != 2 {
				t.Fatalf("keep got %d replies, want the 2 that arrived", arrived)
			}
			if cmd.Left() {
				t.Fatal("keep ran after the caller left: the connection could have recycled the replies")
			}
		})
		if calls != 1 || left == completedFirst || cmd.Left() == completedFirst {
			t.Fatalf("completed first %v: keep called %d times, left %v", completedFirst, calls, left)
		}
	}
}
