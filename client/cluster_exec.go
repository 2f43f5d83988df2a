package client

import (
	"context"
	"sync"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
	"github.com/respire-go/respire/netio/topo"
)

// Commands of a Cluster client that are not one command to one node: cross-slot requests split
// by slot (Options.SplitCrossSlotCommands), and commands that run on every primary.

// splitKind says how a splittable command's arguments hold keys and how its replies combine.
type splitKind uint8

const (
	splitNone splitKind = iota
	// splitKeys: every argument is a key; integer replies are summed (DEL, UNLINK, EXISTS,
	// TOUCH).
	splitKeys
	// splitMGet: every argument is a key; the replies are reassembled in input order.
	splitMGet
	// splitMSet: key-value pairs; OK only if every group says OK.
	splitMSet
)

func splitKindOf(name string) splitKind {
	switch name {
	case "DEL", "UNLINK", "EXISTS", "TOUCH":
		return splitKeys
	case "MGET":
		return splitMGet
	case "MSET":
		return splitMSet
	}
	return splitNone
}

// widePolicy is how a command that runs on every primary combines their replies (Redis's
// request_policy all_shards or all_nodes, with its response_policy).
type widePolicy uint8

const (
	// wideAllSucceeded: the first reply when every primary succeeded, else the first error.
	wideAllSucceeded widePolicy = iota + 1
	// wideSum: integer replies summed.
	wideSum
	// wideConcat: array replies concatenated (KEYS, SLOWLOG GET).
	wideConcat
	// wideOneSucceeded: the first success, else the first error (SCRIPT KILL, FUNCTION KILL).
	wideOneSucceeded
	// wideAnd: array replies of 0/1 combined element by element with a logical and (SCRIPT
	// EXISTS).
	wideAnd
	// wideFirstFound: the first non-null reply (RANDOMKEY).
	wideFirstFound
)

// widePolicies are the commands the command table marks request_policy all_shards or all_nodes
// (COMMAND DOCS tips), except those whose replies only make sense per node (INFO, MEMORY STATS,
// LATENCY *: they run on one node) and the blocking WAIT. TestWidePoliciesMatchTheTable checks
// the list against the captured table.
var widePolicies = map[string]widePolicy{
	"CONFIG SET": wideAllSucceeded, "DBSIZE": wideSum, "FLUSHALL": wideAllSucceeded, "FLUSHDB": wideAllSucceeded,
	"FUNCTION DELETE": wideAllSucceeded, "FUNCTION FLUSH": wideAllSucceeded, "FUNCTION KILL": wideOneSucceeded,
	"FUNCTION LOAD": wideAllSucceeded, "FUNCTION RESTORE": wideAllSucceeded, "KEYS": wideConcat,
	"LATENCY RESET": wideAllSucceeded, "MEMORY PURGE": wideAllSucceeded, "PING": wideAllSucceeded,
	"RANDOMKEY": wideFirstFound, "SCRIPT EXISTS": wideAnd, "SCRIPT FLUSH": wideAllSucceeded,
	"SCRIPT KILL": wideOneSucceeded, "SCRIPT LOAD": wideAllSucceeded, "SLOWLOG GET": wideConcat,
	"SLOWLOG LEN": wideSum, "SLOWLOG RESET": wideAllSucceeded,
}

// executeCluster runs the calls of a Cluster client that are not one command to one node, and
// reports whether it did; every other call takes the ordinary path (execute).
func (c *Client) executeCluster(ctx context.Context, cl *call) (bool, error) {
	if p, ok := widePolicies[cl.cmd.Name]; ok {
		return true, c.executeWide(ctx, cl, p)
	}
	if c.routesClusterRead(cl) {
		if done, err := c.executeClusterRead(ctx, cl); done {
			return true, err
		}
	}
	if !c.opts.SplitCrossSlotCommands {
		return false, nil
	}
	kind := splitKindOf(cl.cmd.Name)
	if kind == splitNone {
		return false, nil
	}
	if _, err := engine.FrameSlot(cl.cmd.Frame); err == nil {
		return false, nil // one slot: one command
	}
	return true, c.executeSplit(ctx, cl, kind)
}

