package scenario

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/engine/config"
)

// Validate reports the first invalid field of sc as a *Error. Defaults must have been
// applied (Parse and Resolve do).
func (sc *Scenario) Validate() error {
	switch {
	case strings.TrimSpace(sc.Name) == "":
		return fieldErr("name", "is required")
	case sc.Duration <= 0:
		return fieldErr("duration", "must be positive")
	}
	if err := sc.validateBounds(); err != nil {
		return err
	}
	if err := sc.validateTopology(); err != nil {
		return err
	}
	switch n := &sc.Network; {
	case n.Latency < 0:
		return fieldErr("network.latency", "must not be negative")
	case n.Jitter < 0:
		return fieldErr("network.jitter", "must not be negative")
	case n.SendBuffer < 0:
		return fieldErr("network.send_buffer", "must not be negative")
	case sc.Runtime.LoopLag < 0 || sc.Runtime.LoopLag > MaxLoopLag:
		return fieldErr("runtime.loop_lag", "must be between 0 and "+MaxLoopLag.String())
	}
	if err := sc.validateClient(); err != nil {
		return err
	}
	for i := range sc.Faults {
		if err := sc.validateFault(i); err != nil {
			return err
		}
	}
	if err := sc.validateMoves(); err != nil {
		return err
	}
	if err := sc.validateMaint(); err != nil {
		return err
	}
	if err := sc.validateView(); err != nil {
		return err
	}
	if err := sc.validateReplication(); err != nil {
		return err
	}
	if err := sc.validateWorkload(); err != nil {
		return err
	}
	if err := sc.validateActions(); err != nil {
		return err
	}
	if err := sc.validateDedicated(); err != nil {
		return err
	}
	if err := sc.validateBatches(); err != nil {
		return err
	}
	if err := sc.validatePubSub(); err != nil {
		return err
	}
	if err := sc.validateExpect(); err != nil {
		return err
	}
	if err := sc.validateWindows(); err != nil {
		return err
	}
	if err := sc.validateVary(); err != nil {
		return err
	}
	for i, p := range sc.Plant {
		if !slices.Contains(knownPlants, p) {
			var names []string
			for _, k := range knownPlants {
				names = append(names, string(k))
			}
			return fieldErr("plant["+strconv.Itoa(i)+"]", "unknown plant "+strconv.Quote(string(p))+
				" (want one of "+strings.Join(names, ", ")+")")
		}
	}
	return nil
}

func (sc *Scenario) validateTopology() error {
	t := &sc.Topology
	switch {
	case t.Kind != TopologyStandalone && t.Kind != TopologyCluster && t.Kind != TopologySentinel:
		return fieldErr("topology.kind", "unsupported kind "+strconv.Quote(t.Kind)+" (want standalone, cluster or sentinel)")
	case t.Kind != TopologySentinel && t.Sentinel != nil:
		return fieldErr("topology.sentinel", "needs kind sentinel")
	case t.Kind == TopologySentinel && (t.Cluster != nil || sc.Client.UseCluster):
		return fieldErr("topology.cluster", "a sentinel topology is not a Cluster")
	case t.Kind == TopologyStandalone && (len(t.Nodes) == 0 || !sc.movingTargetsOnly()):
		return fieldErr("topology.nodes", "a standalone topology has exactly one node (and the targets of its MOVING notices)")
	case t.Kind == TopologyStandalone && t.Cluster != nil:
		return fieldErr("topology.cluster", "needs kind cluster")
	case t.Kind == TopologyStandalone && sc.Client.UseCluster:
		return fieldErr("client.use_cluster", "needs a cluster topology")
	}
	seen := map[string]bool{}
	for i, n := range t.Nodes {
		f := "topology.nodes[" + strconv.Itoa(i) + "].id"
		if n.ID == "" || strings.ContainsAny(n.ID, " \t\r\n:") {
			return fieldErr(f, "must be a non-empty name without spaces or colons")
		}
		if seen[n.ID] {
			return fieldErr(f, "duplicate node id "+strconv.Quote(n.ID))
		}
		seen[n.ID] = true
	}
	if t.Kind == TopologyCluster {
		return sc.validateCluster()
	}
	if t.Kind == TopologySentinel {
		return sc.validateSentinel()
	}
	return nil
}

