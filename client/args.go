package client

import (
	"sort"
	"time"
)

// Options and argument types of the typed commands. Each writes its own arguments
// (writeArgs) and checks them: an invalid combination fails the command with a *ConfigError
// before anything is sent.

// The types that write their own arguments.
var (
	_ argWriter = GetExOptions{}
	_ argWriter = LCSIdxOptions{}
	_ argWriter = MigrateOptions{}
	_ argWriter = RestoreOptions{}
	_ argWriter = ScanOptions{}
	_ argWriter = SortOptions{}
	_ argWriter = LPosOptions{}
	_ argWriter = ZAddOptions{}
	_ argWriter = ZCombine{}
	_ argWriter = ZRangeOptions{}
	_ argWriter = ZLimit{}
	_ argWriter = ZMember{}
	_ argWriter = BitFieldOp{}
	_ argWriter = FunctionListOptions{}
	_ argWriter = ClientKillFilter{}
	_ argWriter = ClientListOptions{}
	_ argWriter = ClientTrackingOptions{}
	_ argWriter = CommandListFilter{}
	_ argWriter = FailoverOptions{}
	_ argWriter = ModuleLoadOptions{}
	_ argWriter = ShutdownOptions{}
	_ argWriter = SlotRange{}
	_ argWriter = XReadArgs{}
	_ argWriter = XReadGroupArgs{}
	_ argWriter = XTrimOptions{}
	_ argWriter = XAddOptions{}
	_ argWriter = XClaimOptions{}
	_ argWriter = XPendingOptions{}
	_ argWriter = GeoLocation{}
	_ argWriter = GeoAddOptions{}
	_ argWriter = GeoRadiusOptions{}
	_ argWriter = GeoStore{}
	_ argWriter = GeoSearchQuery{}
)

// ListEnd names an end of a list (LMOVE, BLMOVE, LMPOP, BLMPOP).
type ListEnd string

// List ends.
const (
	ListLeft  ListEnd = "LEFT"
	ListRight ListEnd = "RIGHT"
)

// MinMax chooses the lowest (Min) or highest (Max) scores (ZMPOP, BZMPOP).
type MinMax string

// Score ends.
const (
	Min MinMax = "MIN"
	Max MinMax = "MAX"
)

// BitOperation is a BITOP operation.
type BitOperation string

// Bit operations.
const (
	BitAnd BitOperation = "AND"
	BitOr  BitOperation = "OR"
	BitXor BitOperation = "XOR"
	BitNot BitOperation = "NOT"
)

// BitUnit is the unit of BITCOUNT and BITPOS ranges.
type BitUnit string

// Bit range units; the empty BitUnit is Redis's default, bytes.
const (
	BitUnitByte BitUnit = "BYTE"
	BitUnitBit  BitUnit = "BIT"
)

// GeoUnit is a distance unit; the empty GeoUnit is meters where a unit is optional.
type GeoUnit string

// Distance units.
const (
	Meters     GeoUnit = "m"
	Kilometers GeoUnit = "km"
	Miles      GeoUnit = "mi"
	Feet       GeoUnit = "ft"
)

// FlushMode says whether a flush frees memory in the background; the empty FlushMode is the
// server's default (lazyfree-lazy-user-flush).
type FlushMode string

// Flush modes.
const (
	FlushAsync FlushMode = "ASYNC"
	FlushSync  FlushMode = "SYNC"
)

// ExpireCondition is the condition of ExpireIf.
type ExpireCondition string

// Expiry conditions.
const (
	// ExpireNX: only when the key has no expiry.
	ExpireNX ExpireCondition = "NX"
	// ExpireXX: only when the key has an expiry.
	ExpireXX ExpireCondition = "XX"
	// ExpireGT: only when the new expiry is later than the current one.
	ExpireGT ExpireCondition = "GT"
	// ExpireLT: only when the new expiry is earlier than the current one.
	ExpireLT ExpireCondition = "LT"
)

// RestorePolicy says how FunctionRestore treats existing libraries; empty is append.
type RestorePolicy string

// Restore policies.
const (
	RestoreAppend  RestorePolicy = "APPEND"
	RestoreReplace RestorePolicy = "REPLACE"
	RestoreFlush   RestorePolicy = "FLUSH"
)

// ClusterFailoverMode is the mode of ClusterFailover; empty is a coordinated failover.
type ClusterFailoverMode string

// Cluster failover modes.
const (
	FailoverForce    ClusterFailoverMode = "FORCE"
	FailoverTakeover ClusterFailoverMode = "TAKEOVER"
)

// ClientType is a kind of connection (CLIENT LIST, CLIENT KILL).
type ClientType string

