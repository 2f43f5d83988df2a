package scenario

import (
	"strconv"
	"strings"
	"time"
)

// The maintenance timeline (Scenario.Maintenance): notices a simulated node sends, at scripted
// virtual times, on every connection that opted in to maintenance notifications
// (client.maintenance_notifications). A scenario with a timeline makes every node acknowledge
// CLIENT MAINT_NOTIFICATIONS ON, as a managed Redis service does; without one the nodes answer
// it as Redis 7.0 does, with an unknown-subcommand error.

// Maintenance notice kinds (MaintStep.Kind): the names on the wire.
const (
	MaintMoving      = "MOVING"
	MaintMigrating   = "MIGRATING"
	MaintMigrated    = "MIGRATED"
	MaintFailingOver = "FAILING_OVER"
	MaintFailedOver  = "FAILED_OVER"
	MaintSMigrating  = "SMIGRATING"
	MaintSMigrated   = "SMIGRATED"
)

// MaintKinds lists the notice kinds a maintenance step may send.
var MaintKinds = []string{MaintMoving, MaintMigrating, MaintMigrated, MaintFailingOver, MaintFailedOver,
	MaintSMigrating, MaintSMigrated}

// Bounds of the maintenance timeline, checked when a scenario loads.
const (
	// MaxMaintSteps bounds the entries of Scenario.Maintenance.
	MaxMaintSteps = 4096
	// MaxMaintTime bounds MaintStep.Time: one day, the bound the client's parser accepts.
	MaxMaintTime = 24 * time.Hour
	// MaxMaintShards bounds MaintStep.Shards and MaintStep.Moves (the client's parser accepts
	// notices of at most 1024 elements).
	MaxMaintShards = 1000
)

// MaintStep is one notice of the maintenance timeline. Fields other than At, Node and Kind
// belong to some kinds only; a field set for another kind is an error.
type MaintStep struct {
	// At is when the node sends the notice (0 <= at < duration). A node that is down or paused
	// then sends nothing.
	At time.Duration `yaml:"at"`
	// Node is the id of the node that sends it.
	Node string `yaml:"node"`
	// Kind is MOVING, MIGRATING, MIGRATED, FAILING_OVER, FAILED_OVER, SMIGRATING or SMIGRATED.
	Kind string `yaml:"kind"`
	// Seq is the notice's sequence number; zero (omitted) means the step's position plus one.
	Seq int64 `yaml:"seq,omitempty"`
	// Time is MOVING's grace, or MIGRATING's and FAILING_OVER's expected duration: whole
	// seconds from 0 to 24h. Only those kinds have it.
	Time time.Duration `yaml:"time,omitempty"`
	// To is MOVING's target: the id of a node of the topology, announced as "<id>:6379".
	// Omitted, the notice carries a null endpoint (reconnect to the configured endpoint).
	To string `yaml:"to,omitempty"`
	// Shards are the shard ids of MIGRATING, MIGRATED, FAILING_OVER and FAILED_OVER (at most
	// MaxMaintShards).
	Shards []string `yaml:"shards,omitempty"`
	// Slots are SMIGRATING's slots, as on the wire: "100", "100-200" or a comma-separated list.
	// Required for SMIGRATING.
	Slots string `yaml:"slots,omitempty"`
	// Moves are SMIGRATED's new owners (at most MaxMaintShards).
	Moves []MaintMove `yaml:"moves,omitempty"`
}

// MaintMove is one new owner of an SMIGRATED notice.
type MaintMove struct {
	// To is the id of the node that now owns Slots.
	To string `yaml:"to"`
	// Slots are its slots, written as MaintStep.Slots.
	Slots string `yaml:"slots"`
}

// SeqOf returns the sequence number of step i: its Seq, or i+1.
func (s *MaintStep) SeqOf(i int) int64 {
	if s.Seq != 0 {
		return s.Seq
	}
	return int64(i) + 1
}

// movingTargetsOnly reports whether every node after the first is the MOVING target of a
// maintenance step: a standalone topology may list such nodes.
func (sc *Scenario) movingTargetsOnly() bool {
	for _, n := range sc.Topology.Nodes[1:] {
		found := sc.replicaExtraNodeOK(n.ID)
		for i := range sc.Maintenance {
			found = found || (sc.Maintenance[i].Kind == MaintMoving && sc.Maintenance[i].To == n.ID)
		}
		if !found {
			return false
		}
	}
	return true
}

