package client

import (
	"context"
	"strconv"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
)

// Reply shapes of the typed commands. The connection checks every reply against its command's
// shape before completing it (engine.Shape): a reply of another shape fails the connection
// with a protocol error and never becomes a value. The decoders below check again.
var (
	anyReply      = engine.Shape{}
	okShape       = engine.ShapeOf(resp.KindSimpleString).Text("OK")
	okOrNullShape = engine.ShapeOf(resp.KindSimpleString, resp.KindNull).Text("OK")
	queuedShape   = engine.ShapeOf(resp.KindSimpleString).Text("QUEUED")
	pongShape     = engine.ShapeOf(resp.KindSimpleString).Text("PONG")
	intShape      = engine.ShapeOf(resp.KindInteger)
	bulkShape     = engine.ShapeOf(resp.KindBulkString, resp.KindNull)
	arrayShape    = engine.ShapeOf(resp.KindArray, resp.KindSet)
	mapShape      = engine.ShapeOf(resp.KindMap, resp.KindArray)
)

// begin starts a frame of n arguments, the first being the command name, for a command whose
// replies have the shape expect.
func (cl *call) begin(name string, n int, expect engine.Shape) {
	cl.cmd.Name = name
	cl.cmd.Expect = expect
	cl.cmd.Frame = resp.AppendArrayHeader(cl.cmd.Frame[:0], n)
	cl.cmd.Frame = resp.AppendBulkString(cl.cmd.Frame, name)
}

func (cl *call) arg(s string)      { cl.cmd.Frame = resp.AppendBulkString(cl.cmd.Frame, s) }
func (cl *call) argInt(n int64)    { cl.cmd.Frame = resp.AppendBulkInt(cl.cmd.Frame, n) }
func (cl *call) argBytes(b []byte) { cl.cmd.Frame = resp.AppendBulk(cl.cmd.Frame, b) }

// run executes a prepared call and hands its reply to decode. Server error replies become
// *ServerError; the call is recycled afterwards.
func (c *Client) run(ctx context.Context, cl *call, decode func(v *resp.Value) error) error {
	if err := c.execute(ctx, cl); err != nil {
		return err
	}
	v := &cl.cmd.Reply
	err := c.replyErrAt(cl.cmd.Name, v, c.endpointFor(&cl.cmd))
	if err == nil {
		err = decode(v)
	}
	c.putCall(cl)
	return err
}

// Do sends a raw command on a shared connection and returns its reply, which owns its memory.
// Arguments may be string, []byte, int, int64, uint64, float64 or bool; the command name and
// subcommand are recognised from their bytes, whatever type carries them, in any letter case.
// An error reply is returned as a *ServerError.
//
// Do refuses, before anything is sent:
//   - high-risk commands (AdminCommands) with ErrAdminDisabled unless Options.AllowAdmin;
//   - commands that change the state of the connection that runs them, with a
//     *SessionCommandError (errors.Is ErrSessionCommand) naming the alternative. The
//     connection is shared: other callers' commands travel on it, so a change of database,
//     user or protocol, a transaction, a subscription or a suppressed reply would reach them
//     too (wrong values, lost writes, mis-paired replies). They are MULTI, EXEC, DISCARD,
//     WATCH, UNWATCH, SELECT, AUTH, HELLO, RESET, READONLY, READWRITE, ASKING, QUIT,
//     MONITOR, SYNC, PSYNC, REPLCONF, SCRIPT DEBUG, the CLIENT subcommands REPLY, SETNAME,
//     SETINFO, TRACKING, CACHING, NO-EVICT and NO-TOUCH, and the subscribe family. Use
//     Options.Database, Options.ClientName, the credential options, Client.Watch and
//     DedicatedConn.Exec, Client.Subscribe, or a dedicated connection (Client.Dedicated).
//
// Blocking commands (BLPOP, XREAD BLOCK, WAIT, ...) run on a rented dedicated connection, with
// no reply budget (see DedicatedConn.Do). Commands respire does not know (module commands, or
// commands newer than Redis 7.2) are sent as they are.
func (c *Client) Do(ctx context.Context, args ...any) (resp.Value, error) {
	cl, info, err := c.rawCall(args)
	if err != nil {
		return resp.Value{}, err
	}
	if info != nil && info.SessionChanging() {
		c.putCall(cl)
		return resp.Value{}, refuseShared(info)
	}
	if cl.mayBlock(info) {
		// A blocking command would hold up a shared connection: it runs on a dedicated one.
		return c.doDedicated(ctx, cl, info)
	}
	var out resp.Value
	err = c.run(ctx, cl, func(v *resp.Value) error {
		out = ownReply(v)
		return nil
	})
	return out, err
}