// Connection kinds.
const (
	ClientNormal  ClientType = "normal"
	ClientPrimary ClientType = "master"
	ClientReplica ClientType = "replica"
	ClientPubSub  ClientType = "pubsub"
)

// SlotState is the state ClusterSetSlot gives a slot.
type SlotState string

// Slot states.
const (
	SlotImporting SlotState = "IMPORTING"
	SlotMigrating SlotState = "MIGRATING"
	SlotNode      SlotState = "NODE"
	SlotStable    SlotState = "STABLE"
)

// ZAggregate is how ZInter and ZUnion combine scores; empty is SUM.
type ZAggregate string

// Score aggregations.
const (
	AggregateSum ZAggregate = "SUM"
	AggregateMin ZAggregate = "MIN"
	AggregateMax ZAggregate = "MAX"
)

// ZRangeBy is what ZRangeOptions' Start and Stop are: ranks (empty), scores or members in
// lexicographical order.
type ZRangeBy string

// Range kinds.
const (
	ByScore ZRangeBy = "BYSCORE"
	ByLex   ZRangeBy = "BYLEX"
)

// GetExOptions change a key's expiry as GetEx reads it: set at most one field; none leaves
// it unchanged.
type GetExOptions struct {
	// TTL sets an expiry (EX or PX, millisecond precision).
	TTL time.Duration
	// ExpireAt sets an absolute expiry (PXAT).
	ExpireAt time.Time
	// Persist removes the expiry (PERSIST).
	Persist bool
}

func (o GetExOptions) writeArgs(e *enc) {
	n := 0
	for _, b := range []bool{o.TTL != 0, !o.ExpireAt.IsZero(), o.Persist} {
		if b {
			n++
		}
	}
	if n > 1 || o.TTL < 0 {
		e.fail("GetExOptions", "set at most one of TTL (positive), ExpireAt and Persist")
	}
	if !e.expiry(o.TTL, o.ExpireAt) && o.Persist {
		e.str("PERSIST")
	}
}

// expiry appends the expiry of SET or GETEX: EX in whole seconds, else PX for a positive ttl,
// else PXAT for a non-zero at. It reports whether it appended one.
func (e *enc) expiry(ttl time.Duration, at time.Time) bool {
	switch {
	case ttl > 0 && ttl%time.Second == 0:
		e.str("EX")
		e.int(int64(ttl / time.Second))
	case ttl > 0:
		e.str("PX")
		e.millis(ttl)
	case !at.IsZero():
		e.str("PXAT")
		e.unixMillis(at)
	default:
		return false
	}
	return true
}

// LCSIdxOptions are the options of LCSIdx.
type LCSIdxOptions struct {
	// MinMatchLen leaves out matches shorter than this.
	MinMatchLen int64
	// WithMatchLen reports each match's length.
	WithMatchLen bool
}

func (o LCSIdxOptions) writeArgs(e *enc) {
	if o.MinMatchLen > 0 {
		e.str("MINMATCHLEN")
		e.int(o.MinMatchLen)
	}
	if o.WithMatchLen {
		e.str("WITHMATCHLEN")
	}
}

// MigrateOptions are the options of Migrate.
type MigrateOptions struct {
	// Keys are the keys to move; at least one.
	Keys []string
	// Copy keeps the keys on this server; Replace replaces them on the target.
	Copy, Replace bool
	// Username and Password authenticate on the target (AUTH2, or AUTH without Username).
	// They are sent only in the command and never appear in errors or logs.
	Username, Password string
}

func (o MigrateOptions) writeArgs(e *enc) {
	if o.Copy {
		e.str("COPY")
	}
	if o.Replace {
		e.str("REPLACE")
	}
	switch {
	case o.Username != "":
		e.str("AUTH2")
		e.str(o.Username)
		e.str(o.Password)
	case o.Password != "":
		e.str("AUTH")
		e.str(o.Password)
	}
	e.str("KEYS")
	e.need("MigrateOptions.Keys", len(o.Keys))
	e.strs(o.Keys)
}

// RestoreOptions are the options of Restore.
type RestoreOptions struct {
	// Replace replaces an existing key.
	Replace bool
	// AbsTTL makes Restore's ttl an absolute Unix time in milliseconds.
	AbsTTL bool
	// IdleTime sets the key's idle time (IDLETIME); zero: none.
	IdleTime time.Duration
	// Freq sets the key's LFU frequency (FREQ); zero: none.
	Freq int64
}

