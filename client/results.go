package client

import (
	"time"

	"github.com/respire-go/respire/netio/resp"
)

// Result types of the typed commands whose replies are records or nested lists, and their
// decoders (RESP2 and RESP3 alike).

func decPong(v *resp.Value) (None, error) {
	if s, ok := textOf(v); !ok || s != "PONG" {
		return None{}, unexpected("PING", v)
	}
	return None{}, nil
}

// LCSMatch is where the longest common subsequence of two strings lies (LCSIdx).
type LCSMatch struct {
	// Matches are the common parts, last first, as Redis lists them.
	Matches []LCSRange
	// Len is the length of the whole subsequence.
	Len int64
}

// LCSRange is one common part: its range in the first string and in the second (both ends
// included), and its length when LCSIdxOptions.WithMatchLen asked for it.
type LCSRange struct {
	A, B [2]int64
	Len  int64
}

func decLCSMatch(v *resp.Value) (LCSMatch, error) {
	var m LCSMatch
	err := fields("LCS", v, func(f string, x *resp.Value) error {
		switch f {
		case "len":
			n, err := intReply("LCS", x)
			m.Len = n
			return err
		case "matches":
			if !isList(x) {
				return unexpected("LCS", x)
			}
			for _, e := range x.All() {
				if !isList(&e) || e.Len() < 2 {
					return unexpected("LCS", &e)
				}
				var r LCSRange
				for i, part := range e.All() {
					if i >= 2 {
						n, err := intReply("LCS", &part)
						if err != nil {
							return err
						}
						r.Len = n
						continue
					}
					ends, err := decInts(&part)
					if err != nil || len(ends) != 2 {
						return malformed("LCS", "a range is not two integers")
					}
					if i == 0 {
						r.A = [2]int64{ends[0], ends[1]}
					} else {
						r.B = [2]int64{ends[0], ends[1]}
					}
				}
				m.Matches = append(m.Matches, r)
			}
		}
		return nil
	})
	return m, err
}

// KeyFlags is a key of a command with its access flags (CommandGetKeysAndFlags).
type KeyFlags struct {
	Key   string
	Flags []string
}

func decKeyFlags(v *resp.Value) ([]KeyFlags, error) {
	if !isList(v) {
		return nil, unexpected("COMMAND GETKEYSANDFLAGS", v)
	}
	out := make([]KeyFlags, 0, v.Len())
	for _, e := range v.All() {
		if !isList(&e) || e.Len() != 2 {
			return nil, unexpected("COMMAND GETKEYSANDFLAGS", &e)
		}
		k, fl := e.Elem(0), e.Elem(1)
		key, _, err := stringReply("COMMAND GETKEYSANDFLAGS", &k)
		if err != nil {
			return nil, err
		}
		flags, err := decStrings(&fl)
		if err != nil {
			return nil, err
		}
		out = append(out, KeyFlags{Key: key, Flags: flags})
	}
	return out, nil
}

// FunctionLibrary describes a loaded function library (FunctionList).
type FunctionLibrary struct {
	Name, Engine string
	Functions    []FunctionInfo
	// Code is the library's source, with FunctionListOptions.WithCode.
	Code string
}

// FunctionInfo describes a function of a library.
type FunctionInfo struct {
	Name        string
	Description string
	Flags       []string
}

