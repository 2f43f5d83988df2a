package engine

import "github.com/respire-go/respire/netio/resp"

// Shape is the set of replies a command accepts. A typed command knows what its reply looks
// like (SET answers OK, GET a bulk string or a null, INCR an integer); a reply of another shape
// means the connection no longer pairs replies with commands, for whatever reason (a session
// change the client did not see, a proxy bug, a desynchronised stream). A transport completes
// such a command with a *resp.ProtocolError and fails the connection at once, before it
// completes anything else (see Command.Replied), so that a wrong reply never becomes a value.
//
// Error replies fit every shape: they are the server's answer to the command. The zero Shape
// accepts every reply (raw commands).
type Shape struct {
	// kinds has bit 1<<k for every accepted resp.Kind k; zero accepts every kind.
	kinds uint32
	// elems, when positive, is one more than the exact element count of an aggregate reply
	// (pairs count as two elements, as in resp.Value.Len).
	elems int32
	// text, when set, is the only simple string accepted ("OK").
	text string
}

// ShapeOf returns the shape that accepts replies of the given kinds.
func ShapeOf(kinds ...resp.Kind) Shape {
	var s Shape
	for _, k := range kinds {
		s.kinds |= 1 << k
	}
	return s
}

// Text returns s restricted to one simple-string text: Text("OK") for SET and friends.
func (s Shape) Text(text string) Shape {
	s.text = text
	return s
}

// Elems returns s restricted to aggregates of exactly n elements (for a map, n counts keys and
// values).
func (s Shape) Elems(n int) Shape {
	s.elems = int32(n) + 1
	return s
}

// Fits reports whether v is a reply of the shape.
func (s Shape) Fits(v *resp.Value) bool {
	if s.kinds == 0 && s.text == "" && s.elems == 0 {
		return true
	}
	switch v.Kind {
	case resp.KindSimpleError, resp.KindBulkError:
		return true
	}
	if s.kinds != 0 && s.kinds&(1<<v.Kind) == 0 {
		return false
	}
	if s.text != "" && v.Kind == resp.KindSimpleString && string(v.Str) != s.text {
		return false
	}
	if s.elems > 0 && v.Kind.IsAggregate() && v.Len() != int(s.elems-1) {
		return false
	}
	return true
}

// Misfit returns nil when the reply the transport stored in Reply fits Expect. Otherwise it
// returns the *resp.ProtocolError the command must complete with: the server ran something, but
// what came back is not this command's reply, so the outcome is unknown (the command completes at
// StageAwaitingReply and is never resent). The transport must then stop the connection taking
// commands, and only then complete the command with the error (Complete): a caller woken by it
// must not be able to hand its next command to a connection that no longer pairs replies. It
// fails the connection with the error before it completes anything else: the replies that follow
// cannot be trusted to pair with their commands either. Only a misfit allocates.
func (c *Command) Misfit() error {
	if c.Expect.Fits(&c.Reply) {
		return nil
	}
	return &resp.ProtocolError{Reason: "reply of kind " + c.Reply.Kind.String() + " does not fit " + c.Name}
}