func (o RestoreOptions) writeArgs(e *enc) {
	if o.Replace {
		e.str("REPLACE")
	}
	if o.AbsTTL {
		e.str("ABSTTL")
	}
	if o.IdleTime > 0 {
		e.str("IDLETIME")
		e.seconds(o.IdleTime)
	}
	if o.Freq > 0 {
		e.str("FREQ")
		e.int(o.Freq)
	}
}

// ScanOptions are the options of a scan step.
type ScanOptions struct {
	// Match keeps the elements matching a glob pattern (MATCH).
	Match string
	// Count hints how many elements a step visits (COUNT); zero: Redis's default of 10.
	Count int64
	// Type keeps the keys of one type (TYPE); Scan only.
	Type string
}

func (o ScanOptions) writeArgs(e *enc) {
	if o.Match != "" {
		e.str("MATCH")
		e.str(o.Match)
	}
	if o.Count != 0 {
		e.str("COUNT")
		e.int(o.Count)
	}
	if o.Type != "" {
		if e.spec != cmdScan {
			e.fail("ScanOptions.Type", "only Scan filters by type")
		}
		e.str("TYPE")
		e.str(o.Type)
	}
}

// SortOptions are the options of Sort.
type SortOptions struct {
	// By sorts by the values of other keys (a pattern with *, or a hash field "h*->f");
	// "nosort" keeps the order.
	By string
	// Offset and Count limit the result (LIMIT) when Count is not zero.
	Offset, Count int64
	// Get returns the values of other keys instead of the elements ("#" for the element).
	Get []string
	// Desc sorts in descending order; Alpha compares as strings.
	Desc, Alpha bool
}

func (o SortOptions) writeArgs(e *enc) {
	if o.By != "" {
		e.str("BY")
		e.str(o.By)
	}
	if o.Count != 0 {
		e.str("LIMIT")
		e.int(o.Offset)
		e.int(o.Count)
	}
	for _, g := range o.Get {
		e.str("GET")
		e.str(g)
	}
	if o.Desc {
		e.str("DESC")
	}
	if o.Alpha {
		e.str("ALPHA")
	}
}

// LPosOptions are the options of LPos and LPosCount.
type LPosOptions struct {
	// Rank skips matches: 2 returns the second one, -1 searches from the tail; zero: 1.
	Rank int64
	// MaxLen compares at most this many elements; zero: all.
	MaxLen int64
}

func (o LPosOptions) writeArgs(e *enc) {
	if o.Rank != 0 {
		e.str("RANK")
		e.int(o.Rank)
	}
	if o.MaxLen != 0 {
		e.str("MAXLEN")
		e.int(o.MaxLen)
	}
}

// ZAddOptions are the conditions of ZAddArgs and ZAddIncr.
type ZAddOptions struct {
	// NX only adds new members; XX only updates existing ones.
	NX, XX bool
	// GT only updates a score to a greater one; LT to a lesser one.
	GT, LT bool
	// CH makes ZAddArgs count the changed members, not only the added ones.
	CH bool
}

func (o ZAddOptions) writeArgs(e *enc) {
	if (o.NX && o.XX) || (o.GT && o.LT) || (o.NX && (o.GT || o.LT)) {
		e.fail("ZAddOptions", "NX excludes XX, GT and LT; GT excludes LT")
	}
	for _, f := range []struct {
		on    bool
		token string
	}{{o.NX, "NX"}, {o.XX, "XX"}, {o.GT, "GT"}, {o.LT, "LT"}, {o.CH, "CH"}} {
		if f.on {
			e.str(f.token)
		}
	}
}

// ZCombine names the sorted sets ZInter and ZUnion combine, and how.
type ZCombine struct {
	// Keys are the sorted sets; at least one.
	Keys []string
	// Weights multiply each set's scores, one per key; none: 1 each.
	Weights []float64
	// Aggregate combines the scores of a member; empty: sum.
	Aggregate ZAggregate
}

func (z ZCombine) writeArgs(e *enc) {
	e.need("ZCombine.Keys", len(z.Keys))
	e.counted(z.Keys)
	if len(z.Weights) > 0 {
		if len(z.Weights) != len(z.Keys) {
			e.fail("ZCombine.Weights", "needs one weight per key")
		}
		e.str("WEIGHTS")
		for _, w := range z.Weights {
			e.float(w)
		}
	}
	if z.Aggregate != "" {
		e.str("AGGREGATE")
		e.str(string(z.Aggregate))
	}
}

// ZRangeOptions describe a range of a sorted set (ZRangeArgs, ZRangeStore).
type ZRangeOptions struct {
	// Start and Stop bound the range: ranks ("0", "-1"), scores ("-inf", "(1.5") with
	// ByScore, or members ("-", "[a", "(b") with ByLex.
	Start, Stop string
	// By says what Start and Stop are; empty: ranks.
	By ZRangeBy
	// Rev reverses the order (highest score first; Start is then the high end).
	Rev bool
	// Offset and Count limit the result (LIMIT, with ByScore or ByLex) when Count is not zero.
	Offset, Count int64
}

