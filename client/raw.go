package client

import (
	"bytes"
	"reflect"
	"strconv"

	"github.com/respire-go/respire/internal/command"
	"github.com/respire-go/respire/netio/resp"
)

// Raw commands (Client.Do, DedicatedConn.Do, Tx.Do) are encoded first and classified from the
// bytes that will be sent, whatever Go types carried the command name and subcommand: the
// admin guard, the session refusals and the blocking detection all read the same table
// (internal/command), generated from Redis's own description of its commands.

// ErrSessionCommand: a raw command that changes the state of the connection that runs it was
// refused before anything was sent. On Client.Do, the connection is shared with other callers,
// who would see the change (another database, another user, queued or missing replies); on
// DedicatedConn.Do and Tx.Do, respire manages that state itself (transactions, subscriptions)
// or cannot run the command at all (MONITOR, CLIENT REPLY). Match it with errors.Is; a
// *SessionCommandError names the command and the alternative.
var ErrSessionCommand = sentinel("respire: command refused: it changes the state of its connection")

// SessionCommandError reports a raw command refused because of what it does to its
// connection. Nothing was sent. errors.Is(err, ErrSessionCommand) matches it.
type SessionCommandError struct {
	// Command is the refused command, upper case, with its subcommand ("CLIENT REPLY").
	Command string
	// Path is the method that refused it: "Client.Do", "DedicatedConn.Do" or "Tx.Do".
	Path string
	// Reason says what the command would do there.
	Reason string
	// Alternative names what to use instead.
	Alternative string
}

// Error implements error.
func (e *SessionCommandError) Error() string {
	return "respire: " + e.Path + " refuses " + e.Command + ": " + e.Reason + " (alternative: " + e.Alternative + ")"
}

// Is matches ErrSessionCommand.
func (e *SessionCommandError) Is(target error) bool { return target == ErrSessionCommand }

// Where a raw command is refused.
const (
	pathShared    = "Client.Do"
	pathDedicated = "DedicatedConn.Do"
	pathTx        = "Tx.Do"
	pathPipeline  = "Commands.Pipeline"
	pathAtomic    = "Commands.Atomic"
)

// sharedReasons says, per session class, why a command cannot run on a shared connection.
var sharedReasons = [...]string{
	command.SessionTransaction: "on a shared connection it would take other callers' commands into the transaction",
	command.SessionWatch:       "on a shared connection its locks would cover other callers' commands",
	command.SessionState:       "on a shared connection it would change the connection for every other caller",
	command.SessionSubscribe:   "it would put a command connection in subscriber mode",
	command.SessionTakeover:    "it breaks the one-reply-per-command exchange respire's connections rely on",
}

// refuseShared returns the refusal of a session-changing command on a shared connection
// (Client.Do, or a batch on a Client).
func refuseShared(info *command.Info, path string) error {
	return &SessionCommandError{Command: info.Name(), Path: path, Reason: sharedReasons[info.Session()],
		Alternative: info.Alternative()}
}

// refuseDedicated returns the refusal of a command DedicatedConn.Do does not run, or nil: the
// transaction commands (Exec sends them), subscriptions and the takeover commands. The others
// run; state changes mark the connection for discarding (see DedicatedConn.Do).
func refuseDedicated(info *command.Info, path string) error {
	switch info.Session() {
	case command.SessionTransaction:
		return &SessionCommandError{Command: info.Name(), Path: path,
			Reason:      "transactions on a dedicated connection go through Exec or Atomic, which pair MULTI, the commands and EXEC",
			Alternative: "DedicatedConn.Exec or Commands.Atomic"}
	case command.SessionSubscribe, command.SessionTakeover:
		return &SessionCommandError{Command: info.Name(), Path: path, Reason: sharedReasons[info.Session()],
			Alternative: info.Alternative()}
	}
	return nil
}

// refuseTx returns the refusal of a command that cannot be queued in a transaction, or nil.
func refuseTx(info *command.Info, path string) error {
	switch info.Session() {
	case command.SessionTransaction, command.SessionWatch:
		return &SessionCommandError{Command: info.Name(), Path: path,
			Reason:      "the transaction sends MULTI and EXEC itself, and WATCH must come before MULTI",
			Alternative: "DedicatedConn.Watch or Client.Watch before Exec"}
	case command.SessionSubscribe, command.SessionTakeover:
		return &SessionCommandError{Command: info.Name(), Path: path, Reason: sharedReasons[info.Session()],
			Alternative: info.Alternative()}
	}
	return nil
}

// argSpan locates one encoded argument's payload in a call's frame.
type argSpan struct{ start, end int }

