package topo

import (
	"errors"
	"strconv"
	"strings"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// The Sentinel protocol: the replies of SENTINEL GET-MASTER-ADDR-BY-NAME, SENTINEL MASTER,
// SENTINEL SENTINELS and SENTINEL REPLICAS (sentinel.go), of ROLE (sentinel_role.go), and the
// event messages Sentinels publish (sentinel_event.go). sentinel_answer.go turns them into the
// payloads of the fsm Sentinel machines.
//
// Sentinel answers the instance queries with one record per instance: a RESP3 map, or in RESP2
// an array of alternating field names and values. Every value is a bulk string, numbers too;
// the parsers also take integers. Fields they do not know are ignored, so newer Sentinels
// parse; a record without a field they need, or with a value out of range, gives a
// *ReplyError that names the field but never quotes the reply.

// Bounds of the Sentinel parsers: entries beyond them are not parsed.
const (
	// MaxSentinelPeers bounds the Sentinels a SENTINEL SENTINELS reply yields, the most the
	// resolution learns (fsm.MaxLearnedSentinels).
	MaxSentinelPeers = fsm.MaxLearnedSentinels
	// MaxSentinelReplicas bounds the replicas a SENTINEL REPLICAS reply or a primary's ROLE
	// reply yields.
	MaxSentinelReplicas = 1024
	// MaxSentinelPrimaries bounds the monitored names a Sentinel's ROLE reply yields.
	MaxSentinelPrimaries = 1024
)

// Errors of the Sentinel parsers. Match them with errors.Is; error replies give a
// *QueryRejectedError and malformed replies a *ReplyError.
var (
	// ErrQueryRejected is wrapped by every *QueryRejectedError.
	ErrQueryRejected = errors.New("respire: query rejected by the server")
	// ErrPermissionDenied is wrapped by a *QueryRejectedError whose code is NOPERM: the user may
	// not run the command. Without SENTINEL MASTER, discovery falls back to
	// GET-MASTER-ADDR-BY-NAME and ROLE; without ROLE, no primary can be validated.
	ErrPermissionDenied = errors.New("respire: no permission to run the command (NOPERM)")
	// ErrUnknownPrimary: the Sentinel does not monitor a primary of that name (a null address,
	// or "No such master with that name").
	ErrUnknownPrimary = errors.New("respire: the sentinel does not monitor a primary of that name")
)

// QueryRejectedError reports that a server answered a Sentinel query or ROLE with an error
// reply. Only the error's code is kept: the rest of the message can name the user.
type QueryRejectedError struct {
	// Command is the query ("SENTINEL MASTER", "ROLE", ...).
	Command string
	// Code is the first word of the server's error, such as "ERR" or "NOPERM", or "?" when that
	// word does not look like an error code.
	Code string
	// unknown marks Sentinel's answer for a name it does not monitor.
	unknown bool
}

// Error implements error.
func (e *QueryRejectedError) Error() string {
	msg := "respire: " + e.Command + " rejected by the server with " + e.Code
	if e.unknown {
		msg += " (no such primary)"
	}
	return msg
}

// Unwrap returns ErrQueryRejected, and ErrPermissionDenied for NOPERM or ErrUnknownPrimary for
// an unknown name.
func (e *QueryRejectedError) Unwrap() []error {
	switch {
	case e.Code == "NOPERM":
		return []error{ErrQueryRejected, ErrPermissionDenied}
	case e.unknown:
		return []error{ErrQueryRejected, ErrUnknownPrimary}
	}
	return []error{ErrQueryRejected}
}

// noSuchPrimary is Sentinel's error message for a name it does not monitor.
const noSuchPrimary = "ERR No such master with that name"

// queryRejected returns the error for a query answered with an error reply, or nil.
func queryRejected(command string, v *resp.Value) error {
	if !v.IsError() {
		return nil
	}
	return &QueryRejectedError{Command: command, Code: safeCode(v.ErrorCode()), unknown: v.ErrorMessage() == noSuchPrimary}
}

// safeCode returns code when it looks like a Redis error code (1 to 32 upper-case letters,
// digits, '_' or '-'), and "?" otherwise, so that an odd first word never carries data into an
// error message.
func safeCode(code string) string {
	if code == "" || len(code) > 32 {
		return "?"
	}
	for i := 0; i < len(code); i++ {
		if c := code[i]; !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return "?"
		}
	}
	return code
}

// SentinelFlags are the flags Sentinel reports for an instance ("master,s_down", ...).
type SentinelFlags uint32

