package node

// CommandFaults is implemented by an Env whose faults act on individual commands: an error reply
// instead of execution (a BUSY script, a LOADING replica, OOM, READONLY, MOVED), including the
// handshake's own steps (SELECT, CLIENT SETINFO). New looks for it once; an Env without it has
// no command faults.
type CommandFaults interface {
	// CommandError returns the error reply a fault makes the command args answer (name is its
	// canonical upper-case name; args[0] is the name as sent), if any. The command is then not
	// executed.
	CommandError(name string, args [][]byte) (string, bool)
}

// commandError answers the command in n.args with a command fault's error reply, if one
// applies, and reports whether it did.
func (n *Node) commandError(c *Conn, name string) bool {
	if n.cmdFaults == nil {
		return false
	}
	text, ok := n.cmdFaults.CommandError(name, n.args)
	if ok {
		n.errorReply(c, text)
	}
	return ok
}
