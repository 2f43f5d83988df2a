package client

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/internal/command"
	"github.com/respire-go/respire/netio/resp"
)

// Script is a Lua script that runs by its SHA1 digest (EVALSHA), so that its body crosses the
// network only when the server does not have it yet. Create one per script, typically as a
// package variable, and run it with Commands.RunScript (or RunScriptRO, and the Batch methods
// of the same names) on any Client, View or DedicatedConn:
//
//	var incrCapped = client.NewScript(`
//		local n = redis.call('INCR', KEYS[1])
//		if n > tonumber(ARGV[1]) then redis.call('DECR', KEYS[1]) return 0 end
//		return n`)
//
//	v, err := c.RunScript(ctx, incrCapped, []string{"visits"}, "100")
//
// A run sends EVALSHA. A NOSCRIPT reply proves that the server did not run the script, so
// respire then sends EVAL with the body, which runs it and loads it into the server's script
// cache: that is a first attempt of EVAL, not a replay. While one caller loads a script on a
// server, the other callers that got NOSCRIPT from that server wait for it and then send
// EVALSHA again, so a burst of callers after a restart or a SCRIPT FLUSH sends the body once.
//
// A script never runs twice because of respire: when the reply to EVALSHA or EVAL is lost (the
// connection failed, the context ended, the command timed out after it was written), the call
// returns an *UnknownOutcomeError, and nothing is sent again. The script may or may not have
// run; deciding to run it again is the application's call.
//
// Keys go in keys, and take the key prefix of the client or the view; the script sees them,
// and any key it builds itself, as physical names. The reply is the script's, as a resp.Value.
//
// A Script is safe for concurrent use, by any number of clients.
type Script struct {
	src string
	sha string

	mu sync.RWMutex
	// servers holds the script's state on each server it ran on: one entry per endpoint, so
	// the map is bounded by the servers of the application's clients.
	servers map[Endpoint]*scriptServer
}

// scriptServer is a script's state on one server.
type scriptServer struct {
	// epoch counts the loads that completed: a NOSCRIPT to an EVALSHA sent before the latest
	// one may predate it, and EVALSHA is worth sending again (NOSCRIPT proved that nothing ran).
	epoch atomic.Uint64
	// load is the load in progress (an EVAL after a NOSCRIPT), guarded by Script.mu.
	load *scriptLoad
}

// scriptLoad is one load of a script on a server: the callers that got NOSCRIPT meanwhile wait
// for done.
type scriptLoad struct {
	done chan struct{}
	// loaded: the EVAL reached the script cache (it ran, or it failed at run time).
	loaded bool
}

// NewScript returns the script of the Lua source src.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{src: src, sha: hex.EncodeToString(sum[:])}
}

// SHA1 returns the script's digest as EVALSHA names it: 40 lower-case hexadecimal digits.
func (s *Script) SHA1() string { return s.sha }

// String describes the script by its digest, never its source.
func (s *Script) String() string {
	if s == nil {
		return "client.Script(nil)"
	}
	return "client.Script{SHA1: " + s.sha + "}"
}

// GoString makes %#v print the digest only too.
func (s *Script) GoString() string { return s.String() }

// Format makes every fmt verb print the digest only.
func (s *Script) Format(f fmt.State, verb rune) { formatRedacted(f, verb, s.String()) }

// LogValue makes slog log the digest only.
func (s *Script) LogValue() slog.Value { return slog.StringValue(s.String()) }

// RunScript runs the script with keys and args (EVALSHA, and EVAL with its body when the server
// replies NOSCRIPT) and returns its reply as it is: read it with the resp.Value As methods. A
// script that raises an error returns it as a *ServerError. See Script.
func (c Commands) RunScript(ctx context.Context, s *Script, keys []string, args ...string) (resp.Value, error) {
	return s.run(ctx, c, false, keys, args)
}

// RunScriptRO runs a read-only script (EVALSHA_RO, and EVAL_RO when the server replies
// NOSCRIPT): Redis refuses it if the script writes, and it may run on a replica. See
// RunScript.
func (c Commands) RunScriptRO(ctx context.Context, s *Script, keys []string, args ...string) (resp.Value, error) {
	return s.run(ctx, c, true, keys, args)
}

// RunScript queues the script in the batch. In each run of the batch, the first entry of a
// script is sent as EVAL with the body, which loads it, and the later entries of the same
// script as EVALSHA: they run after it on the same connection, in order, so they find it
// loaded. A batch never depends on what an earlier batch loaded (the server may have restarted
// or flushed its scripts since), and never needs a second round trip.
func (b *Batch) RunScript(s *Script, keys []string, args ...string) *Future[resp.Value] {
	e := b.encoder()
	encEvalSHA(&e, s.sha, keys, args...)
	return b.queueScript(s, &e)
}

// RunScriptRO queues a read-only script (EVALSHA_RO, or EVAL_RO for the first entry of the
// script in the batch); see Batch.RunScript.
func (b *Batch) RunScriptRO(s *Script, keys []string, args ...string) *Future[resp.Value] {
	e := b.encoder()
	encEvalSHARO(&e, s.sha, keys, args...)
	return b.queueScript(s, &e)
}

func (b *Batch) queueScript(s *Script, e *enc) *Future[resp.Value] {
	n := len(b.ents)
	f := queue(b, e, decValue)
	if len(b.ents) > n {
		b.ents[n].script = s
		b.withScripts = true
	}
	return f
}

