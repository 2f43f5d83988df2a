package client

import (
	"encoding/hex"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
)

// MaxClusterSeeds bounds Options.Endpoints with UseCluster.
const MaxClusterSeeds = fsm.MaxClusterSeeds

// ErrIncompleteTopology: a command that runs on every primary (FLUSHALL, DBSIZE, KEYS, SCRIPT
// LOAD, ...) needs a topology in which a known node serves every slot, and the client has
// none (yet). Nothing was sent. Match it with errors.Is.
var ErrIncompleteTopology = sentinel("respire: the command runs on every Cluster primary and needs a complete topology")

// CrossSlotError is a local rejection of a Cluster command whose keys map to different hash
// slots: a node would refuse it with CROSSSLOT, so respire refuses it before sending or
// queueing it, raw commands included. Give the keys one non-empty hash tag ({order:42}:items,
// {order:42}:total), or set Options.SplitCrossSlotCommands for MGET, MSET, DEL, UNLINK, EXISTS
// and TOUCH. It is not a *ServerError, and nothing retries it. Match it with errors.As.
type CrossSlotError struct {
	// CommandName is the rejected command ("MGET").
	CommandName string
	// ExpectedSlot is the slot of the command's first key; ConflictingSlot is the first other
	// slot found.
	ExpectedSlot, ConflictingSlot int
	// ConflictingKeyHex is the first key in ConflictingSlot, hex-encoded, when
	// Options.IncludeCrossSlotKeyContext is set; empty otherwise. It never appears in Error's
	// text. Keys may hold personal data: keep it out of general logs.
	ConflictingKeyHex string
}

// Error implements error. It names the command and the slots, never a key.
func (e *CrossSlotError) Error() string {
	return "respire: " + e.CommandName + " keys map to different Cluster slots (" + strconv.Itoa(e.ExpectedSlot) +
		" and " + strconv.Itoa(e.ConflictingSlot) + "); give them one hash tag, such as {order:42}"
}

// ClusterPartitionError reports that one group of a split cross-slot command failed (see
// Options.SplitCrossSlotCommands). The other groups may have succeeded, and a failed group may
// still have applied its write if its reply was lost: cross-slot requests are not atomic.
// Reconcile before compensating, and never blindly retry a whole failed write. Match it with
// errors.As; errors.Is and errors.As also reach Err.
type ClusterPartitionError struct {
	// CommandName is the split command ("MSET").
	CommandName string
	// Slot is the slot of the failed group.
	Slot int
	// Endpoint is the node the failed group went to, when known.
	Endpoint Endpoint
	// Err is the group's failure. When several groups failed, one of them.
	Err error
}

// Error implements error.
func (e *ClusterPartitionError) Error() string {
	msg := "respire: " + e.CommandName + " split across Cluster slots: the group of slot " + strconv.Itoa(e.Slot)
	if e.Endpoint != (Endpoint{}) {
		msg += " on " + e.Endpoint.String()
	}
	return msg + " failed; other groups may have been applied: " + plainText(e.Err)
}

// Unwrap returns the group's failure.
func (e *ClusterPartitionError) Unwrap() error { return e.Err }

