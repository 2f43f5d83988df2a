package wire

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// Maintenance notifications are RESP3 pushes a managed Redis service sends on a connection that
// enabled them with CLIENT MAINT_NOTIFICATIONS ON. ParseMaintNotice reads these shapes:
//
//	MOVING       <seq> <grace-seconds> <host:port | null>
//	MIGRATING    <seq> <seconds> [<shard-id> ...]
//	MIGRATED     <seq> [<shard-id> ...]
//	FAILING_OVER <seq> <seconds> [<shard-id> ...]
//	FAILED_OVER  <seq> [<shard-id> ...]
//	SMIGRATING   <seq> <slots> ...
//	SMIGRATED    <seq> [<host:port> <slots>] ...
//
// Numbers are RESP integers or decimal strings. Slots are a slot ("100"), a range ("100-200"),
// or several of them separated by commas. A null MOVING endpoint means "reconnect to the
// configured host, resolved again". SMIGRATED names each new owner with the slots it now serves,
// as a two-element array per owner.

// Bounds of a maintenance notice, checked before anything is allocated for it.
const (
	// MaxMaintNoticeElements bounds the elements of a notice push (and of one SMIGRATED entry
	// list): a notice larger than that is malformed.
	MaxMaintNoticeElements = 1024
	// MaxMaintSlotRanges bounds the slot ranges of one notice.
	MaxMaintSlotRanges = fsm.SlotCount
	// MaxMaintSeconds bounds a notice's time field: one day.
	MaxMaintSeconds = 24 * 60 * 60
)

// ErrNotMaintNotice is returned by ParseMaintNotice for a value that is not a maintenance notice
// (another push, such as a pub/sub message or a client-side caching invalidation).
var ErrNotMaintNotice = errors.New("respire: not a maintenance notification")

// ErrMalformedMaintNotice is wrapped by every *MaintNoticeError.
var ErrMalformedMaintNotice = errors.New("respire: malformed maintenance notification")

// MaintNoticeError reports a maintenance notification that does not have its defined shape. It
// names the field at fault but never quotes the push: no host name or shard name reaches a log
// through it.
type MaintNoticeError struct {
	// Notice is the notification's name ("MOVING", ...).
	Notice string
	// Where locates the fault ("element 2", "entry 1, slots"), or is empty.
	Where string
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *MaintNoticeError) Error() string {
	msg := "respire: malformed " + e.Notice + " notification"
	if e.Where != "" {
		msg += " at " + e.Where
	}
	return msg + ": " + e.Reason
}

// Unwrap returns ErrMalformedMaintNotice.
func (e *MaintNoticeError) Unwrap() error { return ErrMalformedMaintNotice }

var maintKinds = map[string]fsm.MaintKind{
	"MOVING": fsm.MaintMoving, "MIGRATING": fsm.MaintMigrating, "MIGRATED": fsm.MaintMigrated,
	"FAILING_OVER": fsm.MaintFailingOver, "FAILED_OVER": fsm.MaintFailedOver,
	"SMIGRATING": fsm.MaintSlotMigrating, "SMIGRATED": fsm.MaintSlotMigrated,
}

// IsMaintNotice reports whether v is a push whose first element names a maintenance
// notification, without parsing the rest.
func IsMaintNotice(v *resp.Value) bool {
	if v.Kind != resp.KindPush || v.Len() == 0 {
		return false
	}
	head := v.Elem(0)
	_, ok := maintKinds[string(head.Str)]
	return ok && isText(&head)
}

func isText(v *resp.Value) bool {
	return v.Kind == resp.KindBulkString || v.Kind == resp.KindSimpleString
}

