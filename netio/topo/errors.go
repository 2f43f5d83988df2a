package topo

import (
	"errors"

	"github.com/respire-go/respire/fsm"
)

// ErrMalformedReply is wrapped by every *ReplyError: a reply that does not have the shape its
// command defines. Such a reply is never applied.
var ErrMalformedReply = errors.New("respire: malformed reply")

// ReplyError reports a malformed topology reply or redirect. Its message says where and what is
// wrong; it never quotes the reply, so no host name, address or key reaches a log through it.
type ReplyError struct {
	// Command is the command the reply answered ("CLUSTER SLOTS", ...), or the redirect ("MOVED",
	// "ASK").
	Command string
	// Where locates the fault, such as "entry 2, node 1, port" or "line 3, flags"; empty when the
	// whole reply is at fault.
	Where string
	// Reason says what is wrong.
	Reason string
	// Err is the rule of fsm.TopologyReply.Validate the reply breaks, or nil.
	Err error
}

// Error implements error.
func (e *ReplyError) Error() string {
	msg := "respire: malformed " + e.Command + " reply"
	if e.Where != "" {
		msg += " at " + e.Where
	}
	return msg + ": " + e.Reason
}

// Unwrap returns ErrMalformedReply and, when set, Err.
func (e *ReplyError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrMalformedReply, e.Err}
	}
	return []error{ErrMalformedReply}
}

// ErrTopologyRejected is wrapped by every *TopologyRejectedError.
var ErrTopologyRejected = errors.New("respire: cluster topology query rejected")

// TopologyRejectedError reports that the server answered a topology query with an error: a server
// without Cluster support ("ERR This instance has cluster support disabled"), an older server
// without CLUSTER SHARDS, or a user without permission (NOPERM). It is not a malformed reply: the
// server is fine, it just will not say.
type TopologyRejectedError struct {
	// Query is the command that was refused.
	Query fsm.TopologyQuery
	// Code is the first word of the server's error, such as "ERR" or "NOPERM". The rest of the
	// message is not kept: it can name the user.
	Code string
}

// Error implements error.
func (e *TopologyRejectedError) Error() string {
	return "respire: " + e.Query.String() + " rejected by the server with " + e.Code
}

// Unwrap returns ErrTopologyRejected.
func (e *TopologyRejectedError) Unwrap() error { return ErrTopologyRejected }
