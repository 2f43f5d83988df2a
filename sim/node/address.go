package node

import "strconv"

// SetAnnounced sets the address the node's deployment announces for it: in a Cluster's CLUSTER
// SLOTS and its MOVED and ASK redirects (unless its shard has an endpoint name), and in its
// Sentinels' replies naming it as the primary. Empty (the default) announces its name, which the
// simulated DNS resolves. A node that moves to a new address (a kill with move_to) announces the
// new one from its restart on, as a real node announces its own IP.
func (n *Node) SetAnnounced(addr string) { n.announced = addr }

// Announced returns the address the node's deployment announces for it: the one SetAnnounced
// set, or its name.
func (n *Node) Announced() string {
	if n.announced != "" {
		return n.announced
	}
	return n.id
}

// SetSentinelAddresses gives a Sentinel the addresses to announce for the data nodes it names
// (by id): GET-MASTER-ADDR-BY-NAME and MASTER report addr(id) for the primary of its view. Nil
// (the default) reports the ids themselves.
func (n *Node) SetSentinelAddresses(addr func(id string) string) {
	if n.sn != nil {
		n.sn.addrOf = addr
	}
}

// primaryAddr is the address a Sentinel announces for its view's primary.
func (s *sentinelRole) primaryAddr() string {
	if s.addrOf != nil {
		return s.addrOf(s.view.Primary)
	}
	return s.view.Primary
}

// MoveSentinelPrimary is a Sentinel's reconfiguration when the primary of its view, still the
// primary, comes back at another address: the view takes configuration epoch epoch, and the
// Sentinel publishes +switch-master from the old address to the new one (a client's fence then
// takes the new address as a newer configuration). It does nothing on other nodes, on a
// Sentinel whose view names another primary, or on a Sentinel that is down (it publishes
// nothing; its view still changes, as it learns the configuration when it comes back).
func (n *Node) MoveSentinelPrimary(primary string, epoch uint64, oldAddr, newAddr string) {
	if n.sn == nil || !n.sn.sentinel || n.sn.view.Primary != primary {
		return
	}
	n.sn.view.Epoch = max(n.sn.view.Epoch, epoch)
	if !n.down {
		p := strconv.Itoa(n.sn.primaryPort())
		n.Announce("+switch-master", n.sn.name+" "+oldAddr+" "+p+" "+newAddr+" "+p)
	}
}