// Instance flags, by their names in Sentinel's replies. Unknown names are ignored.
const (
	FlagPrimary            SentinelFlags = 1 << iota // master
	FlagReplica                                      // slave
	FlagSentinel                                     // sentinel
	FlagSubjectivelyDown                             // s_down
	FlagObjectivelyDown                              // o_down
	FlagPrimaryDown                                  // master_down
	FlagDisconnected                                 // disconnected
	FlagFailoverInProgress                           // failover_in_progress
	FlagPromoted                                     // promoted
	FlagReconfigSent                                 // reconf_sent
	FlagReconfigInProgress                           // reconf_inprog
	FlagReconfigDone                                 // reconf_done
	FlagForceFailover                                // force_failover
	FlagScriptKillSent                               // script_kill_sent
	FlagPrimaryRebooted                              // master_reboot
)

var flagNames = [...]string{"master", "slave", "sentinel", "s_down", "o_down", "master_down",
	"disconnected", "failover_in_progress", "promoted", "reconf_sent", "reconf_inprog",
	"reconf_done", "force_failover", "script_kill_sent", "master_reboot"}

// Has reports whether every flag of x is set.
func (f SentinelFlags) Has(x SentinelFlags) bool { return f&x == x }

// Down reports whether the Sentinel sees the instance down, subjectively or objectively, or
// not connected.
func (f SentinelFlags) Down() bool {
	return f&(FlagSubjectivelyDown|FlagObjectivelyDown|FlagDisconnected) != 0
}

// String returns the flags as Sentinel writes them, comma-separated, in a fixed order.
func (f SentinelFlags) String() string {
	var dst []byte
	for i, name := range flagNames {
		if f&(1<<i) != 0 {
			if len(dst) > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, name...)
		}
	}
	return string(dst)
}

// parseFlags parses a comma-separated flag list, ignoring names it does not know.
func parseFlags(s string) SentinelFlags {
	var f SentinelFlags
	for more := true; more; {
		var name string
		name, s, more = strings.Cut(s, ",")
		for i, n := range flagNames {
			if n == name {
				f |= 1 << i
			}
		}
	}
	return f
}

// SentinelPrimary is a SENTINEL MASTER reply: the Sentinel's view of the primary.
type SentinelPrimary struct {
	// Name is the name the primary is monitored under.
	Name string
	// Addr is the primary's address, in canonical form.
	Addr fsm.Endpoint
	// RunID is the primary's run ID, empty until the Sentinel learned it.
	RunID string
	// Flags are the Sentinel's flags for the primary.
	Flags SentinelFlags
	// ConfigEpoch is the configuration epoch of the primary's current address, when
	// HasConfigEpoch. It grows with every failover.
	ConfigEpoch    uint64
	HasConfigEpoch bool
	// Replicas, OtherSentinels and Quorum are num-slaves, num-other-sentinels and quorum.
	Replicas, OtherSentinels, Quorum int
}

// SentinelPeer is one entry of a SENTINEL SENTINELS reply: another Sentinel.
type SentinelPeer struct {
	// Addr is the Sentinel's address, in canonical form.
	Addr fsm.Endpoint
	// RunID is the Sentinel's run ID.
	RunID string
	// Flags are the answering Sentinel's flags for it.
	Flags SentinelFlags
}

// SentinelReplica is one entry of a SENTINEL REPLICAS reply.
type SentinelReplica struct {
	// Addr is the replica's address, in canonical form.
	Addr fsm.Endpoint
	// RunID is the replica's run ID, empty until the Sentinel learned it.
	RunID string
	// Flags are the Sentinel's flags for the replica.
	Flags SentinelFlags
	// LinkUp reports master-link-status "ok": the replica's link to its primary is up.
	LinkUp bool
	// Primary is the primary the replica reports (master-host, master-port); the zero
	// Endpoint when it reports none ("?").
	Primary fsm.Endpoint
	// Priority is slave-priority (0: never promoted), and ReplOffset slave-repl-offset.
	Priority   int
	ReplOffset int64
}

// record is one instance record of a SENTINEL reply, read field by field.
type record struct {
	command string
	where   string
	kv      []resp.Value
}

// readRecord checks that v is a map, or an array of alternating names and values.
func readRecord(command, where string, v *resp.Value) (record, error) {
	kv, ok := pairs(v)
	if !ok {
		return record{}, &ReplyError{Command: command, Where: where, Reason: "not a map of fields"}
	}
	return record{command: command, where: where, kv: kv}, nil
}

// find returns the value of field name, or nil.
func (r *record) find(name string) *resp.Value {
	for i := 0; i+1 < len(r.kv); i += 2 {
		if isText(&r.kv[i], name) {
			return &r.kv[i+1]
		}
	}
	return nil
}