// run sends EVALSHA and, on NOSCRIPT, loads the script with EVAL, or joins the load another
// caller started on the same server. Every NOSCRIPT proves that nothing ran, so each resend is
// a first attempt; a call sends at most three EVALSHA and one EVAL, and nothing after a lost
// reply.
func (s *Script) run(ctx context.Context, c Commands, ro bool, keys, args []string) (resp.Value, error) {
	st := s.server(c.x.owner().ep)
	seen := st.epoch.Load()
	v, err := s.evalSHA(ctx, c, ro, keys, args)
	for range 2 {
		if !isNoScript(err) {
			return v, err
		}
		l, leader := s.join(st, seen)
		switch {
		case leader:
			v, err = s.eval(ctx, c, ro, keys, args)
			var se *ServerError
			s.finish(st, l, err == nil || (errors.As(err, &se) && !isNoScript(err)))
			return v, err
		case l != nil:
			select {
			case <-l.done:
			case <-ctx.Done():
				return resp.Value{}, ctx.Err() // nothing of this call ran
			}
			if !l.loaded {
				return s.eval(ctx, c, ro, keys, args) // the load failed: this call's own EVAL
			}
		}
		// A load completed after this call's EVALSHA was sent, or while it waited: the
		// script is in the cache now.
		seen = st.epoch.Load()
		v, err = s.evalSHA(ctx, c, ro, keys, args)
	}
	if !isNoScript(err) {
		return v, err
	}
	return s.eval(ctx, c, ro, keys, args) // the cache keeps losing it (SCRIPT FLUSH): EVAL
}

func (s *Script) evalSHA(ctx context.Context, c Commands, ro bool, keys, args []string) (resp.Value, error) {
	if ro {
		return c.EvalSHARO(ctx, s.sha, keys, args...)
	}
	return c.EvalSHA(ctx, s.sha, keys, args...)
}

func (s *Script) eval(ctx context.Context, c Commands, ro bool, keys, args []string) (resp.Value, error) {
	if ro {
		return c.EvalRO(ctx, s.src, keys, args...)
	}
	return c.Eval(ctx, s.src, keys, args...)
}

// server returns the script's state on the server at ep.
func (s *Script) server(ep Endpoint) *scriptServer {
	s.mu.RLock()
	st := s.servers[ep]
	s.mu.RUnlock()
	if st != nil {
		return st
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st = s.servers[ep]; st == nil {
		if s.servers == nil {
			s.servers = make(map[Endpoint]*scriptServer)
		}
		st = &scriptServer{}
		s.servers[ep] = st
	}
	return st
}

// join decides what a caller that got NOSCRIPT does, given the epoch it read before sending
// EVALSHA: wait for the load in progress (l, not leader); send EVALSHA again because a load
// completed since (nil, false); or load the script itself (l, leader), then call finish.
func (s *Script) join(st *scriptServer, seen uint64) (l *scriptLoad, leader bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case st.load != nil:
		return st.load, false
	case st.epoch.Load() != seen:
		return nil, false
	}
	st.load = &scriptLoad{done: make(chan struct{})}
	return st.load, true
}

// finish ends a load and wakes its waiters.
func (s *Script) finish(st *scriptServer, l *scriptLoad, loaded bool) {
	s.mu.Lock()
	st.load = nil
	l.loaded = loaded
	if loaded {
		st.epoch.Add(1)
	}
	s.mu.Unlock()
	close(l.done)
}

// isNoScript reports whether err is the server's NOSCRIPT reply.
func isNoScript(err error) bool {
	var se *ServerError
	return errors.As(err, &se) && se.Code == "NOSCRIPT"
}

// Frames of the EVAL forms that carry a script's body in a batch.
var (
	infoEval   = command.Lookup("EVAL", "")
	infoEvalRO = command.Lookup("EVAL_RO", "")
)

// loadScripts rewrites, for each script of the batch, its first entry from EVALSHA to EVAL
// with the body, so that the run loads the script before its later entries need it. It
// appends the frames to dst and returns it; the entries' spans point into it.
func (b *Batch) loadScripts(dst []byte) []byte {
	seen := b.scripts[:0]
	for i := range b.ents {
		ent := &b.ents[i]
		frame := b.buf[ent.start:ent.end]
		start := len(dst)
		if s := ent.script; s != nil && !slices.Contains(seen, s) {
			seen = append(seen, s)
			info := infoEval
			if ent.info.Name() == "EVALSHA_RO" {
				info = infoEvalRO
			}
			dst = s.evalFrame(dst, frame, info)
			ent.info, ent.name = info, info.Name()
		} else {
			dst = append(dst, frame...)
		}
		ent.start, ent.end = start, len(dst)
	}
	clear(seen)
	b.scripts = seen[:0]
	return dst
}

// evalFrame appends the EVAL (or EVAL_RO) frame of an EVALSHA frame of the script: the same
// arguments, with the body in place of the digest.
func (s *Script) evalFrame(dst, frame []byte, info *command.Info) []byte {
	var stack [frameArgsStack][]byte
	args, ok := splitFrame(frame, stack[:0])
	if !ok || len(args) < 2 {
		panic("respire: an EVALSHA frame respire did not encode")
	}
	dst = resp.AppendArrayHeader(dst, len(args))
	dst = resp.AppendBulkString(dst, info.Name())
	dst = resp.AppendBulkString(dst, s.src)
	for _, a := range args[2:] {
		dst = resp.AppendBulk(dst, a)
	}
	return dst
}
