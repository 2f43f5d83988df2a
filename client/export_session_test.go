package client

import (
	"context"

	"github.com/respire-go/respire/netio/resp"
)

// DoUnguarded sends a raw command on a shared connection the way Client.Do did before it
// classified commands: no admin guard, no session refusal, any reply accepted. Tests use it
// as a positive control, to show what the refusals prevent.
func DoUnguarded(ctx context.Context, c *Client, args ...any) (resp.Value, error) {
	cl := c.getCall()
	cl.cmd.Frame = resp.AppendArrayHeader(cl.cmd.Frame[:0], len(args))
	for _, a := range args {
		if !appendArg(&cl.cmd.Frame, a) {
			panic("DoUnguarded: unsupported argument type")
		}
	}
	cl.cmd.Name = "UNGUARDED"
	cl.cmd.Expect = anyReply
	var out resp.Value
	err := c.run(ctx, cl, func(v *resp.Value) error {
		out = v.Clone()
		return nil
	})
	return out, err
}
