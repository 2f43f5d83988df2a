package client

import (
	"context"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/internal/command"
	"github.com/respire-go/respire/netio/resp"
)

// Commands is respire's typed command surface: one method per Redis command (or per form of
// a command), generated from Redis's own description of its commands (internal/command) and
// shared by every executor. *Client and *DedicatedConn embed it, so c.Get(ctx, "k") and
// d.Get(ctx, "k") are the same method, and a function that takes a Commands works on both:
//
//	func loadUser(ctx context.Context, r client.Commands, id string) (map[string]string, error) {
//		return r.HGetAll(ctx, "user:"+id)
//	}
//
// Each method encodes its arguments, sends the command and decodes the reply into a Go type
// that is the same under RESP2 and RESP3 (a map for HGETALL, []ZMember for ZRANGE
// WITHSCORES, ...). The reply's shape is checked by the connection before anything is
// decoded: a reply of another shape fails the connection and never becomes a value. Server
// error replies are returned as *ServerError.
//
// Where a method runs depends on the executor:
//   - on *Client, on a shared connection; blocking commands (BLPOP, XREADGROUP with Block,
//     WAIT, ...) rent a dedicated connection for the call and have no reply budget;
//   - on *DedicatedConn, on that connection.
//
// Administrative commands (AdminCommands: CONFIG SET, FLUSHALL, ACL SETUSER, CLIENT KILL,
// ...) fail with ErrAdminDisabled unless Options.AllowAdmin. Commands
// that change the state of their connection (SELECT, CLIENT SETNAME, READONLY, ...) are not
// here: they are methods of *DedicatedConn only. Queue commands for one round trip with a
// Batch.
//
// Obtain a Commands from a Client or a DedicatedConn; the zero value is not usable.
type Commands struct {
	x executor
}

// executor runs prepared calls: a *Client on its shared connections, a *DedicatedConn on its
// own.
type executor interface {
	// owner is the client whose options, pool and endpoint serve the calls.
	owner() *Client
	// space is the namespace the calls run in: their keys are prefixed (prefix.go). nil for
	// none.
	space() *namespace
	// exchange sends one sealed call and waits for its reply. nil means cl.cmd.Reply holds the
	// reply and the caller recycles cl; on error cl has been recycled (or will be by its
	// completion).
	exchange(ctx context.Context, cl *call) error
	// runBatch runs a batch's entries pipelined, or as one MULTI/EXEC transaction (batch.go).
	runBatch(ctx context.Context, b *Batch, mode batchMode) error
	// pin returns an executor whose calls all run on one connection, and the function that
	// gives that connection back: a rented dedicated connection for a Client, the connection
	// itself for a DedicatedConn. Cursors (scan.go) need it: a cursor belongs to one server.
	pin(ctx context.Context) (executor, func(), error)
}

// baseExecutor is an executor that runs batches in any namespace: a View runs its batches on
// its client's (or pinned dedicated connection's) in its own.
type baseExecutor interface {
	executor
	runBatchIn(ctx context.Context, b *Batch, mode batchMode, ns *namespace) error
}

// cmdSpec names one command of the table: its words on the wire (the name, and the
// subcommand of a container) and its description.
type cmdSpec struct {
	info  *command.Info
	words []string
	// head is words encoded as bulk strings, appended to every frame at once (encode.go).
	head string
}

// spec returns the cmdSpec of a command of the table. The generated code declares one per
// command at package initialisation; an unknown name is a generator bug, so it panics.
func spec(name, sub string) *cmdSpec {
	info := command.Lookup(name, sub)
	if info == nil || (sub != "" && info.Name() != name+" "+sub) {
		panic("respire: the command table has no " + name + " " + sub)
	}
	s := &cmdSpec{info: info, words: []string{name}}
	if sub != "" {
		s.words = append(s.words, sub)
	}
	s.head = encodeWords(s.words)
	return s
}

// enc encodes one command's frame, appending it to *buf: a pooled call's frame for a command
// sent alone, a Batch's buffer for a queued one.
type enc struct {
	buf   *[]byte
	start int
	// n counts the arguments written; want is the count declared by begin (-1: dynamic, the
	// header is inserted by finish).
	n, want int
	spec    *cmdSpec
	shape   engine.Shape
	block   bool
	err     error
}