// rawCall encodes a raw command (args[0] is its name) into a pooled call and classifies it by
// its encoded name and subcommand. info is nil for a command the table does not know (a module
// command, a command of a later Redis version): it is sent as it is. Admin commands are refused
// here, before anything is sent, unless AllowAdmin.
func (c *Client) rawCall(args []any) (*call, *command.Info, error) {
	cl := c.getCall()
	cl.cmd.Frame = cl.cmd.Frame[:0]
	info, name, err := appendRawSpans(&cl.cmd.Frame, &cl.spans, args)
	if err != nil {
		c.putCall(cl)
		return nil, nil, err
	}
	cl.cmd.Name = name
	cl.cmd.Expect = anyReply
	if info != nil && info.Admin() && !c.opts.AllowAdmin {
		c.putCall(cl)
		return nil, nil, ErrAdminDisabled
	}
	cl.blocking = cl.mayBlock(info)
	cl.readable = readable(info)
	cl.hedgeable = cl.readable && hedgeable(info) && !cl.blocking
	return cl, info, nil
}

// appendRaw encodes a raw command at the end of *buf and classifies it by its encoded name and
// subcommand; name is the name errors use. The admin rule is left to the caller.
func appendRaw(buf *[]byte, args []any) (info *command.Info, name string, err error) {
	var spans []argSpan
	return appendRawSpans(buf, &spans, args)
}

// appendRawSpans is appendRaw that also locates every argument's payload in *buf.
func appendRawSpans(buf *[]byte, spans *[]argSpan, args []any) (info *command.Info, name string, err error) {
	if len(args) == 0 {
		return nil, "", configErr("args", "Do needs a command name")
	}
	*buf = resp.AppendArrayHeader(*buf, len(args))
	*spans = (*spans)[:0]
	for _, a := range args {
		before := len(*buf)
		if !appendArg(buf, a) {
			return nil, "", configErr("args", "unsupported argument type "+typeName(a)+
				" (use string, []byte, int, int64, uint64, float64 or bool)")
		}
		// The payload follows the "$<len>\r\n" header and precedes the final CRLF.
		start := before + bytes.IndexByte((*buf)[before:], '\n') + 1
		*spans = append(*spans, argSpan{start: start, end: len(*buf) - 2})
	}
	nameArg := spanOf(*buf, (*spans)[0])
	if len(nameArg) == 0 {
		return nil, "", configErr("args", "Do's first argument must be the command name")
	}
	var sub []byte
	if len(args) > 1 {
		sub = spanOf(*buf, (*spans)[1])
	}
	info = command.Lookup(nameArg, sub)
	if info != nil {
		return info, info.Name(), nil
	}
	return nil, unknownName(nameArg), nil
}

func spanOf(buf []byte, s argSpan) []byte { return buf[s.start:s.end] }

// span returns the payload of encoded argument i.
func (cl *call) span(i int) []byte { return spanOf(cl.cmd.Frame, cl.spans[i]) }

// views returns every encoded argument, as slices of the frame (valid until the frame changes).
func (cl *call) views() [][]byte {
	cl.argv = cl.argv[:0]
	for i := range cl.spans {
		cl.argv = append(cl.argv, cl.span(i))
	}
	return cl.argv
}

// mayBlock reports whether a classified raw call may wait on the server.
func (cl *call) mayBlock(info *command.Info) bool {
	return info != nil && info.Blocking() != command.BlockingNever && info.MayBlock(cl.views())
}

// frameArgs returns the arguments of an encoded command frame (one this package encoded:
// an array of bulk strings), as slices of it.
func frameArgs(frame []byte) [][]byte {
	var args [][]byte
	i := bytes.IndexByte(frame, '\n') + 1
	for i < len(frame) {
		nl := bytes.IndexByte(frame[i:], '\n')
		n, _ := strconv.Atoi(string(frame[i+1 : i+nl-1]))
		start := i + nl + 1
		args = append(args, frame[start:start+n])
		i = start + n + 2
	}
	return args
}

// appendArg encodes one raw argument as a bulk string; it reports false for an unsupported
// type.
func appendArg(buf *[]byte, a any) bool {
	switch v := a.(type) {
	case string:
		*buf = resp.AppendBulkString(*buf, v)
	case []byte:
		*buf = resp.AppendBulk(*buf, v)
	case int:
		*buf = resp.AppendBulkInt(*buf, int64(v))
	case int64:
		*buf = resp.AppendBulkInt(*buf, v)
	case uint64:
		var tmp [24]byte
		*buf = resp.AppendBulk(*buf, strconv.AppendUint(tmp[:0], v, 10))
	case float64:
		var tmp [32]byte
		*buf = resp.AppendBulk(*buf, strconv.AppendFloat(tmp[:0], v, 'g', -1, 64))
	case bool:
		if v {
			*buf = resp.AppendBulkInt(*buf, 1)
		} else {
			*buf = resp.AppendBulkInt(*buf, 0)
		}
	default:
		return false
	}
	return true
}

// typeName names an argument's Go type for an error, without its value. (reflect.TypeOf does
// not make the argument escape, as fmt would: Do's arguments stay off the heap.)
func typeName(a any) string {
	if a == nil {
		return "nil"
	}
	return reflect.TypeOf(a).String()
}

// maxUnknownName bounds the name of an unknown command kept for errors.
const maxUnknownName = 32

// unknownName returns the upper-case name of a command the table does not know, truncated.
func unknownName(name []byte) string {
	if len(name) > maxUnknownName {
		name = name[:maxUnknownName]
	}
	return string(bytes.ToUpper(name))
}