func (r *record) fail(field, reason string) error {
	where := field
	if r.where != "" {
		where = r.where + ", " + field
	}
	return &ReplyError{Command: r.command, Where: where, Reason: reason}
}

// text returns a string field; a required one must be present.
func (r *record) text(name string, required bool) (string, bool, error) {
	v := r.find(name)
	if v == nil {
		if required {
			return "", false, r.fail(name, "missing")
		}
		return "", false, nil
	}
	s, ok := text(v)
	if !ok {
		return "", false, r.fail(name, "not a string")
	}
	return s, true, nil
}

// number returns a decimal field (a string of digits, or an integer) within [lo, hi].
func (r *record) number(name string, required bool, lo, hi int64) (int64, bool, error) {
	v := r.find(name)
	if v == nil {
		if required {
			return 0, false, r.fail(name, "missing")
		}
		return 0, false, nil
	}
	n, ok := decimal(v)
	if !ok || n < lo || n > hi {
		return 0, false, r.fail(name, "not a number from "+strconv.FormatInt(lo, 10)+" to "+strconv.FormatInt(hi, 10))
	}
	return n, true, nil
}

// addr returns the record's address from its ip and port fields.
func (r *record) addr(hostField, portField string) (fsm.Endpoint, error) {
	host, _, err := r.text(hostField, true)
	if err != nil {
		return fsm.Endpoint{}, err
	}
	h, herr := fsm.ParseHost(host)
	if herr != nil || h == "" {
		return fsm.Endpoint{}, r.fail(hostField, "neither an IP address nor a host name")
	}
	port, _, err := r.number(portField, true, 1, 65535)
	if err != nil {
		return fsm.Endpoint{}, err
	}
	return fsm.Endpoint{Host: h, Port: int(port)}, nil
}