func (sc *Scenario) validateTarget(field string, t *Target, slotAllowed bool) error {
	hasNode, hasSlot := t.Node != "", t.ClientSlot != nil
	switch {
	case hasNode && hasSlot:
		return fieldErr(field, "set node or client_slot, not both")
	case !hasNode && !hasSlot && slotAllowed:
		return fieldErr(field, "needs a target: node or client_slot")
	case !hasNode && !hasSlot:
		return fieldErr(field+".node", "is required")
	case hasSlot && sc.IsCluster():
		return fieldErr(field+".client_slot", "a Cluster client's slots are per node: target a node")
	case hasSlot && !slotAllowed:
		return fieldErr(field+".client_slot", "this fault targets a node only")
	case hasSlot && (*t.ClientSlot < 0 || *t.ClientSlot >= sc.Client.Connections):
		return fieldErr(field+".client_slot", "must be a slot in [0, client.connections)")
	}
	if hasNode && sc.node(t.Node) < 0 {
		return fieldErr(field+".node", "unknown node "+strconv.Quote(t.Node))
	}
	return nil
}

func (sc *Scenario) node(id string) int {
	for i := range sc.Topology.Nodes {
		if sc.Topology.Nodes[i].ID == id {
			return i
		}
	}
	return -1
}

func validateSpan(field string, r *TimeRange, positive bool) error {
	if r.Min < 0 {
		return fieldErr(field, "must not be negative")
	}
	if positive && r.Min <= 0 {
		return fieldErr(field, "must be positive")
	}
	if r.Max < r.Min {
		return fieldErr(field, "range ends before it starts")
	}
	return nil
}

