package node

// Maintenance notifications: a node acknowledges CLIENT MAINT_NOTIFICATIONS ON when its Env says
// the deployment is a managed service that sends them (MaintEnv), and marks the connection
// (Session.Maint) so that the world sends it the scripted notices. Any other node answers the
// subcommand as Redis 7.0 does, with an unknown-subcommand error.

// MaintEnv is implemented by an Env whose nodes send maintenance notifications.
type MaintEnv interface {
	// MaintNotifications reports whether the nodes acknowledge CLIENT MAINT_NOTIFICATIONS.
	MaintNotifications() bool
}

// maintAcks reports whether the node acknowledges the maintenance opt-in.
func (n *Node) maintAcks() bool {
	m, ok := n.env.(MaintEnv)
	return ok && m.MaintNotifications()
}

// maintOptIn answers CLIENT MAINT_NOTIFICATIONS ON|OFF on a node that acknowledges it.
func (n *Node) maintOptIn(c *Conn, args [][]byte) {
	switch {
	case len(args) != 3:
		n.arity(c, "CLIENT|MAINT_NOTIFICATIONS")
	case eqFold(args[2], "ON"):
		c.Session.Maint = true
		n.reply(c, replyOK)
	case eqFold(args[2], "OFF"):
		c.Session.Maint = false
		n.reply(c, replyOK)
	default:
		n.errorReply(c, "ERR syntax error")
	}
}

// ShareData makes n serve from's dataset of strings (not its lists): the target of a MOVING
// notice is the same data at a new endpoint.
func (n *Node) ShareData(from *Node) { n.dbs = from.dbs }