func decFunctionList(v *resp.Value) ([]FunctionLibrary, error) {
	if !isList(v) {
		return nil, unexpected("FUNCTION LIST", v)
	}
	out := make([]FunctionLibrary, 0, v.Len())
	for _, e := range v.All() {
		var lib FunctionLibrary
		err := fields("FUNCTION LIST", &e, func(f string, x *resp.Value) error {
			var err error
			switch f {
			case "library_name":
				lib.Name, _, err = stringReply(f, x)
			case "engine":
				lib.Engine, _, err = stringReply(f, x)
			case "library_code":
				lib.Code, _, err = stringReply(f, x)
			case "functions":
				if !isList(x) {
					return unexpected(f, x)
				}
				for _, fn := range x.All() {
					var info FunctionInfo
					err := fields(f, &fn, func(g string, y *resp.Value) error {
						var err error
						switch g {
						case "name":
							info.Name, _, err = stringReply(g, y)
						case "description":
							info.Description, _, err = stringReply(g, y)
						case "flags":
							info.Flags, err = decStrings(y)
						}
						return err
					})
					if err != nil {
						return err
					}
					lib.Functions = append(lib.Functions, info)
				}
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, lib)
	}
	return out, nil
}

// SlowLogEntry is one entry of the slow log.
type SlowLogEntry struct {
	ID int64
	// Time is when the command ran; Duration how long it took.
	Time     time.Time
	Duration time.Duration
	// Args are the command and its arguments (Redis truncates long ones).
	Args []string
	// Client is the client's address and ClientName its name.
	Client, ClientName string
}

func decSlowLog(v *resp.Value) ([]SlowLogEntry, error) {
	if !isList(v) {
		return nil, unexpected("SLOWLOG GET", v)
	}
	out := make([]SlowLogEntry, 0, v.Len())
	for _, e := range v.All() {
		if !isList(&e) || e.Len() < 4 {
			return nil, unexpected("SLOWLOG GET", &e)
		}
		var s SlowLogEntry
		for i, part := range e.All() {
			var err error
			switch i {
			case 0:
				s.ID, err = intReply("SLOWLOG GET", &part)
			case 1:
				var sec int64
				sec, err = intReply("SLOWLOG GET", &part)
				s.Time = time.Unix(sec, 0)
			case 2:
				var us int64
				us, err = intReply("SLOWLOG GET", &part)
				s.Duration = time.Duration(us) * time.Microsecond
			case 3:
				s.Args, err = decStrings(&part)
			case 4:
				s.Client, _, err = stringReply("SLOWLOG GET", &part)
			case 5:
				s.ClientName, _, err = stringReply("SLOWLOG GET", &part)
			}
			if err != nil {
				return nil, err
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// LatencySample is one latency spike of an event (LatencyHistory).
type LatencySample struct {
	Time    time.Time
	Latency time.Duration
}

func decLatencyHistory(v *resp.Value) ([]LatencySample, error) {
	rows, err := intRows("LATENCY HISTORY", v, 2)
	if err != nil {
		return nil, err
	}
	out := make([]LatencySample, len(rows))
	for i, r := range rows {
		out[i] = LatencySample{Time: time.Unix(r[0], 0), Latency: time.Duration(r[1]) * time.Millisecond}
	}
	return out, nil
}

// intRows decodes a list of rows of n integers.
func intRows(name string, v *resp.Value, n int) ([][]int64, error) {
	if !isList(v) {
		return nil, unexpected(name, v)
	}
	out := make([][]int64, 0, v.Len())
	for _, e := range v.All() {
		row, err := decInts(&e)
		if err != nil || len(row) != n {
			return nil, malformed(name, "unexpected row")
		}
		out = append(out, row)
	}
	return out, nil
}

// LatencyEvent is the latest latency spike of an event (LatencyLatest).
type LatencyEvent struct {
	Event string
	// Time is when the latest spike happened.
	Time time.Time
	// Latest and Max are the latest spike and the largest one.
	Latest, Max time.Duration
}

func decLatencyLatest(v *resp.Value) ([]LatencyEvent, error) {
	if !isList(v) {
		return nil, unexpected("LATENCY LATEST", v)
	}
	out := make([]LatencyEvent, 0, v.Len())
	for _, e := range v.All() {
		if !isList(&e) || e.Len() < 4 {
			return nil, unexpected("LATENCY LATEST", &e)
		}
		name, t, latest, maximum := e.Elem(0), e.Elem(1), e.Elem(2), e.Elem(3)
		var ev LatencyEvent
		var err error
		if ev.Event, _, err = stringReply("LATENCY LATEST", &name); err != nil {
			return nil, err
		}
		var n [3]int64
		for i, x := range []*resp.Value{&t, &latest, &maximum} {
			if n[i], err = intReply("LATENCY LATEST", x); err != nil {
				return nil, err
			}
		}
		ev.Time = time.Unix(n[0], 0)
		ev.Latest = time.Duration(n[1]) * time.Millisecond
		ev.Max = time.Duration(n[2]) * time.Millisecond
		out = append(out, ev)
	}
	return out, nil
}

// Role is a server's replication role (ROLE).
type Role struct {
	// Kind is "master", "slave" or "sentinel", as Redis names them.
	Kind string
	// ReplicationOffset is a primary's or a replica's replication offset.
	ReplicationOffset int64
	// Replicas are a primary's connected replicas.
	Replicas []RoleReplica
	// Primary and State are a replica's primary and link state ("connected", ...).
	Primary Addr
	State   string
	// Primaries are the names of the primaries a sentinel monitors.
	Primaries []string
}

// RoleReplica is a replica as its primary reports it.
type RoleReplica struct {
	Addr
	Offset int64
}

func decRole(v *resp.Value) (Role, error) {
	if !isList(v) || v.Len() < 1 {
		return Role{}, unexpected("ROLE", v)
	}
	k := v.Elem(0)
	var r Role
	var err error
	if r.Kind, _, err = stringReply("ROLE", &k); err != nil {
		return r, err
	}
	parts := make([]resp.Value, 0, v.Len())
	for _, e := range v.All() {
		parts = append(parts, e)
	}
	switch {
	case r.Kind == "master" && len(parts) == 3:
		if r.ReplicationOffset, err = intReply("ROLE", &parts[1]); err != nil {
			return r, err
		}
		if !isList(&parts[2]) {
			return r, unexpected("ROLE", &parts[2])
		}
		for _, e := range parts[2].All() {
			row, err := decStrings(&e)
			if err != nil || len(row) < 3 {
				return r, malformed("ROLE", "a replica is not host, port, offset")
			}
			port, err1 := parseInt(row[1])
			offset, err2 := parseInt(row[2])
			if err1 != nil || err2 != nil {
				return r, malformed("ROLE", "a replica's port or offset is not a number")
			}
			r.Replicas = append(r.Replicas, RoleReplica{Addr: Addr{Host: row[0], Port: int(port)}, Offset: offset})
		}
	case r.Kind == "slave" && len(parts) == 5:
		var port int64
		if r.Primary.Host, _, err = stringReply("ROLE", &parts[1]); err != nil {
			return r, err
		}
		if port, err = intReply("ROLE", &parts[2]); err != nil {
			return r, err
		}
		r.Primary.Port = int(port)
		if r.State, _, err = stringReply("ROLE", &parts[3]); err != nil {
			return r, err
		}
		if r.ReplicationOffset, err = intReply("ROLE", &parts[4]); err != nil {
			return r, err
		}
	case r.Kind == "sentinel" && len(parts) == 2:
		if r.Primaries, err = decStrings(&parts[1]); err != nil {
			return r, err
		}
	default:
		return r, malformed("ROLE", "unknown role or layout")
	}
	return r, nil
}

func parseInt(s string) (int64, error) {
	v := resp.BulkString(s)
	return intReply("number", &v)
}

// ClusterSlotRange is a range of slots with the nodes serving it, primary first
// (ClusterSlots).
type ClusterSlotRange struct {
	Start, End int64
	Nodes      []ClusterSlotNode
}

// ClusterSlotNode is a node serving a slot range.
type ClusterSlotNode struct {
	Host string
	Port int64
	ID   string
}

func decClusterSlots(v *resp.Value) ([]ClusterSlotRange, error) {
	if !isList(v) {
		return nil, unexpected("CLUSTER SLOTS", v)
	}
	out := make([]ClusterSlotRange, 0, v.Len())
	for _, e := range v.All() {
		if !isList(&e) || e.Len() < 3 {
			return nil, unexpected("CLUSTER SLOTS", &e)
		}
		var r ClusterSlotRange
		for i, part := range e.All() {
			var err error
			switch i {
			case 0:
				r.Start, err = intReply("CLUSTER SLOTS", &part)
			case 1:
				r.End, err = intReply("CLUSTER SLOTS", &part)
			default:
				if !isList(&part) || part.Len() < 2 {
					return nil, unexpected("CLUSTER SLOTS", &part)
				}
				var n ClusterSlotNode
				h, p := part.Elem(0), part.Elem(1)
				if n.Host, _, err = stringReply("CLUSTER SLOTS", &h); err != nil {
					return nil, err
				}
				if n.Port, err = intReply("CLUSTER SLOTS", &p); err != nil {
					return nil, err
				}
				if part.Len() > 2 {
					id := part.Elem(2)
					n.ID, _, err = stringReply("CLUSTER SLOTS", &id)
				}
				r.Nodes = append(r.Nodes, n)
			}
			if err != nil {
				return nil, err
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// SentinelDownReply is a sentinel's answer to SentinelIsMasterDownByAddr.
type SentinelDownReply struct {
	// Down says whether the sentinel sees the primary down.
	Down bool
	// Leader is the run id of the sentinel it votes for ("*" when the call only asked for
	// the state), and LeaderEpoch that vote's epoch.
	Leader      string
	LeaderEpoch int64
}

func decMasterDown(v *resp.Value) (SentinelDownReply, error) {
	if !isList(v) || v.Len() != 3 {
		return SentinelDownReply{}, unexpected("SENTINEL IS-MASTER-DOWN-BY-ADDR", v)
	}
	d, l, ep := v.Elem(0), v.Elem(1), v.Elem(2)
	var r SentinelDownReply
	var err error
	if r.Down, err = decBool(&d); err != nil {
		return r, err
	}
	if r.Leader, _, err = stringReply("SENTINEL IS-MASTER-DOWN-BY-ADDR", &l); err != nil {
		return r, err
	}
	r.LeaderEpoch, err = intReply("SENTINEL IS-MASTER-DOWN-BY-ADDR", &ep)
	return r, err
}