// group is one slot's share of a split command.
type group struct {
	slot int
	// keys are the indexes, among the command's keys, of the group's keys.
	keys []int
	cl   *call
	err  error
}

// executeSplit splits a cross-slot MGET, MSET, DEL, UNLINK, EXISTS or TOUCH into one command per
// slot, runs them concurrently and combines their replies into cl's, as if one command had
// run. A failed group fails the call with a *ClusterPartitionError after every group ended.
func (c *Client) executeSplit(ctx context.Context, cl *call, kind splitKind) error {
	args, ok := engine.FrameArgs(cl.cmd.Frame, nil)
	if !ok {
		c.putCall(cl)
		return configErr("args", "malformed command frame")
	}
	step := 1
	if kind == splitMSet {
		step = 2
	}
	var groups []*group
	bySlot := map[int]*group{}
	nkeys := (len(args) - 1) / step
	for i := 0; i < nkeys; i++ {
		slot := int(topo.KeySlot(args[1+i*step]))
		g := bySlot[slot]
		if g == nil {
			g = &group{slot: slot}
			bySlot[slot] = g
			groups = append(groups, g)
		}
		g.keys = append(g.keys, i)
	}
	name := cl.cmd.Name
	for _, g := range groups {
		g.cl = c.getCall()
		f := resp.AppendArrayHeader(g.cl.cmd.Frame[:0], 1+len(g.keys)*step)
		f = resp.AppendBulk(f, args[0])
		for _, k := range g.keys {
			for j := 0; j < step; j++ {
				f = resp.AppendBulk(f, args[1+k*step+j])
			}
		}
		// A group has fewer keys than the command: its reply is checked here, not by the shape.
		g.cl.cmd.Frame, g.cl.cmd.Name, g.cl.cmd.Expect = f, name, engine.Shape{}
	}
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.err = c.execute(ctx, g.cl)
			if g.err == nil {
				if err := c.replyErrAt(name, &g.cl.cmd.Reply, c.endpointFor(&g.cl.cmd)); err != nil {
					g.err = err
				}
			}
		}()
	}
	wg.Wait()
	defer func() {
		for _, g := range groups {
			if g.err == nil {
				c.putCall(g.cl)
			}
		}
	}()
	for _, g := range groups {
		if g.err != nil {
			c.putCall(cl)
			return &ClusterPartitionError{CommandName: name, Slot: g.slot, Endpoint: c.groupEndpoint(g), Err: g.err}
		}
	}
	switch kind {
	case splitMGet:
		out := make([]resp.Value, nkeys)
		for _, g := range groups {
			v := &g.cl.cmd.Reply
			if v.Len() != len(g.keys) {
				c.putCall(cl)
				return unexpected(name, v)
			}
			for j, e := range v.All() {
				out[g.keys[j]] = e.Clone()
			}
		}
		cl.cmd.Reply = resp.ArrayOf(out...)
	case splitMSet:
		cl.cmd.Reply = resp.SimpleString("OK")
	default:
		var sum int64
		for _, g := range groups {
			v := &g.cl.cmd.Reply
			if v.Kind != resp.KindInteger {
				c.putCall(cl)
				return unexpected(name, v)
			}
			sum += v.Int
		}
		cl.cmd.Reply = resp.Int(sum)
	}
	return nil
}

