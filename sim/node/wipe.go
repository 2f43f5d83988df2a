package node

// Wipe empties every database of the node: its strings, counters and lists, as a server
// without persistence loses them when it dies (a kill fault with lose_data). Blocked clients
// were reset with their connections by the kill.
func (n *Node) Wipe() {
	for i := range n.dbs {
		n.dbs[i] = make(map[string]*entry)
		n.lists.dbs[i] = nil
	}
}
