package client

import "github.com/respire-go/respire/fsm"

// SetReplicaOnStep has every read router created afterwards call fn with each step's event and
// effects (tests only; not concurrent with Create).
func SetReplicaOnStep(fn func(ev *fsm.RouterEvent, effects []fsm.RouterEffect)) { replicaOnStep = fn }

// ReplicaJournal returns the client's read-router journal and configuration inputs: the journal,
// whether it is complete, and the router's configuration.
func ReplicaJournal(c *Client) ([]fsm.RouterEvent, bool) {
	return c.replicas.cur.Load().router.Journal()
}

// ReplicaRouterConfig returns the configuration the client's read router was built with.
func ReplicaRouterConfig(c *Client) fsm.RouterConfig { return c.replicas.cur.Load().cfg }

// CompareEndpointsForTest orders endpoints as the Sentinel replica source does.
var CompareEndpointsForTest = compareEndpoints

// ReplicaSet returns the replicas of the client's current read generation (nil without one).
func ReplicaSet(c *Client) []Endpoint {
	if g := c.replicas.cur.Load(); g != nil {
		return append([]Endpoint(nil), g.eps[1:]...)
	}
	return nil
}