// decimal returns an integer, or a string holding a decimal integer (at most 20 characters).
func decimal(v *resp.Value) (int64, bool) {
	if n, ok := integer(v); ok {
		return n, true
	}
	s, ok := text(v)
	if !ok || len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// maxInt bounds the counts a record holds.
const maxInt = 1<<31 - 1

// ParseSentinelPrimaryAddr parses a SENTINEL GET-MASTER-ADDR-BY-NAME reply: an array of the
// primary's IP address (or host name) and port. A null reply, for a name the Sentinel does not
// monitor, gives ErrUnknownPrimary; an error reply a *QueryRejectedError; anything else
// malformed a *ReplyError.
func ParseSentinelPrimaryAddr(v resp.Value) (fsm.Endpoint, error) {
	const command = "SENTINEL GET-MASTER-ADDR-BY-NAME"
	if err := queryRejected(command, &v); err != nil {
		return fsm.Endpoint{}, err
	}
	if v.IsNull() {
		return fsm.Endpoint{}, ErrUnknownPrimary
	}
	fail := func(reason string) (fsm.Endpoint, error) {
		return fsm.Endpoint{}, &ReplyError{Command: command, Reason: reason}
	}
	if v.Kind != resp.KindArray || v.Len() != 2 {
		return fail("not an array of an address and a port")
	}
	host, port := v.Elem(0), v.Elem(1)
	h, ok := text(&host)
	if !ok {
		return fail("address is not a string")
	}
	h, err := fsm.ParseHost(h)
	if err != nil || h == "" {
		return fail("address is neither an IP address nor a host name")
	}
	p, ok := decimal(&port)
	if !ok || p < 1 || p > 65535 {
		return fail("port is not a number from 1 to 65535")
	}
	return fsm.Endpoint{Host: h, Port: int(p)}, nil
}

// ParseSentinelMaster parses a SENTINEL MASTER reply. The address, port and flags are required;
// config-epoch is optional (HasConfigEpoch reports it), as are the counts. An error reply gives
// a *QueryRejectedError (matching ErrPermissionDenied for NOPERM and ErrUnknownPrimary for an
// unknown name).
func ParseSentinelMaster(v resp.Value) (SentinelPrimary, error) {
	const command = "SENTINEL MASTER"
	if err := queryRejected(command, &v); err != nil {
		return SentinelPrimary{}, err
	}
	r, err := readRecord(command, "", &v)
	if err != nil {
		return SentinelPrimary{}, err
	}
	var p SentinelPrimary
	if p.Addr, err = r.addr("ip", "port"); err != nil {
		return SentinelPrimary{}, err
	}
	flags, _, err := r.text("flags", true)
	if err != nil {
		return SentinelPrimary{}, err
	}
	p.Flags = parseFlags(flags)
	if !p.Flags.Has(FlagPrimary) {
		return SentinelPrimary{}, r.fail("flags", "do not include master")
	}
	if p.Name, _, err = r.text("name", false); err != nil {
		return SentinelPrimary{}, err
	}
	if p.RunID, _, err = r.text("runid", false); err != nil {
		return SentinelPrimary{}, err
	}
	epoch, has, err := r.number("config-epoch", false, 0, 1<<63-1)
	if err != nil {
		return SentinelPrimary{}, err
	}
	p.ConfigEpoch, p.HasConfigEpoch = uint64(epoch), has
	for _, c := range []struct {
		name string
		dst  *int
	}{{"num-slaves", &p.Replicas}, {"num-other-sentinels", &p.OtherSentinels}, {"quorum", &p.Quorum}} {
		n, _, err := r.number(c.name, false, 0, maxInt)
		if err != nil {
			return SentinelPrimary{}, err
		}
		*c.dst = int(n)
	}
	return p, nil
}

// instances returns the records of an array reply, at most limit of them.
func instances(command string, v *resp.Value, limit int) ([]record, error) {
	if err := queryRejected(command, v); err != nil {
		return nil, err
	}
	if v.Kind != resp.KindArray {
		return nil, &ReplyError{Command: command, Reason: "not an array"}
	}
	n := min(v.Len(), limit)
	out := make([]record, 0, n)
	for i := 0; i < n; i++ {
		e := v.Elem(i)
		r, err := readRecord(command, where("entry", i), &e)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// ParseSentinelSentinels parses a SENTINEL SENTINELS reply: the other Sentinels monitoring the
// primary, at most MaxSentinelPeers (later entries are not parsed). Each needs its ip, port and
// flags. An error reply gives a *QueryRejectedError.
func ParseSentinelSentinels(v resp.Value) ([]SentinelPeer, error) {
	records, err := instances("SENTINEL SENTINELS", &v, MaxSentinelPeers)
	if err != nil {
		return nil, err
	}
	peers := make([]SentinelPeer, 0, len(records))
	for i := range records {
		r := &records[i]
		var p SentinelPeer
		if p.Addr, err = r.addr("ip", "port"); err != nil {
			return nil, err
		}
		flags, _, err := r.text("flags", true)
		if err != nil {
			return nil, err
		}
		if p.Flags = parseFlags(flags); !p.Flags.Has(FlagSentinel) {
			return nil, r.fail("flags", "do not include sentinel")
		}
		if p.RunID, _, err = r.text("runid", false); err != nil {
			return nil, err
		}
		peers = append(peers, p)
	}
	return peers, nil
}

// ParseSentinelReplicas parses a SENTINEL REPLICAS (or SENTINEL SLAVES) reply: the primary's
// replicas, at most MaxSentinelReplicas. Each needs its ip, port and flags; master-link-status,
// master-host, master-port, slave-priority and slave-repl-offset are read when present. An
// error reply gives a *QueryRejectedError.
func ParseSentinelReplicas(v resp.Value) ([]SentinelReplica, error) {
	records, err := instances("SENTINEL REPLICAS", &v, MaxSentinelReplicas)
	if err != nil {
		return nil, err
	}
	replicas := make([]SentinelReplica, 0, len(records))
	for i := range records {
		r := &records[i]
		var rep SentinelReplica
		if rep.Addr, err = r.addr("ip", "port"); err != nil {
			return nil, err
		}
		flags, _, err := r.text("flags", true)
		if err != nil {
			return nil, err
		}
		if rep.Flags = parseFlags(flags); !rep.Flags.Has(FlagReplica) {
			return nil, r.fail("flags", "do not include slave")
		}
		if rep.RunID, _, err = r.text("runid", false); err != nil {
			return nil, err
		}
		status, _, err := r.text("master-link-status", false)
		if err != nil {
			return nil, err
		}
		rep.LinkUp = status == "ok"
		if host, ok, err := r.text("master-host", false); err != nil {
			return nil, err
		} else if ok && host != "?" {
			if rep.Primary, err = r.addr("master-host", "master-port"); err != nil {
				return nil, err
			}
		}
		priority, _, err := r.number("slave-priority", false, 0, maxInt)
		if err != nil {
			return nil, err
		}
		rep.Priority = int(priority)
		if rep.ReplOffset, _, err = r.number("slave-repl-offset", false, 0, 1<<63-1); err != nil {
			return nil, err
		}
		replicas = append(replicas, rep)
	}
	return replicas, nil
}