// Ping sends PING and checks for PONG.
func (c *Client) Ping(ctx context.Context) error {
	cl := c.getCall()
	cl.begin("PING", 1, pongShape)
	return c.run(ctx, cl, func(v *resp.Value) error {
		if s, ok := textOf(v); !ok || s != "PONG" {
			return unexpected("PING", v)
		}
		return nil
	})
}

// Get returns the value of key; found is false when the key does not exist.
func (c *Client) Get(ctx context.Context, key string) (value string, found bool, err error) {
	cl := c.getCall()
	cl.begin("GET", 2, bulkShape)
	cl.arg(key)
	err = c.run(ctx, cl, func(v *resp.Value) error {
		value, found, err = stringReply("GET", v)
		return err
	})
	return value, found, err
}

// SetOptions are the options of SET.
type SetOptions struct {
	// TTL sets an expiry (EX or PX, millisecond precision); zero means none.
	TTL time.Duration
	// KeepTTL retains the key's existing expiry (KEEPTTL).
	KeepTTL bool
	// NX sets only if the key does not exist; XX only if it does.
	NX, XX bool
	// Get returns the previous value (GET).
	Get bool
}

// Set sets key to value.
func (c *Client) Set(ctx context.Context, key, value string) error {
	cl := c.getCall()
	cl.begin("SET", 3, okShape)
	cl.arg(key)
	cl.arg(value)
	return c.run(ctx, cl, okReply)
}

// SetWithOptions runs SET with options. set is false when NX or XX prevented the write. With
// opt.Get, previous and hadPrevious report the old value.
func (c *Client) SetWithOptions(ctx context.Context, key, value string, opt SetOptions) (set bool, previous string, hadPrevious bool, err error) {
	if opt.NX && opt.XX {
		return false, "", false, configErr("SetOptions", "NX and XX are mutually exclusive")
	}
	if opt.TTL < 0 || (opt.TTL > 0 && opt.KeepTTL) {
		return false, "", false, configErr("SetOptions", "TTL must be positive and not combined with KeepTTL")
	}
	n := 3
	if opt.TTL > 0 {
		n += 2
	}
	for _, b := range []bool{opt.KeepTTL, opt.NX, opt.XX, opt.Get} {
		if b {
			n++
		}
	}
	shape := okShape
	switch {
	case opt.Get:
		shape = bulkShape
	case opt.NX || opt.XX:
		shape = okOrNullShape
	}
	cl := c.getCall()
	cl.begin("SET", n, shape)
	cl.arg(key)
	cl.arg(value)
	if opt.TTL > 0 {
		if opt.TTL%time.Second == 0 {
			cl.arg("EX")
			cl.argInt(int64(opt.TTL / time.Second))
		} else {
			cl.arg("PX")
			cl.argInt(max(1, int64(opt.TTL/time.Millisecond)))
		}
	}
	if opt.KeepTTL {
		cl.arg("KEEPTTL")
	}
	if opt.NX {
		cl.arg("NX")
	}
	if opt.XX {
		cl.arg("XX")
	}
	if opt.Get {
		cl.arg("GET")
	}
	err = c.run(ctx, cl, func(v *resp.Value) error {
		if opt.Get {
			previous, hadPrevious, err = stringReply("SET", v)
			// With GET, a null reply means either no previous value or no write; NX/XX decide.
			set = !(opt.NX && hadPrevious) && !(opt.XX && !hadPrevious)
			return err
		}
		if v.Kind == resp.KindNull {
			return nil
		}
		set = true
		return okReply(v)
	})
	return set, previous, hadPrevious, err
}

// Del deletes keys and returns how many existed.
func (c *Client) Del(ctx context.Context, keys ...string) (int64, error) {
	return c.keysInt(ctx, "DEL", keys)
}

// Exists returns how many of keys exist (a key named twice counts twice).
func (c *Client) Exists(ctx context.Context, keys ...string) (int64, error) {
	return c.keysInt(ctx, "EXISTS", keys)
}

func (c *Client) keysInt(ctx context.Context, name string, keys []string) (n int64, err error) {
	if len(keys) == 0 {
		return 0, configErr("keys", name+" needs at least one key")
	}
	cl := c.getCall()
	cl.begin(name, 1+len(keys), intShape)
	for _, k := range keys {
		cl.arg(k)
	}
	err = c.run(ctx, cl, func(v *resp.Value) error {
		n, err = intReply(name, v)
		return err
	})
	return n, err
}

// Expire sets a timeout on key (second precision, rounded up). It reports whether the timeout
// was set (false when the key does not exist).
func (c *Client) Expire(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	secs := int64((ttl + time.Second - 1) / time.Second)
	cl := c.getCall()
	cl.begin("EXPIRE", 3, intShape)
	cl.arg(key)
	cl.argInt(secs)
	var n int64
	err := c.run(ctx, cl, func(v *resp.Value) (err error) {
		n, err = intReply("EXPIRE", v)
		return err
	})
	return n == 1, err
}