// validateEndpoints checks Endpoints: exactly one for a standalone client, 1 to
// MaxClusterSeeds TCP endpoints with UseCluster.
func (o *Options) validateEndpoints() error {
	switch {
	case len(o.Endpoints) == 0 && o.UseCluster:
		return configErr("Endpoints", "a Cluster client needs at least one seed endpoint, got none")
	case len(o.Endpoints) == 0 && o.SentinelPrimaryName != "":
		return configErr("Endpoints", "a Sentinel client needs at least one Sentinel endpoint, got none")
	case len(o.Endpoints) == 0:
		return configErr("Endpoints", "a standalone client needs exactly one endpoint, got none")
	case len(o.Endpoints) > MaxClusterSeeds && o.UseCluster:
		return configErr("Endpoints", "a Cluster client takes at most "+strconv.Itoa(MaxClusterSeeds)+" seeds, got "+strconv.Itoa(len(o.Endpoints)))
	case len(o.Endpoints) > 1 && !o.UseCluster && o.SentinelPrimaryName == "":
		return configErr("Endpoints", "a standalone client takes exactly one endpoint, got "+strconv.Itoa(len(o.Endpoints))+
			" (set UseCluster for Cluster seeds)")
	}
	for i, ep := range o.Endpoints {
		switch {
		case ep.Host == "":
			return configErr("Endpoints", "endpoint host is empty")
		case ep.Port < 0 || ep.Port > 65535:
			return configErr("Endpoints", "endpoint port "+strconv.Itoa(ep.Port)+" is outside 1..65535")
		case o.UseCluster && ep.Port == 0:
			return configErr("Endpoints", "Cluster seed "+strconv.Itoa(i)+" is a Unix socket: Cluster nodes are TCP endpoints")
		case o.UseCluster && !validSeedHost(ep.Host):
			return configErr("Endpoints", "Cluster seed "+strconv.Itoa(i)+" has a host that is neither an IP address nor a host name")
		}
		for _, prev := range o.Endpoints[:i] {
			if o.UseCluster && fsm.MakeEndpoint(prev.Host, prev.Port) == fsm.MakeEndpoint(ep.Host, ep.Port) {
				return configErr("Endpoints", "Cluster seed "+strconv.Itoa(i)+" repeats an earlier one")
			}
		}
	}
	if !o.UseCluster && (o.SplitCrossSlotCommands || o.IncludeCrossSlotKeyContext) {
		return configErr("SplitCrossSlotCommands", "applies to Cluster clients only (set UseCluster)")
	}
	return nil
}

func validSeedHost(host string) bool {
	_, err := fsm.ParseHost(host)
	return err == nil
}

// clusterSeeds are the engine's Cluster seeds: the configured endpoints (nil without
// UseCluster). The shared resolver (engine/config) builds the rest of the Cluster configuration,
// as it does for a scenario.
func (o *Options) clusterSeeds() []engine.Endpoint {
	if !o.UseCluster {
		return nil
	}
	seeds := make([]engine.Endpoint, len(o.Endpoints))
	for i, e := range o.Endpoints {
		seeds[i] = e.engine()
	}
	return seeds
}

// testRetiredGrace, when set by a test (export_cluster_test.go), replaces the retired grace.
var testRetiredGrace time.Duration

// crossSlotError turns the engine's rejection into the public error, with the conflicting key
// when the application opted in.
func (c *Client) crossSlotError(cmd *engine.Command, e *engine.CrossSlotError) error {
	out := &CrossSlotError{CommandName: e.Command, ExpectedSlot: e.ExpectedSlot, ConflictingSlot: e.ConflictingSlot}
	if c.opts.IncludeCrossSlotKeyContext {
		if args, ok := engine.FrameArgs(cmd.Frame, nil); ok && e.KeyArg < len(args) {
			out.ConflictingKeyHex = hex.EncodeToString(args[e.KeyArg])
		}
	}
	return out
}

// endpointFor is the endpoint an error about cmd names: the Cluster node it went to, or the
// client's endpoint (a Cluster client's first seed).
func (c *Client) endpointFor(cmd *engine.Command) Endpoint {
	if s := cmd.Sender(); s != (engine.Endpoint{}) {
		return endpointOf(s)
	}
	return c.ep
}

// IsCluster reports whether the client is a Redis Cluster client (Options.UseCluster).
func (c *Client) IsCluster() bool { return c.opts.UseCluster }

// ClusterPrimaries returns the endpoints of the Cluster primaries the client routes to, in the
// order of their node numbers, or nil for a standalone client and before the first topology.
func (c *Client) ClusterPrimaries() []Endpoint {
	m := c.eng.ClusterMap()
	var out []Endpoint
	for _, i := range m.Primaries() {
		out = append(out, Endpoint{Host: m.Nodes[i].Addr.Host, Port: m.Nodes[i].Addr.Port})
	}
	return out
}