// begin writes the command's words. n is the total argument count including the words when
// it is known up front, or -1 when options decide it: finish then inserts the header.
func (e *enc) begin(s *cmdSpec, shape engine.Shape, n int) {
	e.spec, e.shape, e.want = s, shape, n
	e.start = len(*e.buf)
	b := *e.buf
	if n >= 0 {
		b = appendArrayHead(b, n)
	}
	*e.buf = append(b, s.head...)
	e.n += len(s.words)
}

// finish completes the frame: it inserts the argument count of a dynamic frame, and checks a
// declared one (a mismatch would leave the server waiting for arguments that never come).
func (e *enc) finish() {
	if e.want >= 0 {
		if e.n != e.want {
			panic("respire: " + e.spec.info.Name() + " encoded " + strconv.Itoa(e.n) + " arguments, declared " + strconv.Itoa(e.want))
		}
		return
	}
	var tmp [24]byte
	h := resp.AppendArrayHeader(tmp[:0], e.n)
	b := append(*e.buf, h...)
	copy(b[e.start+len(h):], b[e.start:len(b)-len(h)])
	copy(b[e.start:], h)
	*e.buf = b
	e.want = e.n
}

// fail records the first encoding error: the command is not sent.
func (e *enc) fail(option, reason string) {
	if e.err == nil {
		e.err = configErr(option, reason)
	}
}

func (e *enc) str(s string) { *e.buf = appendBulkArg(*e.buf, s); e.n++ }
func (e *enc) bytes(b []byte) {
	*e.buf = appendBulkArgBytes(*e.buf, b)
	e.n++
}
func (e *enc) int(n int64) { *e.buf = appendBulkArgInt(*e.buf, n); e.n++ }
func (e *enc) uint(n uint64) {
	var tmp [24]byte
	e.bytes(strconv.AppendUint(tmp[:0], n, 10))
}
func (e *enc) float(f float64) {
	var tmp [32]byte
	e.bytes(strconv.AppendFloat(tmp[:0], f, 'f', -1, 64))
}

// strs writes every element.
func (e *enc) strs(ss []string) {
	for _, s := range ss {
		e.str(s)
	}
}

// counted writes len(ss) and then the elements (numkeys forms).
func (e *enc) counted(ss []string) {
	e.int(int64(len(ss)))
	e.strs(ss)
}

// seconds writes a duration as whole seconds, rounded up (EXPIRE, SETEX).
func (e *enc) seconds(d time.Duration) { e.int(int64((d + time.Second - 1) / time.Second)) }

// millis writes a duration as whole milliseconds, rounded up (PEXPIRE, PSETEX).
func (e *enc) millis(d time.Duration) {
	e.int(int64((d + time.Millisecond - 1) / time.Millisecond))
}

// timeout writes a block timeout in seconds with a fraction (BLPOP); zero blocks indefinitely.
func (e *enc) timeout(d time.Duration) {
	if d < 0 {
		e.fail("timeout", "must not be negative (zero blocks indefinitely)")
	}
	e.float(d.Seconds())
}

// unix writes a time as Unix seconds; unixMillis as Unix milliseconds.
func (e *enc) unix(t time.Time)       { e.int(t.Unix()) }
func (e *enc) unixMillis(t time.Time) { e.int(t.UnixMilli()) }

// need checks that a variadic argument is not empty.
func (e *enc) need(option string, n int) {
	if n == 0 {
		e.fail(option, e.spec.info.Name()+" needs at least one")
	}
}

// pairs checks that a variadic argument holds pairs (field, value, ...), at least one.
func (e *enc) pairs(option string, n int) {
	if n == 0 || n%2 != 0 {
		e.fail(option, e.spec.info.Name()+" needs pairs, at least one")
	}
}

// argWriter is an options struct or an element type that writes its own arguments.
type argWriter interface {
	writeArgs(e *enc)
}

// encoder returns an encoder that builds cl's frame.
func (cl *call) encoder() enc {
	cl.cmd.Frame = cl.cmd.Frame[:0]
	return enc{buf: &cl.cmd.Frame}
}