// TTL values for keys without a timeout and for missing keys.
const (
	// NoExpiry is returned by TTL for a key that exists without a timeout.
	NoExpiry time.Duration = -1
	// KeyMissing is returned by TTL for a key that does not exist.
	KeyMissing time.Duration = -2
)

// TTL returns key's remaining time to live, NoExpiry, or KeyMissing.
func (c *Client) TTL(ctx context.Context, key string) (time.Duration, error) {
	cl := c.getCall()
	cl.begin("TTL", 2, intShape)
	cl.arg(key)
	var n int64
	err := c.run(ctx, cl, func(v *resp.Value) (err error) {
		n, err = intReply("TTL", v)
		return err
	})
	switch {
	case err != nil:
		return 0, err
	case n == -1:
		return NoExpiry, nil
	case n < 0:
		return KeyMissing, nil
	}
	return time.Duration(n) * time.Second, nil
}

// Incr increments the integer at key by one and returns the new value.
func (c *Client) Incr(ctx context.Context, key string) (int64, error) {
	cl := c.getCall()
	cl.begin("INCR", 2, intShape)
	cl.arg(key)
	var n int64
	err := c.run(ctx, cl, func(v *resp.Value) (err error) {
		n, err = intReply("INCR", v)
		return err
	})
	return n, err
}

// IncrBy increments the integer at key by delta and returns the new value.
func (c *Client) IncrBy(ctx context.Context, key string, delta int64) (int64, error) {
	cl := c.getCall()
	cl.begin("INCRBY", 3, intShape)
	cl.arg(key)
	cl.argInt(delta)
	var n int64
	err := c.run(ctx, cl, func(v *resp.Value) (err error) {
		n, err = intReply("INCRBY", v)
		return err
	})
	return n, err
}

// OptionalString is a value that may be absent (a nil reply).
type OptionalString struct {
	// Value is the string, empty when absent.
	Value string
	// Valid is false when the reply was nil.
	Valid bool
}

// MGet returns the values of keys, in order; missing keys are not Valid.
func (c *Client) MGet(ctx context.Context, keys ...string) ([]OptionalString, error) {
	if len(keys) == 0 {
		return nil, configErr("keys", "MGET needs at least one key")
	}
	cl := c.getCall()
	cl.begin("MGET", 1+len(keys), engine.ShapeOf(resp.KindArray).Elems(len(keys)))
	for _, k := range keys {
		cl.arg(k)
	}
	var out []OptionalString
	err := c.run(ctx, cl, func(v *resp.Value) error {
		if v.Kind != resp.KindArray || v.Len() != len(keys) {
			return unexpected("MGET", v)
		}
		out = make([]OptionalString, len(keys))
		for i, e := range v.All() {
			s, ok, err := stringReply("MGET", &e)
			if err != nil {
				return err
			}
			out[i] = OptionalString{Value: s, Valid: ok}
		}
		return nil
	})
	return out, err
}

// MSet sets several keys atomically: kv is key, value, key, value, ...
func (c *Client) MSet(ctx context.Context, kv ...string) error {
	if len(kv) == 0 || len(kv)%2 != 0 {
		return configErr("kv", "MSET needs key/value pairs")
	}
	cl := c.getCall()
	cl.begin("MSET", 1+len(kv), okShape)
	for _, s := range kv {
		cl.arg(s)
	}
	return c.run(ctx, cl, okReply)
}

// HSet sets fields of the hash at key (fv is field, value, ...) and returns how many were added.
func (c *Client) HSet(ctx context.Context, key string, fv ...string) (int64, error) {
	if len(fv) == 0 || len(fv)%2 != 0 {
		return 0, configErr("fv", "HSET needs field/value pairs")
	}
	cl := c.getCall()
	cl.begin("HSET", 2+len(fv), intShape)
	cl.arg(key)
	for _, s := range fv {
		cl.arg(s)
	}
	var n int64
	err := c.run(ctx, cl, func(v *resp.Value) (err error) {
		n, err = intReply("HSET", v)
		return err
	})
	return n, err
}

// HGet returns a field of the hash at key.
func (c *Client) HGet(ctx context.Context, key, field string) (value string, found bool, err error) {
	cl := c.getCall()
	cl.begin("HGET", 3, bulkShape)
	cl.arg(key)
	cl.arg(field)
	err = c.run(ctx, cl, func(v *resp.Value) error {
		value, found, err = stringReply("HGET", v)
		return err
	})
	return value, found, err
}

