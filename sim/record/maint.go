package record

import (
	"strconv"
	"time"

	"github.com/respire-go/respire/fsm"
)

// MaintEpoch is the time.Time that virtual time zero stands for where the client's maintenance
// code takes times (engine.Relax): virtual time t is MaintEpoch.Add(t). Any fixed non-zero time
// would do; the machines only compare and subtract them.
var MaintEpoch = time.Unix(0, 0).UTC()

// MaintEventKind is the kind of a MaintEvent.
type MaintEventKind uint8

// Maintenance record kinds.
const (
	// MaintReady: a connection whose handshake enabled maintenance notifications became ready.
	MaintReady MaintEventKind = iota + 1
	// MaintNotice: such a connection received and applied a notice (Notice, Time).
	MaintNotice
	// MaintClosed: such a connection's client side closed; Unanswered counts the commands it had
	// written and not seen answered.
	MaintClosed
	// MaintSubscriberNotice: a pub/sub connection received a notice (Notice, Time). Nothing on
	// it is relaxed or handed off; the record shows that the notice arrived and was not a message.
	MaintSubscriberNotice
)

var maintEventNames = [...]string{"", "ready", "notice", "closed", "subscriber-notice"}

// String returns "ready", "notice", "closed" or "subscriber-notice".
func (k MaintEventKind) String() string {
	if int(k) < len(maintEventNames) && k != 0 {
		return maintEventNames[k]
	}
	return "maint(" + strconv.Itoa(int(k)) + ")"
}

// MaintEvent is one fact about a connection that opted in to maintenance notifications
// (Result.Maint), recorded by the simulated network, not by the client: what the checkers of
// relaxed deadlines and MOVING handoffs judge the client against.
type MaintEvent struct {
	// Kind is what happened.
	Kind MaintEventKind
	// Conn is the connection and Slot its command slot (-1: another machine's).
	Conn fsm.ConnID
	Slot int
	// At is the virtual time.
	At time.Duration
	// Notice is the notice's kind, and Time its time field (MOVING's grace), for MaintNotice.
	Notice fsm.MaintKind
	Time   time.Duration
	// Unanswered is, for MaintClosed, the number of written commands left without a reply.
	Unanswered int
}
