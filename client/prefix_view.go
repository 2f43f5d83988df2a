package client

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/respire-go/respire/netio/resp"
)

// View is a Client seen through a key prefix: the typed commands of the embedded Commands,
// Do, batches (Pipeline, Atomic), scans and scripts all run on the client's connections, with
// every key prefixed and the keys of replies returned without the prefix. Obtain one with
// Client.WithKeyPrefix; views compose, so a view of a view prefixes with both, outer first:
//
//	tenant := c.WithKeyPrefix("tenant:42:")
//	carts := tenant.WithKeyPrefix("cart:")
//	carts.Set(ctx, "7", "...") // SET tenant:42:cart:7 ...
//
// A View applies the client's Options.KeyPrefix first, then its own. It keeps the client's
// Options.PubSubPrefix for PUBLISH and SPUBLISH; channels take no key prefix. A View holds no
// connection and needs no closing: it is valid as long as its client, and safe for concurrent
// use. See Options.KeyPrefix for what a prefix changes and what it does not.
type View struct {
	Commands
	c  *Client
	ns *namespace
	// policy is the view's read policy plus one, or 0 for the client's (WithReadFrom).
	policy uint8
}

// viewExec runs a View's calls on its base executor (the client, or a dedicated connection the
// view pinned for a cursor), in the view's namespace.
type viewExec struct {
	base   baseExecutor
	ns     *namespace
	policy uint8
}

var (
	_ baseExecutor = (*Client)(nil)
	_ baseExecutor = (*DedicatedConn)(nil)
	_ executor     = (*viewExec)(nil)
)

// WithKeyPrefix returns a View of the client whose keys all start with prefix, after
// Options.KeyPrefix. An empty prefix gives a view with the client's own prefixes. A composed
// prefix longer than MaxKeyPrefixLen makes every command of the view fail with a *ConfigError.
func (c *Client) WithKeyPrefix(prefix string) *View { return newView(c, c.ns.withKey(prefix)) }

// WithKeyPrefix returns a View whose keys start with the view's prefix and then prefix.
func (v *View) WithKeyPrefix(prefix string) *View {
	if v.policy != 0 {
		return newPolicyView(v.c, v.ns.withKey(prefix), ReadFrom(v.policy-1))
	}
	return newView(v.c, v.ns.withKey(prefix))
}

func newView(c *Client, ns *namespace) *View {
	v := &View{c: c, ns: ns}
	v.Commands = Commands{x: &viewExec{base: c, ns: ns}}
	return v
}

// KeyPrefix returns the whole prefix the view puts before keys: Options.KeyPrefix, then each
// view's in order.
func (v *View) KeyPrefix() string { return v.ns.keyPrefix() }

// Client returns the client the view runs on.
func (v *View) Client() *Client { return v.c }

// Do sends a raw command as Client.Do does, with the command's keys prefixed: the command
// table (Redis's own key specifications) says which arguments are keys, for every command it
// knows. A command it does not know (a module command) is refused with a *KeyPrefixError,
// since respire cannot tell its keys from its other arguments. The keys of the reply (KEYS,
// SCAN, BLPOP, XREAD, ...) come back without the prefix.
func (v *View) Do(ctx context.Context, args ...any) (resp.Value, error) {
	return v.c.doAs(ctx, v.ns, v.policy, args)
}

func (x *viewExec) owner() *Client { return x.base.owner() }

func (x *viewExec) space() *namespace { return x.ns }

func (x *viewExec) exchange(ctx context.Context, cl *call) error {
	cl.policy = x.policy
	return x.base.exchange(ctx, cl)
}

func (x *viewExec) runBatch(ctx context.Context, b *Batch, mode batchMode) error {
	return x.base.runBatchIn(ctx, b, mode, x.ns)
}

func (x *viewExec) pin(ctx context.Context) (executor, func(), error) {
	p, release, err := x.base.pin(ctx)
	if err != nil {
		return nil, nil, err
	}
	return &viewExec{base: p.(baseExecutor), ns: x.ns}, release, nil
}

// String describes the view: its whole key prefix and its client's endpoint, never the client's
// secrets.
func (v *View) String() string {
	if v == nil {
		return "client.View(nil)"
	}
	return "client.View{KeyPrefix: " + strconv.Quote(v.KeyPrefix()) + ", Endpoint: " + v.c.ep.String() + "}"
}

// GoString makes %#v print the description too.
func (v *View) GoString() string { return v.String() }

// Format makes every fmt verb print the description.
func (v *View) Format(s fmt.State, verb rune) { formatRedacted(s, verb, v.String()) }

// LogValue makes slog log the description.
func (v *View) LogValue() slog.Value { return slog.StringValue(v.String()) }