func (sc *Scenario) validateFault(i int) error {
	f := &sc.Faults[i]
	base := "faults[" + strconv.Itoa(i) + "]"
	kinds := f.kinds()
	if len(kinds) == 0 {
		return fieldErr(base, "needs one fault kind (one of "+strings.Join(FaultKinds, ", ")+")")
	}
	if len(kinds) > 1 {
		return fieldErr(base, "has several fault kinds ("+strings.Join(kinds, ", ")+"); use one entry each")
	}
	if err := validateSpan(base+".at", &f.At, false); err != nil {
		return err
	}
	if f.At.Max >= sc.Duration {
		return fieldErr(base+".at", "must be before the end of the run ("+sc.Duration.String()+")")
	}
	if f.Every != nil {
		if err := validateSpan(base+".every", f.Every, true); err != nil {
			return err
		}
		if f.Every.Min < time.Millisecond {
			return fieldErr(base+".every", "must be at least 1ms")
		}
	}
	switch {
	case f.Count < 0:
		return fieldErr(base+".count", "must not be negative")
	case f.Count > 0 && f.Every == nil:
		return fieldErr(base+".count", "repeats a fault: set every too")
	}
	field := base + "." + kinds[0]
	span := func(name string, r *TimeRange) error { // an optional window: positive
		if r == nil {
			return nil
		}
		return validateSpan(field+"."+name, r, true)
	}
	target := func(t Target, slotAllowed bool) error { return sc.validateTarget(field, &t, slotAllowed) }
	switch {
	case f.Refuse != nil:
		return firstError(target(f.Refuse.Target, true), span("for", f.Refuse.For))
	case f.Blackhole != nil:
		var dir error
		switch f.Blackhole.Direction {
		case "", DirectionBoth, DirectionToNode, DirectionToClient:
		default:
			dir = fieldErr(field+".direction", "must be both, to_node or to_client, not "+strconv.Quote(f.Blackhole.Direction))
		}
		return firstError(target(f.Blackhole.Target, true), span("for", f.Blackhole.For), dir)
	case f.AcceptThenDrop != nil:
		x := f.AcceptThenDrop
		var after error
		if x.After != nil {
			after = validateSpan(field+".after", x.After, false)
		}
		return firstError(target(x.Target, true), span("for", x.For), after)
	case f.Drop != nil:
		return target(*f.Drop, true)
	case f.DropAfterBytes != nil:
		var bytes error
		if f.DropAfterBytes.Bytes.Min < 1 {
			bytes = fieldErr(field+".bytes", "must be at least 1")
		}
		return firstError(target(f.DropAfterBytes.Target, true), bytes)
	case f.LoseReply != nil:
		return target(*f.LoseReply, true)
	case f.Delay != nil:
		return firstError(target(f.Delay.Target, true), span("for", f.Delay.For), validateSpan(field+".extra", &f.Delay.Extra, true))
	case f.Kill != nil:
		if f.Kill.NewRunID && f.Kill.RestartAfter == nil {
			return fieldErr(base+".kill.new_run_id", "needs restart_after: a node that never restarts gets no new run id")
		}
		if err := sc.validateMoveTo(base+".kill.move_to", f.Kill); err != nil {
			return err
		}
		return firstError(target(Target{Node: f.Kill.Node}, false), span("restart_after", f.Kill.RestartAfter))
	case f.HandshakeError != nil:
		x := f.HandshakeError
		var reply error
		if !isErrorReply(x.Reply) {
			reply = fieldErr(field+".reply", "must be an error reply starting with an upper-case code, such as \"LOADING Redis is loading the dataset in memory\"")
		}
		return firstError(target(Target{Node: x.Node}, false), reply, span("for", x.For))
	case f.Pause != nil:
		return firstError(target(Target{Node: f.Pause.Node}, false), span("for", f.Pause.For))
	case f.SubscribeError != nil:
		x := f.SubscribeError
		var kinds, reply error
		for j, k := range x.Kinds {
			if _, ok := TopicKind(k); (!ok || k == "") && kinds == nil {
				kinds = fieldErr(field+".kinds["+strconv.Itoa(j)+"]", "must be channel, pattern or shard")
			}
		}
		if x.Reply != "" && !isErrorReply(x.Reply) {
			reply = fieldErr(field+".reply", "must be an error reply starting with an upper-case code")
		}
		return firstError(target(Target{Node: x.Node}, false), kinds, reply, span("for", x.For))
	case f.CommandError != nil:
		x := f.CommandError
		return firstError(target(Target{Node: x.Node}, false), x.validate(field), span("for", x.For))
	case f.SlowReply != nil:
		x := f.SlowReply
		return firstError(target(Target{Node: x.Node}, false), validateMatch(field, x.Commands, x.Keys),
			validateSpan(field+".extra", &x.Extra, true), span("for", x.For))
	case f.MalformedReply != nil:
		x := f.MalformedReply
		return firstError(target(Target{Node: x.Node}, false), validateMatch(field, x.Commands, x.Keys), span("for", x.For))
	case f.Push != nil:
		x := f.Push
		every := validateSpan(field+".every", &x.Every, true)
		if every == nil && x.Every.Min < time.Millisecond {
			every = fieldErr(field+".every", "must be at least 1ms")
		}
		return firstError(target(x.Target, true), every, span("for", x.For))
	case f.Cluster != nil:
		return sc.validateClusterFault(field, f.Cluster)
	case f.Sentinel != nil:
		return sc.validateSentinelFault(field, f.Sentinel)
	}
	return nil
}

// isErrorReply reports whether s is a one-line error reply starting with an upper-case code.
func isErrorReply(s string) bool {
	code, _, _ := strings.Cut(s, " ")
	return code != "" && strings.ToUpper(code) == code && !strings.ContainsAny(s, "\r\n")
}