func (o ZRangeOptions) writeArgs(e *enc) {
	e.str(o.Start)
	e.str(o.Stop)
	if o.By != "" {
		e.str(string(o.By))
	}
	if o.Rev {
		e.str("REV")
	}
	if o.Count != 0 {
		if o.By == "" {
			e.fail("ZRangeOptions.Count", "a limit needs By (ByScore or ByLex)")
		}
		e.str("LIMIT")
		e.int(o.Offset)
		e.int(o.Count)
	}
}

// ZLimit limits a range (LIMIT offset count) when Count is not zero; the zero ZLimit is no
// limit.
type ZLimit struct {
	Offset, Count int64
}

func (l ZLimit) writeArgs(e *enc) {
	if l.Count != 0 {
		e.str("LIMIT")
		e.int(l.Offset)
		e.int(l.Count)
	}
}

// BitFieldOp is one operation of BitField; make them with BitFieldGet, BitFieldSet,
// BitFieldIncrBy and BitFieldOverflow.
type BitFieldOp struct {
	op, typ, offset string
	value           int64
}

// BitFieldGet reads the field of type typ ("u8", "i16", ...) at offset ("100", or "#2" for
// the third field of that width).
func BitFieldGet(typ, offset string) BitFieldOp {
	return BitFieldOp{op: "GET", typ: typ, offset: offset}
}

// BitFieldSet writes value to a field and returns its previous value.
func BitFieldSet(typ, offset string, value int64) BitFieldOp {
	return BitFieldOp{op: "SET", typ: typ, offset: offset, value: value}
}

// BitFieldIncrBy adds increment to a field and returns its new value.
func BitFieldIncrBy(typ, offset string, increment int64) BitFieldOp {
	return BitFieldOp{op: "INCRBY", typ: typ, offset: offset, value: increment}
}

// BitFieldOverflow sets how the following SET and INCRBY operations overflow: "WRAP",
// "SAT" or "FAIL".
func BitFieldOverflow(mode string) BitFieldOp { return BitFieldOp{op: "OVERFLOW", typ: mode} }

func (o BitFieldOp) writeArgs(e *enc) {
	if o.op == "" {
		e.fail("BitFieldOp", "make operations with BitFieldGet, BitFieldSet, BitFieldIncrBy or BitFieldOverflow")
		return
	}
	if e.spec == cmdBitfieldRo && o.op != "GET" {
		e.fail("BitFieldOp", "BitFieldRO runs only BitFieldGet operations")
	}
	e.str(o.op)
	e.str(o.typ)
	if o.op == "OVERFLOW" {
		return
	}
	e.str(o.offset)
	if o.op != "GET" {
		e.int(o.value)
	}
}

// FunctionListOptions are the options of FunctionList.
type FunctionListOptions struct {
	// LibraryName keeps the libraries whose names match this pattern.
	LibraryName string
	// WithCode returns each library's source.
	WithCode bool
}

func (o FunctionListOptions) writeArgs(e *enc) {
	if o.LibraryName != "" {
		e.str("LIBRARYNAME")
		e.str(o.LibraryName)
	}
	if o.WithCode {
		e.str("WITHCODE")
	}
}

// ClientKillFilter selects the connections ClientKill closes; set at least one field.
type ClientKillFilter struct {
	ID    int64
	Type  ClientType
	User  string
	Addr  string
	LAddr string
	// IncludeSelf lets the filter close the calling connection too (SKIPME no).
	IncludeSelf bool
}

func (f ClientKillFilter) writeArgs(e *enc) {
	n := e.n
	if f.ID != 0 {
		e.str("ID")
		e.int(f.ID)
	}
	for _, kv := range [][2]string{{"TYPE", string(f.Type)}, {"USER", f.User}, {"ADDR", f.Addr}, {"LADDR", f.LAddr}} {
		if kv[1] != "" {
			e.str(kv[0])
			e.str(kv[1])
		}
	}
	if e.n == n {
		e.fail("ClientKillFilter", "set at least one filter")
	}
	if f.IncludeSelf {
		e.str("SKIPME")
		e.str("no")
	}
}

// ClientListOptions filter ClientList.
type ClientListOptions struct {
	Type ClientType
	IDs  []int64
}