// executeWide runs a command on every primary and combines the replies by the command's policy.
// It needs a complete topology: with a slot no known node serves, it fails with
// ErrIncompleteTopology before sending anything.
func (c *Client) executeWide(ctx context.Context, cl *call, p widePolicy) error {
	m := c.eng.ClusterMap()
	if !m.Complete() {
		c.putCall(cl)
		return ErrIncompleteTopology
	}
	primaries := m.Primaries()
	calls := make([]*call, len(primaries))
	errs := make([]error, len(primaries))
	var wg sync.WaitGroup
	for i, idx := range primaries {
		sub := c.getCall()
		sub.cmd.Frame = append(sub.cmd.Frame[:0], cl.cmd.Frame...)
		sub.cmd.Name, sub.cmd.Expect, sub.node = cl.cmd.Name, cl.cmd.Expect, m.Nodes[idx].Num
		calls[i] = sub
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.execute(ctx, sub)
		}()
	}
	wg.Wait()
	name := cl.cmd.Name
	defer func() {
		for i, sub := range calls {
			if errs[i] == nil {
				c.putCall(sub)
			}
		}
	}()
	var first *resp.Value
	var firstErr error
	var sum int64
	var concat []resp.Value
	var and []int64
	for i, sub := range calls {
		if errs[i] != nil {
			if firstErr == nil {
				firstErr = errs[i]
			}
			continue
		}
		v := &sub.cmd.Reply
		if v.IsError() {
			if firstErr == nil {
				firstErr = c.replyErrAt(name, v, c.endpointFor(&sub.cmd))
			}
			continue
		}
		if first == nil {
			first = v
		}
		switch p {
		case wideSum:
			sum += v.Int
		case wideConcat:
			for _, e := range v.All() {
				concat = append(concat, e.Clone())
			}
		case wideAnd:
			for j, e := range v.All() {
				if j >= len(and) {
					and = append(and, 1)
				}
				if e.Int == 0 {
					and[j] = 0
				}
			}
		case wideFirstFound:
			if first.IsNull() && !v.IsNull() {
				first = v
			}
		}
	}
	switch {
	case p == wideOneSucceeded && first != nil:
	case firstErr != nil:
		c.putCall(cl)
		return firstErr
	case first == nil:
		c.putCall(cl)
		return ErrIncompleteTopology
	}
	switch p {
	case wideSum:
		cl.cmd.Reply = resp.Int(sum)
	case wideConcat:
		cl.cmd.Reply = resp.ArrayOf(concat...)
	case wideAnd:
		out := make([]resp.Value, len(and))
		for j, x := range and {
			out[j] = resp.Int(x)
		}
		cl.cmd.Reply = resp.ArrayOf(out...)
	default:
		cl.cmd.Reply = first.Clone()
	}
	return nil
}

// ErrTxRetry: a watched transaction met a Cluster redirect or a read-only replica (MOVED, ASK,
// READONLY): its keys moved. Nothing of it is replayed on another connection: restart WATCH and
// re-read the inputs. Match it with errors.Is; errors.As reaches the *TransactionRetryError.
var ErrTxRetry = sentinel("respire: watched transaction must be retried: its keys moved in the Cluster")

// TransactionRetryError reports a watched transaction that a Cluster node rejected with MOVED,
// ASK or READONLY. Nothing was applied: the rejection came before EXEC ran anything. It keeps
// the rejecting node's endpoint and its error; errors.Is(err, ErrTxRetry) matches it.
type TransactionRetryError struct {
	// Endpoint is the node that rejected the transaction.
	Endpoint Endpoint
	// Err is the rejection.
	Err *ServerError
}

// Error implements error.
func (e *TransactionRetryError) Error() string {
	return "respire: watched transaction must be retried after a Cluster redirect: " + plainText(e.Err)
}

// Unwrap returns the rejection.
func (e *TransactionRetryError) Unwrap() error { return e.Err }

// Is matches ErrTxRetry.
func (e *TransactionRetryError) Is(target error) bool { return target == ErrTxRetry }

// txRetry turns a MOVED, ASK or READONLY rejection of a watched transaction into a
// *TransactionRetryError; any other error is returned as it is.
func txRetry(err error) error {
	var se *ServerError
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code {
	case "MOVED", "ASK", "READONLY":
		return &TransactionRetryError{Endpoint: se.Endpoint, Err: se}
	}
	return err
}