// firstError returns the first error that is not nil: the checks of one field, in order.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// validateClient checks the client section: the resolver's checks, then the simulator's own.
func (sc *Scenario) validateClient() error {
	c := &sc.Client
	if c.Connect != ConnectEager && c.Connect != ConnectLazy {
		return fieldErr("client.connect", "must be eager or lazy, not "+strconv.Quote(c.Connect))
	}
	if _, err := sc.ClientConfig(); err != nil {
		return err
	}
	if c.CommandTimeout == config.NoTimeout {
		return fieldErr("client.command_timeout", "NoTimeout is valid for the client but not simulated: the simulated callers need a finite budget")
	}
	return nil
}

func (sc *Scenario) validateWorkload() error {
	w := &sc.Workload
	switch {
	case w.Callers < 0:
		return fieldErr("workload.callers", "must not be negative")
	case w.Keys < 0:
		return fieldErr("workload.keys", "must not be negative")
	case w.Counters < 0:
		return fieldErr("workload.counters", "must not be negative")
	case w.Rate < 0:
		return fieldErr("workload.rate", "must not be negative")
	case w.Start < 0:
		return fieldErr("workload.start", "must not be negative")
	}
	m := w.Mix
	for _, kv := range []struct {
		name string
		v    int
	}{{"get", m.Get}, {"set", m.Set}, {"del", m.Del}, {"incr", m.Incr}, {"mget", m.MGet}, {"mset", m.MSet}} {
		if kv.v < 0 {
			return fieldErr("workload.mix."+kv.name, "must not be negative")
		}
	}
	if w.Callers == 0 {
		return nil
	}
	switch {
	case w.Rate <= 0:
		return fieldErr("workload.rate", "must be positive when there are callers (such as 200/s)")
	case m.total() == 0:
		return fieldErr("workload.mix", "needs at least one positive weight")
	case w.Keys < 1 && m.Get+m.Set+m.Del+m.MGet+m.MSet > 0:
		return fieldErr("workload.keys", "must be at least 1")
	case w.Counters < 1 && m.Incr > 0:
		return fieldErr("workload.counters", "must be at least 1 when the mix has incr")
	case w.Stop <= w.Start:
		return fieldErr("workload.stop", "must be after workload.start")
	case w.Stop > sc.Duration:
		return fieldErr("workload.stop", "must not be after the end of the run")
	}
	return nil
}