// HGetAll returns every field of the hash at key (RESP2 and RESP3 replies are normalized).
func (c *Client) HGetAll(ctx context.Context, key string) (map[string]string, error) {
	cl := c.getCall()
	cl.begin("HGETALL", 2, mapShape)
	cl.arg(key)
	var out map[string]string
	err := c.run(ctx, cl, func(v *resp.Value) error {
		if (v.Kind != resp.KindMap && v.Kind != resp.KindArray) || v.Len()%2 != 0 {
			return unexpected("HGETALL", v)
		}
		out = make(map[string]string, v.Len()/2)
		var k string
		for i, e := range v.All() {
			s, _, err := stringReply("HGETALL", &e)
			if err != nil {
				return err
			}
			if i%2 == 0 {
				k = s
			} else {
				out[k] = s
			}
		}
		return nil
	})
	return out, err
}

// HDel removes fields from the hash at key and returns how many existed.
func (c *Client) HDel(ctx context.Context, key string, fields ...string) (int64, error) {
	return c.keyValuesInt(ctx, "HDEL", key, fields)
}

// LPush prepends values to the list at key and returns its new length.
func (c *Client) LPush(ctx context.Context, key string, values ...string) (int64, error) {
	return c.keyValuesInt(ctx, "LPUSH", key, values)
}

// RPush appends values to the list at key and returns its new length.
func (c *Client) RPush(ctx context.Context, key string, values ...string) (int64, error) {
	return c.keyValuesInt(ctx, "RPUSH", key, values)
}

func (c *Client) keyValuesInt(ctx context.Context, name, key string, values []string) (n int64, err error) {
	if len(values) == 0 {
		return 0, configErr("values", name+" needs at least one value")
	}
	cl := c.getCall()
	cl.begin(name, 2+len(values), intShape)
	cl.arg(key)
	for _, s := range values {
		cl.arg(s)
	}
	err = c.run(ctx, cl, func(v *resp.Value) error {
		n, err = intReply(name, v)
		return err
	})
	return n, err
}

// LPop removes and returns the first element of the list at key.
func (c *Client) LPop(ctx context.Context, key string) (string, bool, error) {
	return c.pop(ctx, "LPOP", key)
}

// RPop removes and returns the last element of the list at key.
func (c *Client) RPop(ctx context.Context, key string) (string, bool, error) {
	return c.pop(ctx, "RPOP", key)
}

func (c *Client) pop(ctx context.Context, name, key string) (value string, found bool, err error) {
	cl := c.getCall()
	cl.begin(name, 2, bulkShape)
	cl.arg(key)
	err = c.run(ctx, cl, func(v *resp.Value) error {
		value, found, err = stringReply(name, v)
		return err
	})
	return value, found, err
}

// LRange returns the elements of the list at key from start to stop (inclusive, negative
// indexes count from the end).
func (c *Client) LRange(ctx context.Context, key string, start, stop int64) ([]string, error) {
	cl := c.getCall()
	cl.begin("LRANGE", 4, arrayShape)
	cl.arg(key)
	cl.argInt(start)
	cl.argInt(stop)
	var out []string
	err := c.run(ctx, cl, func(v *resp.Value) error {
		if v.Kind != resp.KindArray && v.Kind != resp.KindSet {
			return unexpected("LRANGE", v)
		}
		out = make([]string, v.Len())
		for i, e := range v.All() {
			s, _, err := stringReply("LRANGE", &e)
			if err != nil {
				return err
			}
			out[i] = s
		}
		return nil
	})
	return out, err
}

// textOf returns the text of a string-like reply.
func textOf(v *resp.Value) (string, bool) {
	switch v.Kind {
	case resp.KindBulkString, resp.KindSimpleString, resp.KindVerbatimString:
		return string(v.Str), true
	}
	return "", false
}

func stringReply(name string, v *resp.Value) (string, bool, error) {
	if v.Kind == resp.KindNull {
		return "", false, nil
	}
	if s, ok := textOf(v); ok {
		return s, true, nil
	}
	if v.Kind == resp.KindInteger {
		return strconv.FormatInt(v.Int, 10), true, nil
	}
	return "", false, unexpected(name, v)
}

func intReply(name string, v *resp.Value) (int64, error) {
	if v.Kind == resp.KindInteger {
		return v.Int, nil
	}
	return 0, unexpected(name, v)
}

// okReply accepts OK and nothing else: another simple string (QUEUED, after a MULTI the
// client did not send) does not mean that the command ran.
func okReply(v *resp.Value) error {
	if v.Kind == resp.KindSimpleString && string(v.Str) == "OK" {
		return nil
	}
	return unexpected("OK", v)
}

// unexpected reports a reply whose type does not fit the command.
func unexpected(name string, v *resp.Value) error {
	return &ProtocolError{Reason: "unexpected " + v.Kind.String() + " reply to " + name}
}
