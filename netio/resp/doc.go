// Package resp is the RESP2/RESP3 wire vocabulary of respire: the Value
// model of a reply, an incremental zero-allocation parser, a streaming
// Reader, append-style encoders, and a parser for command requests.
//
// The package is a leaf: it imports nothing else from the module and does
// no I/O except through Reader, which wraps an io.Reader. The same code
// serves the real-socket layer, the engine, the public client, and the
// deterministic simulator, whose simulated Redis nodes read requests with
// ParseCommand and answer with AppendValue.
//
// # Values
//
// A Value holds any RESP value; its Kind says which fields carry the
// payload (see Value), and Len, Elem and All read the elements of an
// aggregate. RESP3 attributes never stand alone: the '|' map is attached
// to the value that follows it (Value.Attrs). The RESP2 null bulk string
// "$-1" and null array "*-1" parse as KindNull, with Value.NullForm
// recording the form so that RESP2 output can reproduce it.
//
// # Parsing
//
// Parse decodes one value from the front of a buffer and reports how many
// bytes it used, or ErrIncomplete if the buffer ends too soon, having
// consumed nothing. It validates the whole value before writing anything,
// then copies it into storage owned by the destination Value, which later
// parses into the same Value reuse. That storage is compact: a value costs
// about its wire size or less whatever its shape, and elements are decoded
// when they are read. Parse documents exactly which slices alias the
// storage and for how long. Reader does the same over an io.Reader,
// decoding a value as its bytes arrive and reading large bulk payloads
// straight into the value's storage, so that a reply costs at most about
// twice its wire size while it is read.
//
// Parsing never panics, never loops without consuming input, and never
// allocates ahead of the data: Limits bounds string lengths, line
// lengths, element counts, nesting depth and total reply size, and every
// violation, like every malformation, is reported as a *ProtocolError with
// a reason and a byte offset.
//
// # Encoding
//
// AppendCommand and its relatives write requests; AppendValue writes any
// Value as a server would for RESP2 or RESP3, downgrading RESP3-only kinds
// for RESP2 clients the way Redis does. Encoders append to a caller's
// slice and allocate nothing when it has room.
//
// Every error this package creates has a message starting "respire: ".
package resp