// seal checks an encoded call and fills in what the connection and the error paths need.
func (cl *call) seal(e *enc, c *Client) error {
	if e.err != nil {
		return e.err
	}
	e.finish()
	info := e.spec.info
	if info.Admin() && !c.opts.AllowAdmin {
		return ErrAdminDisabled
	}
	cl.cmd.Name = info.Name()
	cl.cmd.Expect = e.shape
	cl.blocking = e.block || info.Blocking() == command.BlockingAlways
	cl.readable = readable(info)
	cl.hedgeable = cl.readable && hedgeable(info) && !cl.blocking
	return nil
}

// run seals and sends an encoded call, then decodes its reply with dec. The call is recycled.
func run[T any](ctx context.Context, x executor, cl *call, e *enc, dec func(*resp.Value) (T, error)) (T, error) {
	var zero T
	c := x.owner()
	if err := cl.seal(e, c); err != nil {
		c.putCall(cl)
		return zero, err
	}
	ns, rk := x.space(), replyNoKeys
	if ns != nil {
		var err error
		if rk, err = ns.applyTo(cl, e.spec.info); err != nil {
			c.putCall(cl)
			return zero, err
		}
	}
	var err error
	if c.hooks == nil {
		err = x.exchange(ctx, cl)
	} else {
		err = c.hookCommand(ctx, cl, viaExecutor, x, nil)
	}
	if err != nil {
		return zero, err
	}
	v := &cl.cmd.Reply
	if v.IsError() {
		c.noteReadOnly(v)
		err := serverError(v, cl.cmd.Name, c.Endpoint(), "")
		c.putCall(cl)
		return zero, err
	}
	if rk != replyNoKeys {
		stripped := ns.strip(v, rk)
		v = &stripped
	}
	out, err := dec(v)
	c.putCall(cl)
	return out, err
}

// prepare takes a pooled call of the executor's client and its encoder.
func (c Commands) prepare() (*call, enc) {
	cl := c.x.owner().getCall()
	return cl, cl.encoder()
}

// owner implements executor.
func (c *Client) owner() *Client { return c }

// space implements executor: Options.KeyPrefix and Options.PubSubPrefix.
func (c *Client) space() *namespace { return c.ns }

// pin implements executor: a dedicated connection rented for the cursor.
func (c *Client) pin(ctx context.Context) (executor, func(), error) {
	d, err := c.Dedicated(ctx)
	if err != nil {
		return nil, nil, err
	}
	return d, func() { _ = d.Close() }, nil
}

// exchange implements executor: a blocking call rents a dedicated connection, any other call
// goes to a shared connection.
func (c *Client) exchange(ctx context.Context, cl *call) error {
	if cl.blocking {
		return c.exchangeDedicated(ctx, cl)
	}
	return c.execute(ctx, cl)
}

// exchangeDedicated runs a blocking call on a dedicated connection rented for it, so that it
// never holds up a shared connection.
func (c *Client) exchangeDedicated(ctx context.Context, cl *call) error {
	sent := false
	rent, err := c.rentFor(cl)
	if err != nil {
		c.putCall(cl)
		return err
	}
	err = rent(ctx, func(d *DedicatedConn) error {
		sent = true
		return d.exchange(ctx, cl)
	})
	if !sent {
		c.putCall(cl) // the rent failed: the call never reached a connection
	}
	return err
}

// owner implements executor.
func (d *DedicatedConn) owner() *Client { return d.c }

// space implements executor: the client's prefixes.
func (d *DedicatedConn) space() *namespace { return d.c.ns }

// pin implements executor: the connection is already the caller's alone.
func (d *DedicatedConn) pin(context.Context) (executor, func(), error) { return d, func() {}, nil }

// exchange implements executor.
func (d *DedicatedConn) exchange(ctx context.Context, cl *call) error {
	if cl.blocking {
		return d.exchangeBlocking(ctx, cl)
	}
	if err := d.acquire(); err != nil {
		d.c.putCall(cl)
		return err
	}
	defer d.release()
	cls := [1]*call{cl}
	return d.roundTrip(ctx, d.budget(), cls[:])
}
