package node

import (
	"strconv"
	"strings"
)

// RunID returns the node's run id, as INFO reports it: NodeID of its name for its first
// process, and a new one after each restart that asked for it (NewRunID). No part of the client
// reads a data node's run id; the simulator reports it so that a test or a reader of the trace
// can tell a restart of the same process from a new one.
func (n *Node) RunID() string {
	if n.runID == "" {
		return NodeID(n.id)
	}
	return n.runID
}

// NewRunID gives the node the run id of a new process: derived from its name and its number
// of such restarts, so that runs stay deterministic.
func (n *Node) NewRunID() {
	n.incarnation++
	n.runID = NodeID(n.id + "#" + strconv.Itoa(n.incarnation))
}

// infoServer is the INFO reply of a node outside a Sentinel group: its server section, whatever
// sections were asked for.
func (n *Node) infoServer() string {
	var b strings.Builder
	b.WriteString("# Server\r\nredis_version:7.0.0\r\nredis_mode:standalone\r\nrun_id:")
	b.WriteString(n.RunID())
	b.WriteString("\r\n")
	return b.String()
}
