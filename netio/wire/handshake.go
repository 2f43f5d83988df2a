package wire

import (
	"strconv"
	"strings"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// Protocol selects the RESP version a connection speaks.
type Protocol int

// Protocols.
const (
	// ProtocolAuto sends HELLO 3 and falls back to RESP2 on the same connection only when the
	// server reports an unknown HELLO or NOPROTO.
	ProtocolAuto Protocol = 0
	// ProtocolRESP2 skips HELLO.
	ProtocolRESP2 Protocol = 2
	// ProtocolRESP3 requires RESP3: a HELLO failure fails the connection.
	ProtocolRESP3 Protocol = 3
)

// String returns "auto", "resp2" or "resp3".
func (p Protocol) String() string {
	switch p {
	case ProtocolAuto:
		return "auto"
	case ProtocolRESP2:
		return "resp2"
	case ProtocolRESP3:
		return "resp3"
	}
	return "protocol(" + strconv.Itoa(int(p)) + ")"
}

// HandshakeConfig is what a new connection sets up before it carries application commands.
type HandshakeConfig struct {
	// Protocol is the protocol to negotiate.
	Protocol Protocol
	// Username and Password authenticate the connection; Password empty means no AUTH. Username
	// empty with a password means the default user.
	Username, Password string
	// Database is selected when not zero.
	Database int
	// ClientName is set with CLIENT SETNAME (or HELLO SETNAME) when not empty.
	ClientName string
	// LibraryName and LibraryVersion are sent with CLIENT SETINFO when LibraryName is not empty.
	// Server errors on them never fail the handshake.
	LibraryName, LibraryVersion string
	// ClientID asks the server for the connection's id (CLIENT ID), the identity a fence names
	// (CLIENT KILL ID) when the connection dies with replies outstanding. It is fail-soft: a
	// refusal (an ACL without CLIENT ID, a server without the command) or a reply that is not an
	// integer leaves the connection without an id, and never fails the handshake.
	ClientID bool
	// Maintenance opts the connection in to maintenance notifications (see MaintMode).
	// MaintEnabled requires a Protocol other than ProtocolRESP2 (engine/config rejects the pair).
	Maintenance MaintMode
	// ReadOnly sends READONLY after the session setup: the connection goes to a Cluster replica
	// and carries reads of its primary's slots. A refusal fails the handshake (without READONLY
	// the replica would answer every read with MOVED).
	ReadOnly bool
}

// transientCodes are the server error codes that do not prove a permanent rejection.
var transientCodes = map[string]bool{
	"LOADING": true, "BUSY": true, "CLUSTERDOWN": true, "TRYAGAIN": true, "MASTERDOWN": true,
}

// IsTransientCode reports whether a server error code is transient (LOADING, BUSY, CLUSTERDOWN,
// TRYAGAIN, MASTERDOWN).
func IsTransientCode(code string) bool { return transientCodes[code] }

// HandshakeError is a server error reply that failed a handshake. Its message is the server's,
// without the server's echo of the request (see RedactReply): it never contains the credentials
// that were sent.
type HandshakeError struct {
	// Command is the setup command that was rejected (HELLO, AUTH, SELECT, CLIENT SETNAME).
	Command string
	// Code is the error's first word (WRONGPASS, NOPERM, LOADING, ERR, ...).
	Code string
	// Message is the server's error message, starting with Code, without what the server echoed
	// of the request (see RedactReply).
	Message string
	// Hint is an extra explanation added by respire, or empty.
	Hint string

	maxClients bool
}

// Error implements error.
func (e *HandshakeError) Error() string {
	msg := "respire: handshake " + e.Command + " rejected: " + e.Message
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Class classifies the rejection: transient codes (and "ERR max number of clients reached", a
// capacity condition) may be retried; everything else, including ordinary ERR, is permanent.
func (e *HandshakeError) Class() fsm.FailureClass {
	if IsTransientCode(e.Code) || e.maxClients {
		return fsm.Transient
	}
	return fsm.Permanent
}

// step is one setup command in a batch and how its reply is judged.
type step struct {
	command  string // diagnostic name
	optional bool   // errors are ignored (CLIENT SETINFO, CLIENT ID)
	hello    bool   // the HELLO of Auto mode: unknown-command or NOPROTO falls back
	clientID bool   // CLIENT ID: an integer reply is the connection's id
	maint    bool   // CLIENT MAINT_NOTIFICATIONS ON (maint.go)
}

// Handshake is the pure setup sequence of one connection: it produces pipelined request batches
// and judges their replies. It does no I/O; netio and the simulator drive it over their own
// transports, so both speak exactly the same handshake.
//
// Use: for { frames, n := h.Next(buf); if n == 0 { break }; write frames; read n replies, passing
// each to Reply, stopping at the first error }.
type Handshake struct {
	cfg      HandshakeConfig
	batch    []step
	replied  int
	proto    int
	phase    int // 0: first batch not sent; 1: first batch sent; 2: second batch sent; 3: done
	second   bool
	fallback bool
	// id is the connection's CLIENT ID (ClientID), valid when identified.
	id         int64
	identified bool
	maintOn    bool // the server acknowledged CLIENT MAINT_NOTIFICATIONS ON
}

// NewHandshake returns the handshake for cfg.
func NewHandshake(cfg HandshakeConfig) *Handshake {
	return &Handshake{cfg: cfg, proto: 2}
}

// Protocol returns the negotiated RESP version (2 or 3). Valid once Done.
func (h *Handshake) Protocol() int { return h.proto }

// Done reports whether the handshake completed successfully.
func (h *Handshake) Done() bool { return h.phase == 3 }

// FellBack reports whether Auto mode fell back to RESP2.
func (h *Handshake) FellBack() bool { return h.fallback }

// ClientID returns the connection's server-side id and whether the server gave it: only with
// HandshakeConfig.ClientID, and only when CLIENT ID answered with an integer. Valid once Done.
func (h *Handshake) ClientID() (int64, bool) { return h.id, h.identified }

// AskedClientID reports whether the handshake asks for the connection's id
// (HandshakeConfig.ClientID).
func (h *Handshake) AskedClientID() bool { return h.cfg.ClientID }

// Next appends the next batch of setup commands to dst and returns it with the number of replies
// the batch expects. It returns n == 0 when the handshake is complete (or has nothing to send).
// Call Next again only after all replies of the previous batch were accepted.
func (h *Handshake) Next(dst []byte) ([]byte, int) {
	h.batch = h.batch[:0]
	h.replied = 0
	switch h.phase {
	case 0:
		h.phase = 1
		switch h.cfg.Protocol {
		case ProtocolRESP2:
			h.proto = 2
			dst = h.appendLegacySetup(dst)
			dst = h.appendSession(dst)
		case ProtocolRESP3:
			dst = h.appendHello(dst, false)
			dst = h.appendSession(dst)
		default:
			// Negotiation completes first: its answer decides how the rest is sent.
			dst = h.appendHello(dst, true)
			h.second = true
		}
	case 1:
		h.phase = 2
		if !h.second {
			break
		}
		if h.fallback {
			dst = h.appendLegacySetup(dst)
		}
		dst = h.appendSession(dst)
	}
	if len(h.batch) == 0 {
		h.phase = 3
		return dst, 0
	}
	return dst, len(h.batch)
}

// Answered reports whether every command of the current batch has its reply: time for Next.
func (h *Handshake) Answered() bool { return h.replied == len(h.batch) }

// Reply judges the reply to the next command of the current batch. A non-nil error fails the
// handshake; the connection must then be closed.
func (h *Handshake) Reply(v *resp.Value) error {
	if h.replied >= len(h.batch) {
		return &resp.ProtocolError{Reason: "unexpected reply during handshake"}
	}
	st := h.batch[h.replied]
	h.replied++
	if st.maint {
		return h.maintReply(st, v)
	}
	if v.IsError() {
		code, msg := v.ErrorCode(), v.ErrorMessage()
		switch {
		case st.optional:
			// CLIENT SETINFO: unsupported or denied metadata never fails the handshake.
		case st.hello && h.cfg.Maintenance == MaintEnabled:
			return h.reject(st, code, msg, maintNeedsRESP3)
		case st.hello && (code == "NOPROTO" || isUnknownHello(msg)):
			h.fallback = true
			h.proto = 2
		case st.hello && code == "ERR" && strings.Contains(strings.ToLower(msg), "unknown"):
			return h.reject(st, code, msg, "the server or a proxy does not support HELLO; set the protocol to RESP2 explicitly")
		default:
			return h.reject(st, code, msg, "")
		}
	} else if st.clientID {
		if v.Kind == resp.KindInteger {
			h.id, h.identified = v.Int, true
		}
	} else if st.hello {
		if v.Kind != resp.KindMap && v.Kind != resp.KindArray {
			return &resp.ProtocolError{Reason: "HELLO reply is " + v.Kind.String() + ", not a map"}
		}
		h.proto = 3
	}
	h.answered()
	return nil
}

// answered completes the handshake once the last batch has all its replies.
func (h *Handshake) answered() {
	if h.replied == len(h.batch) && (h.phase == 2 || !h.second) {
		h.phase = 3
	}
}

// reject builds the error of a rejected setup command from the reply's code and its message
// without the server's echo of the request (see RedactReply): Redis echoes the first arguments of
// an unknown command ("ERR unknown command 'HELLO', with args beginning with: '3' 'AUTH'
// 'default' '<password>'"), possibly cut short or, through a proxy, in another letter case.
func (h *Handshake) reject(st step, code, msg, hint string) *HandshakeError {
	maxClients := code == "ERR" && strings.Contains(msg, "max number of clients")
	return &HandshakeError{Command: st.command, Code: code, Message: RedactReply(msg, st.command, h.cfg.Password), Hint: hint,
		maxClients: maxClients}
}

// isUnknownHello recognizes Redis's unknown-command wording for HELLO.
func isUnknownHello(msg string) bool {
	m := strings.ToLower(msg)
	return strings.HasPrefix(m, "err unknown command") && strings.Contains(m, "hello")
}

func (h *Handshake) appendHello(dst []byte, auto bool) []byte {
	args := 2
	if h.cfg.Password != "" {
		args += 3
	}
	if h.cfg.ClientName != "" {
		args += 2
	}
	dst = resp.AppendArrayHeader(dst, args)
	dst = resp.AppendBulkString(dst, "HELLO")
	dst = resp.AppendBulkString(dst, "3")
	if h.cfg.Password != "" {
		user := h.cfg.Username
		if user == "" {
			user = "default"
		}
		dst = resp.AppendBulkString(dst, "AUTH")
		dst = resp.AppendBulkString(dst, user)
		dst = resp.AppendBulkString(dst, h.cfg.Password)
	}
	if h.cfg.ClientName != "" {
		dst = resp.AppendBulkString(dst, "SETNAME")
		dst = resp.AppendBulkString(dst, h.cfg.ClientName)
	}
	h.batch = append(h.batch, step{command: "HELLO", hello: auto})
	if !auto {
		h.proto = 3
	}
	return dst
}

// appendLegacySetup appends AUTH and CLIENT SETNAME for a RESP2 connection.
func (h *Handshake) appendLegacySetup(dst []byte) []byte {
	if h.cfg.Password != "" {
		if h.cfg.Username != "" {
			dst = resp.AppendCommand(dst, "AUTH", h.cfg.Username, h.cfg.Password)
		} else {
			dst = resp.AppendCommand(dst, "AUTH", h.cfg.Password)
		}
		h.batch = append(h.batch, step{command: "AUTH"})
	}
	if h.cfg.ClientName != "" {
		dst = resp.AppendCommand(dst, "CLIENT", "SETNAME", h.cfg.ClientName)
		h.batch = append(h.batch, step{command: "CLIENT SETNAME"})
	}
	return dst
}

// appendSession appends the maintenance opt-in, SELECT, the library metadata and CLIENT ID.
func (h *Handshake) appendSession(dst []byte) []byte {
	dst = h.appendMaint(dst)
	if h.cfg.Database != 0 {
		dst = resp.AppendArrayHeader(dst, 2)
		dst = resp.AppendBulkString(dst, "SELECT")
		dst = resp.AppendBulkInt(dst, int64(h.cfg.Database))
		h.batch = append(h.batch, step{command: "SELECT"})
	}
	if h.cfg.LibraryName != "" {
		dst = resp.AppendCommand(dst, "CLIENT", "SETINFO", "LIB-NAME", h.cfg.LibraryName)
		h.batch = append(h.batch, step{command: "CLIENT SETINFO", optional: true})
		if h.cfg.LibraryVersion != "" {
			dst = resp.AppendCommand(dst, "CLIENT", "SETINFO", "LIB-VER", h.cfg.LibraryVersion)
			h.batch = append(h.batch, step{command: "CLIENT SETINFO", optional: true})
		}
	}
	if h.cfg.ClientID {
		dst = resp.AppendCommand(dst, "CLIENT", "ID")
		h.batch = append(h.batch, step{command: "CLIENT ID", optional: true, clientID: true})
	}
	if h.cfg.ReadOnly {
		dst = resp.AppendCommand(dst, "READONLY")
		h.batch = append(h.batch, step{command: "READONLY"})
	}
	return dst
}