// slotOfKeys returns the Cluster slot of keys, or a *CrossSlotError naming command.
func slotOfKeys(command string, keys []string) (int, error) {
	if len(keys) == 0 {
		return engine.Keyless, nil
	}
	slot := int(topo.KeySlotString(keys[0]))
	for _, k := range keys[1:] {
		if s := int(topo.KeySlotString(k)); s != slot {
			return 0, &CrossSlotError{CommandName: command, ExpectedSlot: slot, ConflictingSlot: s}
		}
	}
	return slot, nil
}

// DedicatedFor rents a dedicated connection to the Cluster node serving key's slot (on a
// standalone client, it is Dedicated). Blocking commands and watched transactions must run on
// the node that holds their keys.
func (c *Client) DedicatedFor(ctx context.Context, key string) (*DedicatedConn, error) {
	return c.dedicatedSlot(ctx, int(topo.KeySlotString(key)))
}

// withRented runs fn on the rented d and gives d back: discarded if fn panics, else closed (kept
// for reuse when healthy). WithDedicated and the Cluster rents share it.
func (c *Client) withRented(d *DedicatedConn, fn func(d *DedicatedConn) error) (err error) {
	finished := false
	defer func() {
		if !finished {
			d.discard()
			return
		}
		_ = d.Close()
	}()
	err = fn(d)
	finished = true
	return err
}

// slotOfCall returns the slot of an encoded call for a Cluster client.
func slotOfCall(cl *call) (int, error) { return engine.FrameSlot(cl.cmd.Frame) }

// groupEndpoint is the node a failed group went to: the server that rejected it, else the node
// serving its slot in the client's map.
func (c *Client) groupEndpoint(g *group) Endpoint {
	var se *ServerError
	if errors.As(g.err, &se) {
		return se.Endpoint
	}
	m := c.eng.ClusterMap()
	if i := m.Owner(g.slot); i >= 0 {
		return Endpoint{Host: m.Nodes[i].Addr.Host, Port: m.Nodes[i].Addr.Port}
	}
	return Endpoint{}
}

// claimShardSlot checks that shard channels share one slot with every shard channel the client
// subscribed before: a Cluster client's sharded subscriptions live on one connection, to the
// node serving that slot.
func (c *Client) claimShardSlot(channels []string) error {
	slot, err := slotOfKeys("SSUBSCRIBE", channels)
	if err != nil || slot < 0 {
		return err
	}
	if c.shardSlot.CompareAndSwap(-1, int32(slot)) {
		return nil
	}
	if have := int(c.shardSlot.Load()); have != slot {
		return &CrossSlotError{CommandName: "SSUBSCRIBE", ExpectedSlot: have, ConflictingSlot: slot}
	}
	return nil
}

// rentFor returns how a blocking call rents its dedicated connection: any connection of a
// standalone client; on a Cluster client, one to the node serving the call's slot (a
// *CrossSlotError when its keys span slots). A redirect would need the call sent again, which
// a pooled call consumed by its first attempt cannot be: it runs once.
func (c *Client) rentFor(cl *call) (func(context.Context, func(*DedicatedConn) error) error, error) {
	if c.routesBlockingRead(cl) {
		return c.replicaRent(cl), nil // replica_blocking.go
	}
	if !c.opts.UseCluster {
		return c.WithDedicated, nil
	}
	slot, err := slotOfCall(cl)
	if err != nil {
		var cse *engine.CrossSlotError
		if errors.As(err, &cse) {
			return nil, c.crossSlotError(&cl.cmd, cse)
		}
		return nil, err
	}
	return func(ctx context.Context, fn func(d *DedicatedConn) error) error {
		d, err := c.dedicatedSlot(ctx, slot)
		if err != nil {
			return err
		}
		err = c.withRented(d, fn)
		var se *ServerError
		if errors.As(err, &se) && se.Code == "MOVED" {
			// The command did not run: the caller may run it again, and the map learns the
			// move now so that the next rent goes to the new owner.
			c.eng.NoteMoved(se.Message)
		}
		return err
	}, nil
}
