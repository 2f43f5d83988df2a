package sim

import (
	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
)

// A pipeline sent as one command (engine.Multi, the batchers' pipelines as Client.Pipeline sends
// them) carries one id per command in Multi.IDs. The simulator attributes each command on its
// own, as the checkers judge per command id: its frame is recorded as one frame per command
// (writeFrame's sends and the node's look-up), and each reply is recorded under the id of the
// command it answers (entryID). Production connections never read the ids.

// writeCommand writes cmd's frame on the up pipe: a pipeline with ids as one frame per command,
// each attributed to its own id; any other command as one frame under cmd.ID.
func (c *simConn) writeCommand(cmd *engine.Command, afterHandshake bool) {
	m := cmd.Multi
	if m == nil || m.IDs == nil {
		c.writeFrame(cmd.Frame, cmd.ID, afterHandshake)
		return
	}
	c.writeFrames(cmd.Frame, m.IDs, afterHandshake)
}

// writeFrames writes f, the frames of the commands ids back to back, as one frame per command.
func (c *simConn) writeFrames(f []byte, ids []uint64, afterHandshake bool) {
	for i, id := range ids {
		n := len(f)
		if i < len(ids)-1 {
			n = requestLen(f, &c.reqArgs)
		}
		c.writeFrame(f[:n], id, afterHandshake)
		f = f[n:]
	}
}

// writeAgain writes r, what a plant writes again (unanswered), whose replies no command awaits:
// they are swallowed.
func (c *simConn) writeAgain(r *replayFrame) {
	if r.ids != nil {
		c.writeFrames(r.frame, r.ids, true)
		c.swallow += len(r.ids)
		return
	}
	c.swallow++
	c.writeFrame(r.frame, r.id, true)
}

// unanswered returns what the replay-accepted and maint-resend-moving plants write again of cmd,
// written on a connection that failed or is closed: its frame; for a pipeline with ids, the
// frames of its commands that had no reply yet (nil if none is left).
func unanswered(cmd *engine.Command) *replayFrame {
	m := cmd.Multi
	if m == nil || m.IDs == nil {
		return &replayFrame{id: cmd.ID, frame: append([]byte(nil), cmd.Frame...)}
	}
	if m.Stored() >= len(m.IDs) {
		return nil
	}
	f := cmd.Frame
	var args [][]byte
	for range m.Stored() {
		f = f[requestLen(f, &args):]
	}
	ids := m.IDs[m.Stored():]
	return &replayFrame{id: ids[0], frame: append([]byte(nil), f...), ids: append([]uint64(nil), ids...)}
}

// entryID returns the id the reply being paired with cmd belongs to: for a pipeline with ids,
// that of its next reply's command (the replies stored so far come first, in order); otherwise
// cmd.ID.
func entryID(cmd *engine.Command) uint64 {
	if m := cmd.Multi; m != nil && m.IDs != nil && m.Stored() < len(m.IDs) {
		return m.IDs[m.Stored()]
	}
	return cmd.ID
}

// requestLen returns the length of the request at the start of f, parsed as a server parses it
// (resp.ParseCommand, the parser the simulated nodes run; args is its scratch); all of f when f
// does not start with a whole one.
func requestLen(f []byte, args *[][]byte) int {
	n, err := resp.ParseCommand(f, args, nil)
	if err != nil || n == 0 {
		return len(f)
	}
	return n
}