// ParseMaintNotice parses a maintenance notification push (see the shapes above). Another value
// gives ErrNotMaintNotice; a malformed notice, a *MaintNoticeError.
func ParseMaintNotice(v *resp.Value) (fsm.MaintNotice, error) {
	if !IsMaintNotice(v) {
		return fsm.MaintNotice{}, ErrNotMaintNotice
	}
	head := v.Elem(0)
	name := string(head.Str)
	n := fsm.MaintNotice{Kind: maintKinds[name]}
	fail := func(where, reason string) (fsm.MaintNotice, error) {
		return fsm.MaintNotice{}, &MaintNoticeError{Notice: name, Where: where, Reason: reason}
	}
	count := v.Len()
	if count > MaxMaintNoticeElements {
		return fail("", "more than "+strconv.Itoa(MaxMaintNoticeElements)+" elements")
	}
	if count < 2 {
		return fail("", "no sequence number")
	}
	seq := v.Elem(1)
	var ok bool
	if n.Seq, ok = maintNumber(&seq); !ok || n.Seq < 0 {
		return fail("element 1", "sequence number is not a non-negative integer")
	}
	next := 2
	timed := n.Kind == fsm.MaintMoving || n.Kind == fsm.MaintMigrating || n.Kind == fsm.MaintFailingOver
	if timed {
		if count < 3 {
			return fail("", "no time")
		}
		tv := v.Elem(2)
		secs, ok := maintNumber(&tv)
		if !ok || secs < 0 || secs > MaxMaintSeconds {
			return fail("element 2", "time is not a number of seconds from 0 to 86400")
		}
		n.Time = time.Duration(secs) * time.Second
		next = 3
	}
	switch n.Kind {
	case fsm.MaintMoving:
		if count != 4 {
			return fail("", "not a sequence number, a time and an endpoint")
		}
		ev := v.Elem(3)
		if ev.Kind == resp.KindNull {
			break // re-resolve the configured host
		}
		if !isText(&ev) {
			return fail("element 3", "endpoint is not a string or null")
		}
		ep, err := fsm.ParseEndpoint(string(ev.Str))
		if err != nil || ep.Host == "" {
			return fail("element 3", "endpoint is not host:port")
		}
		n.Target = ep
	case fsm.MaintMigrating, fsm.MaintMigrated, fsm.MaintFailingOver, fsm.MaintFailedOver:
		for i := next; i < count; i++ {
			sv := v.Elem(i)
			switch {
			case isText(&sv):
				n.Shards = append(n.Shards, string(sv.Str))
			case sv.Kind == resp.KindInteger:
				n.Shards = append(n.Shards, strconv.FormatInt(sv.Int, 10))
			default:
				return fail("element "+strconv.Itoa(i), "shard is not a string")
			}
		}
	case fsm.MaintSlotMigrating:
		if count == 2 {
			return fail("", "no slots")
		}
		for i := next; i < count; i++ {
			sv := v.Elem(i)
			var reason string
			if n.Slots, reason = appendMaintSlots(n.Slots, &sv); reason != "" {
				return fail("element "+strconv.Itoa(i), reason)
			}
			if len(n.Slots) > MaxMaintSlotRanges {
				return fail("element "+strconv.Itoa(i), "more than 16384 ranges")
			}
		}
	case fsm.MaintSlotMigrated:
		ranges := 0
		for i := next; i < count; i++ {
			entry := v.Elem(i)
			where := "entry " + strconv.Itoa(i-next)
			if (entry.Kind != resp.KindArray && entry.Kind != resp.KindSet) || entry.Len() != 2 {
				return fail(where, "not an endpoint and its slots")
			}
			ev, sv := entry.Elem(0), entry.Elem(1)
			if !isText(&ev) {
				return fail(where+", endpoint", "not a string")
			}
			ep, err := fsm.ParseEndpoint(string(ev.Str))
			if err != nil || ep.Host == "" {
				return fail(where+", endpoint", "not host:port")
			}
			m := fsm.SlotMove{Target: ep}
			var reason string
			if m.Ranges, reason = appendMaintSlots(nil, &sv); reason != "" {
				return fail(where+", slots", reason)
			}
			if ranges += len(m.Ranges); ranges > MaxMaintSlotRanges {
				return fail(where+", slots", "more than 16384 ranges")
			}
			n.Moves = append(n.Moves, m)
		}
	}
	return n, nil
}