// validateDedicated checks workload.dedicated and expect.dedicated (client.dedicated_pool is the
// resolver's, with the rest of the client section).
func (sc *Scenario) validateDedicated() error {
	if d := sc.Workload.Dedicated; d != nil {
		m := d.Mix
		switch {
		case d.Renters < 1:
			return fieldErr("workload.dedicated.renters", "must be at least 1")
		case d.Rate <= 0:
			return fieldErr("workload.dedicated.rate", "must be positive (such as 20/s)")
		case d.Lists < 1:
			return fieldErr("workload.dedicated.lists", "must be at least 1")
		case d.Keys < 1:
			return fieldErr("workload.dedicated.keys", "must be at least 1")
		case m.BLPop < 0 || m.BRPop < 0 || m.Push < 0 || m.Tx < 0 || m.XRead < 0:
			return fieldErr("workload.dedicated.mix", "weights must not be negative")
		case m.total() == 0:
			return fieldErr("workload.dedicated.mix", "needs at least one positive weight")
		case m.XRead > 0 && sc.SentinelReplicaReads():
			return fieldErr("workload.dedicated.mix.xread", "blocking reads are not simulated with replicas named by the Sentinels")
		case *d.Block < 0:
			return fieldErr("workload.dedicated.block", "must not be negative (zero blocks indefinitely)")
		case d.Deadline <= 0:
			return fieldErr("workload.dedicated.deadline", "must be positive")
		case d.Start < 0:
			return fieldErr("workload.dedicated.start", "must not be negative")
		case d.Stop <= d.Start:
			return fieldErr("workload.dedicated.stop", "must be after workload.dedicated.start")
		case d.Stop > sc.Duration:
			return fieldErr("workload.dedicated.stop", "must not be after the end of the run")
		}
	}
	if e := sc.Expect.Dedicated; e != nil {
		for _, nb := range e.Named() {
			if err := nb.Bounds.validate("expect.dedicated." + nb.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// validatePubSub checks the pub/sub workload and expectations.
func (sc *Scenario) validatePubSub() error {
	ps := sc.Workload.PubSub
	n := 0
	if ps != nil {
		n = len(ps.Subscribers)
		if ps.Buffer < 0 {
			return fieldErr("workload.pubsub.buffer", "must not be negative")
		}
		for i, s := range ps.Subscribers {
			f := "workload.pubsub.subscribers[" + strconv.Itoa(i) + "]"
			if _, ok := TopicKind(s.Kind); !ok {
				return fieldErr(f+".kind", "must be channel, pattern or shard, not "+strconv.Quote(s.Kind))
			}
			if len(s.Topics) == 0 {
				return fieldErr(f+".topics", "needs at least one topic")
			}
			for j, t := range s.Topics {
				if t == "" || strings.ContainsAny(t, " \r\n") {
					return fieldErr(f+".topics["+strconv.Itoa(j)+"]", "must be a non-empty name without spaces")
				}
			}
			switch {
			case s.At < 0 || s.At >= sc.Duration:
				return fieldErr(f+".at", "must be within the run")
			case s.Retry < 0:
				return fieldErr(f+".retry", "must not be negative")
			case s.UnsubscribeAt != 0 && (s.UnsubscribeAt <= s.At || s.UnsubscribeAt >= sc.Duration):
				return fieldErr(f+".unsubscribe_at", "must be after at and within the run")
			}
		}
		if p := ps.Publisher; p != nil {
			switch {
			case p.Rate <= 0:
				return fieldErr("workload.pubsub.publisher.rate", "must be positive (such as 50/s)")
			case len(p.Channels)+len(p.ShardChannels) == 0:
				return fieldErr("workload.pubsub.publisher", "needs channels or shard_channels")
			case p.Start < 0:
				return fieldErr("workload.pubsub.publisher.start", "must not be negative")
			case p.Stop <= p.Start || p.Stop > sc.Duration:
				return fieldErr("workload.pubsub.publisher.stop", "must be after start and within the run")
			}
		}
	}
	e := sc.Expect.PubSub
	if e == nil {
		return nil
	}
	for i, ep := range []*EpisodeExpect{e.Regular, e.Sharded} {
		if ep != nil && len(ep.Delays) > 0 && len(ep.Delays) != len(ep.Attempts) {
			return fieldErr("expect.pubsub."+[]string{"regular", "sharded"}[i]+".delays", "must align with attempts")
		}
	}
	for i, s := range e.Subscribers {
		f := "expect.pubsub.subscribers[" + strconv.Itoa(i) + "]"
		if s.Subscriber < 0 || s.Subscriber >= n {
			return fieldErr(f+".subscriber", "must name a subscriber of workload.pubsub")
		}
		for j, o := range s.Outcomes {
			if !outcomeWords[o] {
				return fieldErr(f+".outcomes["+strconv.Itoa(j)+"]", "unknown outcome "+strconv.Quote(o))
			}
		}
		for j, o := range s.Ends {
			if !endWords[o] {
				return fieldErr(f+".ends["+strconv.Itoa(j)+"]", "unknown end reason "+strconv.Quote(o))
			}
		}
	}
	return nil
}

var outcomeWords = map[string]bool{"granted": true, "failed": true, "exhausted": true, "closed": true, "cancelled": true, "overflow": true}

var endWords = map[string]bool{"unsubscribed": true, "closed": true, "reconnect-exhausted": true, "rejected": true}

func (sc *Scenario) validateExpect() error {
	e := &sc.Expect
	if err := sc.validateDials(); err != nil {
		return err
	}
	if err := sc.validateMonitors(); err != nil {
		return err
	}
	for i, ev := range e.Events {
		f := "expect.events[" + strconv.Itoa(i) + "]"
		if ev.Slot < 0 || ev.Slot >= sc.Client.Connections {
			return fieldErr(f+".slot", "must be a slot in [0, client.connections)")
		}
		if len(ev.Delays) > 0 && len(ev.Delays) != len(ev.Attempts) {
			return fieldErr(f+".delays", "must align with attempts")
		}
		for j, a := range ev.Attempts {
			if a < 1 {
				return fieldErr(f+".attempts["+strconv.Itoa(j)+"]", "must be at least 1")
			}
		}
		for j, d := range ev.Delays {
			if d < 0 {
				return fieldErr(f+".delays["+strconv.Itoa(j)+"]", "must not be negative")
			}
		}
	}
	if o := e.Outcomes; o != nil {
		for _, nb := range []NamedBounds{{"ok", o.OK}, {"failed", o.Failed}, {"unknown", o.Unknown}, {"reconnect_limit", o.ReconnectLimit}} {
			if err := nb.Bounds.validate("expect.outcomes." + nb.Name); err != nil {
				return err
			}
		}
	}
	if l := e.Liveness; l != nil {
		if l.After < 0 || l.After > sc.Duration {
			return fieldErr("expect.liveness.after", "must be within the run")
		}
		if l.Within <= 0 {
			return fieldErr("expect.liveness.within", "must be positive")
		}
		if l.From != "" && l.From != LivenessFromHeal && l.From != LivenessFromDemand {
			return fieldErr("expect.liveness.from", "must be heal or demand, not "+strconv.Quote(l.From))
		}
	}
	for i, name := range e.Invariants.Names {
		if err := sc.validateCheckerName("expect.invariants["+strconv.Itoa(i)+"]", name); err != nil {
			return err
		}
	}
	for i, name := range e.Fail {
		f := "expect.fail[" + strconv.Itoa(i) + "]"
		if strings.TrimSpace(name) == "" {
			return fieldErr(f, "must name a checker")
		}
		if err := sc.validateCheckerName(f, name); err != nil {
			return err
		}
	}
	return nil
}

// validateMoveTo checks a kill's move_to: an IP address (the simulated DNS answers addresses, and
// moves no port), after a restart; and its old_address, refuse or blackhole, only with it.
func (sc *Scenario) validateMoveTo(field string, k *KillFault) error {
	old := strings.TrimSuffix(field, "move_to") + "old_address"
	switch {
	case k.MoveTo == "" && k.OldAddress != "":
		return fieldErr(old, "needs move_to: only a node that moves leaves an old address")
	case k.OldAddress != "" && k.OldAddress != OldAddressRefuse && k.OldAddress != OldAddressBlackhole:
		return fieldErr(old, "must be refuse or blackhole, not "+strconv.Quote(k.OldAddress))
	case k.MoveTo == "":
		return nil
	case k.RestartAfter == nil:
		return fieldErr(field, "needs restart_after: a node that never restarts listens nowhere else")
	case net.ParseIP(k.MoveTo) == nil:
		return fieldErr(field, "must be an IP address, such as 10.0.0.9, not "+strconv.Quote(k.MoveTo)+": DNS moves a name to another address, never to another port")
	}
	return nil
}

// validateMoves checks, in one pass, that no two nodes move to one address (a node may move to
// the same address again), nor to the address of a node whose name is an IP address (a node's
// first address is its name).
func (sc *Scenario) validateMoves() error {
	owner := map[string]string{}
	for _, n := range sc.Topology.Nodes {
		if ip := net.ParseIP(n.ID); ip != nil {
			owner[ip.String()] = n.ID
		}
	}
	for i := range sc.Faults {
		k := sc.Faults[i].Kill
		if k == nil || k.MoveTo == "" {
			continue
		}
		addr := net.ParseIP(k.MoveTo).String()
		if o, ok := owner[addr]; ok && o != k.Node {
			return fieldErr("faults["+strconv.Itoa(i)+"].kill.move_to", "moves "+k.Node+" to "+k.MoveTo+", where "+o+" listens or an earlier kill moves it: two nodes cannot listen at one address")
		}
		owner[addr] = k.Node
	}
	return nil
}