func (o ClientListOptions) writeArgs(e *enc) {
	if o.Type != "" {
		e.str("TYPE")
		e.str(string(o.Type))
	}
	if len(o.IDs) > 0 {
		e.str("ID")
		for _, id := range o.IDs {
			e.int(id)
		}
	}
}

// ClientTrackingOptions are the options of ClientTracking.
type ClientTrackingOptions struct {
	// Redirect sends the invalidations to another connection, by id.
	Redirect int64
	// Prefixes, with BCast, tracks the keys with these prefixes.
	Prefixes []string
	// BCast tracks every key (or the Prefixes) instead of the keys read.
	BCast bool
	// OptIn tracks only after ClientCaching(true); OptOut tracks except after
	// ClientCaching(false).
	OptIn, OptOut bool
	// NoLoop does not report the connection's own writes.
	NoLoop bool
}

func (o ClientTrackingOptions) writeArgs(e *enc) {
	if o.Redirect != 0 {
		e.str("REDIRECT")
		e.int(o.Redirect)
	}
	for _, p := range o.Prefixes {
		e.str("PREFIX")
		e.str(p)
	}
	for _, f := range []struct {
		on    bool
		token string
	}{{o.BCast, "BCAST"}, {o.OptIn, "OPTIN"}, {o.OptOut, "OPTOUT"}, {o.NoLoop, "NOLOOP"}} {
		if f.on {
			e.str(f.token)
		}
	}
}

// CommandListFilter filters CommandList; set at most one field.
type CommandListFilter struct {
	Module, ACLCategory, Pattern string
}

func (f CommandListFilter) writeArgs(e *enc) {
	n := 0
	for _, kv := range [][2]string{{"MODULE", f.Module}, {"ACLCAT", f.ACLCategory}, {"PATTERN", f.Pattern}} {
		if kv[1] == "" {
			continue
		}
		if n++; n == 1 {
			e.str("FILTERBY")
		}
		e.str(kv[0])
		e.str(kv[1])
	}
	if n > 1 {
		e.fail("CommandListFilter", "set at most one filter")
	}
}

// FailoverOptions are the options of Failover.
type FailoverOptions struct {
	// Host and Port choose the replica; empty: Redis chooses.
	Host string
	Port int64
	// Force fails over after Timeout even if the replica has not caught up (needs a target
	// and a Timeout).
	Force bool
	// Abort stops a failover in progress (alone).
	Abort bool
	// Timeout bounds the wait for the replica; zero: none.
	Timeout time.Duration
}

func (o FailoverOptions) writeArgs(e *enc) {
	if o.Abort {
		if o.Host != "" || o.Force || o.Timeout != 0 {
			e.fail("FailoverOptions.Abort", "takes no other option")
		}
		e.str("ABORT")
		return
	}
	if o.Host != "" {
		e.str("TO")
		e.str(o.Host)
		e.int(o.Port)
		if o.Force {
			e.str("FORCE")
		}
	} else if o.Force {
		e.fail("FailoverOptions.Force", "needs a target replica")
	}
	if o.Timeout > 0 {
		e.str("TIMEOUT")
		e.millis(o.Timeout)
	}
}

// ModuleLoadOptions are the options of ModuleLoadEx.
type ModuleLoadOptions struct {
	// Config sets module configuration parameters.
	Config map[string]string
	// Args are the module's arguments.
	Args []string
}

func (o ModuleLoadOptions) writeArgs(e *enc) {
	names := make([]string, 0, len(o.Config))
	for k := range o.Config {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		e.str("CONFIG")
		e.str(k)
		e.str(o.Config[k])
	}
	if len(o.Args) > 0 {
		e.str("ARGS")
		e.strs(o.Args)
	}
}

// ShutdownOptions are the options of Shutdown.
type ShutdownOptions struct {
	// NoSave skips saving; Save saves even without save points.
	NoSave, Save bool
	// Now skips waiting for lagging replicas; Force ignores errors that would stop it.
	Now, Force bool
	// Abort cancels a shutdown in progress (alone).
	Abort bool
}

func (o ShutdownOptions) writeArgs(e *enc) {
	if o.NoSave && o.Save {
		e.fail("ShutdownOptions", "NoSave and Save exclude each other")
	}
	for _, f := range []struct {
		on    bool
		token string
	}{{o.NoSave, "NOSAVE"}, {o.Save, "SAVE"}, {o.Now, "NOW"}, {o.Force, "FORCE"}, {o.Abort, "ABORT"}} {
		if f.on {
			e.str(f.token)
		}
	}
}

// SlotRange is a range of cluster slots, both ends included.
type SlotRange struct {
	Start, End int64
}

func (r SlotRange) writeArgs(e *enc) {
	e.int(r.Start)
	e.int(r.End)
}