// maintNumber reads a RESP integer or a decimal string.
func maintNumber(v *resp.Value) (int64, bool) {
	switch {
	case v.Kind == resp.KindInteger:
		return v.Int, true
	case isText(v):
		n, err := strconv.ParseInt(string(v.Str), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// appendMaintSlots appends the slot ranges of one element ("5", "5-9", "5,7-9", or an integer).
func appendMaintSlots(dst []fsm.SlotRange, v *resp.Value) ([]fsm.SlotRange, string) {
	if v.Kind == resp.KindInteger {
		if v.Int < 0 || v.Int >= fsm.SlotCount {
			return dst, "slot out of range"
		}
		return append(dst, fsm.SlotRange{First: uint16(v.Int), Last: uint16(v.Int)}), ""
	}
	if !isText(v) {
		return dst, "slots are not a string"
	}
	text := string(v.Str)
	if text == "" {
		return dst, "no slots"
	}
	if strings.Count(text, ",") >= MaxMaintSlotRanges {
		return dst, "more than 16384 ranges"
	}
	for part := range strings.SplitSeq(text, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err1 := strconv.Atoi(lo)
		last := first
		var err2 error
		if isRange {
			last, err2 = strconv.Atoi(hi)
		}
		switch {
		case err1 != nil || err2 != nil:
			return dst, "slot is not a number"
		case first < 0 || last >= fsm.SlotCount || first > last:
			return dst, "slot range out of order or out of 0-16383"
		}
		dst = append(dst, fsm.SlotRange{First: uint16(first), Last: uint16(last)})
	}
	return dst, ""
}

// MaintMode is how a connection opts in to maintenance notifications during its handshake.
type MaintMode uint8

// Maintenance modes.
const (
	// MaintDisabled (the zero value): no maintenance handshake.
	MaintDisabled MaintMode = iota
	// MaintAuto: a RESP3 connection sends CLIENT MAINT_NOTIFICATIONS ON. An unknown-command ERR
	// turns the feature off for that connection; any other error reply fails the setup. A RESP2
	// connection does not ask.
	MaintAuto
	// MaintEnabled: the connection must speak RESP3 and the server must acknowledge
	// CLIENT MAINT_NOTIFICATIONS ON; anything else fails the setup.
	MaintEnabled
)

// String returns "disabled", "auto" or "enabled".
func (m MaintMode) String() string {
	switch m {
	case MaintDisabled:
		return "disabled"
	case MaintAuto:
		return "auto"
	case MaintEnabled:
		return "enabled"
	}
	return "maint(" + strconv.Itoa(int(m)) + ")"
}

// maintCommand is the setup command's diagnostic name.
const maintCommand = "CLIENT MAINT_NOTIFICATIONS"

// MaintEnabled reports whether the server acknowledged the maintenance opt-in: the connection
// relaxes timeouts on its notifications. Valid once Done.
func (h *Handshake) MaintEnabled() bool { return h.maintOn }

// appendMaint appends CLIENT MAINT_NOTIFICATIONS ON when the mode asks for it and the connection
// speaks RESP3. A MaintEnabled handshake never reaches RESP2: the HELLO refusal fails it.
func (h *Handshake) appendMaint(dst []byte) []byte {
	if h.cfg.Maintenance == MaintDisabled || h.proto != 3 {
		return dst
	}
	dst = resp.AppendCommand(dst, "CLIENT", "MAINT_NOTIFICATIONS", "ON")
	h.batch = append(h.batch, step{command: maintCommand, maint: true})
	return dst
}

// maintNeedsRESP3 is the hint of a MaintEnabled handshake whose server answered HELLO 3 with an
// error: notifications are RESP3 pushes.
const maintNeedsRESP3 = "maintenance notifications are enabled and need RESP3, which the server refused"

// maintReply judges the reply to CLIENT MAINT_NOTIFICATIONS ON.
func (h *Handshake) maintReply(st step, v *resp.Value) error {
	switch {
	case v.IsError():
		code, msg := v.ErrorCode(), v.ErrorMessage()
		if h.cfg.Maintenance == MaintAuto && code == "ERR" && isUnknownCommand(msg) {
			break // the server does not know it: off for this connection
		}
		return h.reject(st, code, msg, "")
	case (v.Kind == resp.KindSimpleString || v.Kind == resp.KindBulkString) && strings.EqualFold(string(v.Str), "OK"):
		h.maintOn = true
	default:
		return &resp.ProtocolError{Reason: "CLIENT MAINT_NOTIFICATIONS reply is " + v.Kind.String() + ", not OK"}
	}
	h.answered()
	return nil
}

// isUnknownCommand recognizes Redis's wording for an unknown command or subcommand.
func isUnknownCommand(msg string) bool {
	m := strings.ToLower(msg)
	return strings.HasPrefix(m, "err unknown command") || strings.HasPrefix(m, "err unknown subcommand")
}
