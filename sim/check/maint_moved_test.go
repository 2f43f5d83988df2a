package check

import (
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// TestMaintNoReplayAllowsMovedUnwritten: a MOVING handoff moves the commands the old connection
// never wrote, so a command of that connection written once, on the replacement, is no replay
// (Sends records writes, not acceptance); written on the old connection and again on the
// replacement, it is one.
func TestMaintNoReplayAllowsMovedUnwritten(t *testing.T) {
	s := time.Second
	notice := []record.MaintEvent{{Kind: record.MaintNotice, Conn: 1, Slot: 0, At: s, Notice: fsm.MaintMoving, Time: 2 * s}}
	moved := &record.Result{Maint: notice, Sends: []record.Send{{CmdID: 4, Conn: 1, At: s}, {CmdID: 9, Conn: 2, At: s + time.Millisecond}}}
	if v := (MaintNoReplay{}).Check(moved); len(v) != 0 {
		t.Errorf("a moved, never written command: %v", v)
	}
	resent := &record.Result{Maint: notice, Sends: append(moved.Sends[:2:2], record.Send{CmdID: 4, Conn: 2, At: 2 * s})}
	if v := (MaintNoReplay{}).Check(resent); len(v) != 1 {
		t.Errorf("a written command written again on the replacement: %v", v)
	}
}