// validateMaint checks the maintenance timeline.
func (sc *Scenario) validateMaint() error {
	if len(sc.Maintenance) > MaxMaintSteps {
		return fieldErr("maintenance", "has more than "+strconv.Itoa(MaxMaintSteps)+" entries")
	}
	for i := range sc.Maintenance {
		if err := sc.validateMaintStep(i); err != nil {
			return err
		}
	}
	return nil
}

func (sc *Scenario) validateMaintStep(i int) error {
	s := &sc.Maintenance[i]
	f := "maintenance[" + strconv.Itoa(i) + "]"
	timed := s.Kind == MaintMoving || s.Kind == MaintMigrating || s.Kind == MaintFailingOver
	sharded := s.Kind == MaintMigrating || s.Kind == MaintMigrated || s.Kind == MaintFailingOver || s.Kind == MaintFailedOver
	switch {
	case s.At < 0 || s.At >= sc.Duration:
		return fieldErr(f+".at", "must be within the run, from 0 to below duration ("+sc.Duration.String()+")")
	case sc.node(s.Node) < 0:
		return fieldErr(f+".node", "unknown node "+strconv.Quote(s.Node))
	case !containsString(MaintKinds, s.Kind):
		return fieldErr(f+".kind", "unknown notice "+strconv.Quote(s.Kind)+" (want one of "+strings.Join(MaintKinds, ", ")+")")
	case s.Seq < 0:
		return fieldErr(f+".seq", "must not be negative")
	case s.Time != 0 && !timed:
		return fieldErr(f+".time", s.Kind+" has no time (only MOVING, MIGRATING and FAILING_OVER)")
	case s.Time < 0 || s.Time > MaxMaintTime || s.Time%time.Second != 0:
		return fieldErr(f+".time", "must be whole seconds from 0 to 24h")
	case s.To != "" && s.Kind != MaintMoving:
		return fieldErr(f+".to", "only MOVING has a target")
	case s.To != "" && sc.node(s.To) < 0:
		return fieldErr(f+".to", "unknown node "+strconv.Quote(s.To))
	case len(s.Shards) > 0 && !sharded:
		return fieldErr(f+".shards", s.Kind+" has no shards")
	case len(s.Shards) > MaxMaintShards:
		return fieldErr(f+".shards", "has more than "+strconv.Itoa(MaxMaintShards)+" entries")
	case s.Slots != "" && s.Kind != MaintSMigrating:
		return fieldErr(f+".slots", "only SMIGRATING has slots (SMIGRATED names them per move)")
	case s.Kind == MaintSMigrating && s.Slots == "":
		return fieldErr(f+".slots", "SMIGRATING needs slots")
	case len(s.Moves) > 0 && s.Kind != MaintSMigrated:
		return fieldErr(f+".moves", "only SMIGRATED has moves")
	case len(s.Moves) > MaxMaintShards:
		return fieldErr(f+".moves", "has more than "+strconv.Itoa(MaxMaintShards)+" entries")
	}
	for j, shard := range s.Shards {
		if shard == "" || strings.ContainsAny(shard, " \t\r\n") {
			return fieldErr(f+".shards["+strconv.Itoa(j)+"]", "must be a non-empty name without spaces")
		}
	}
	if s.Slots != "" {
		if reason := checkSlots(s.Slots); reason != "" {
			return fieldErr(f+".slots", reason)
		}
	}
	for j, m := range s.Moves {
		g := f + ".moves[" + strconv.Itoa(j) + "]"
		if sc.node(m.To) < 0 {
			return fieldErr(g+".to", "unknown node "+strconv.Quote(m.To))
		}
		if reason := checkSlots(m.Slots); reason != "" {
			return fieldErr(g+".slots", reason)
		}
	}
	return nil
}

// checkSlots checks a slot list ("5", "5-9", "5,7-9"): at most 16384 ranges of slots from 0 to
// 16383, each range in order. It returns what is wrong, or "".
func checkSlots(text string) string {
	if text == "" {
		return "needs at least one slot"
	}
	if strings.Count(text, ",") >= 16384 {
		return "has more than 16384 ranges"
	}
	for part := range strings.SplitSeq(text, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err1 := strconv.Atoi(lo)
		last, err2 := first, error(nil)
		if isRange {
			last, err2 = strconv.Atoi(hi)
		}
		switch {
		case err1 != nil || err2 != nil:
			return "slot " + strconv.Quote(part) + " is not a number or a range a-b"
		case first < 0 || last > 16383 || first > last:
			return "slot range " + strconv.Quote(part) + " is out of order or outside 0-16383"
		}
	}
	return ""
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
