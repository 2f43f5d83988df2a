package client

import (
	"reflect"
	"testing"

	"github.com/respire-go/respire/netio/resp"
)

// TestDecodeKeyedPops: the replies of LMPOP, ZMPOP, BLPOP and BZPOPMIN, [key, rest...] or null,
// decode to their typed results under RESP2 and RESP3 forms, and every other shape (a wrong
// length, a key that is not a string, a bad rest, another kind) is a typed error with an
// invalid, empty result.
func TestDecodeKeyedPops(t *testing.T) {
	b, i := resp.BulkString, resp.Int
	type decoded struct {
		v   any
		err error
	}
	cases := []struct {
		name string
		dec  func(*resp.Value) decoded
		ok   []resp.Value
		want []any
		bad  []resp.Value
	}{
		{
			name: "LMPOP",
			dec:  func(v *resp.Value) decoded { r, err := decKeyValues(v); return decoded{r, err} },
			ok:   []resp.Value{resp.ArrayOf(b("l"), resp.BulkStrings("a", "b"))},
			want: []any{Optional[KeyValues]{Value: KeyValues{Key: "l", Values: []string{"a", "b"}}, Valid: true}},
			bad: []resp.Value{resp.ArrayOf(b("l")), resp.ArrayOf(resp.ArrayOf(), resp.BulkStrings("a")),
				resp.ArrayOf(b("l"), i(3)), i(1)},
		},
		{
			name: "ZMPOP",
			dec:  func(v *resp.Value) decoded { r, err := decKeyMembers(v); return decoded{r, err} },
			ok: []resp.Value{
				resp.ArrayOf(b("z"), resp.ArrayOf(resp.ArrayOf(b("m"), b("1.5")))),         // RESP2
				resp.ArrayOf(b("z"), resp.ArrayOf(resp.ArrayOf(b("m"), resp.Double(1.5)))), // RESP3
			},
			want: []any{
				Optional[KeyMembers]{Value: KeyMembers{Key: "z", Members: []ZMember{{Member: "m", Score: 1.5}}}, Valid: true},
				Optional[KeyMembers]{Value: KeyMembers{Key: "z", Members: []ZMember{{Member: "m", Score: 1.5}}}, Valid: true},
			},
			bad: []resp.Value{resp.ArrayOf(b("z"), resp.ArrayOf(resp.ArrayOf(b("m"), b("x")))),
				resp.ArrayOf(b("z"), resp.ArrayOf(b("m")), b("extra")), resp.BulkString("z")},
		},
		{
			name: "BLPOP",
			dec:  func(v *resp.Value) decoded { r, err := decKeyValue(v); return decoded{r, err} },
			ok:   []resp.Value{resp.ArrayOf(b("l"), b("v"))},
			want: []any{Optional[KeyValue]{Value: KeyValue{Key: "l", Value: "v"}, Valid: true}},
			bad:  []resp.Value{resp.ArrayOf(b("l"), resp.ArrayOf(b("v"))), resp.ArrayOf(b("l"), b("v"), b("w")), resp.MapOf(b("l"), b("v"))},
		},
		{
			name: "BZPOPMIN",
			dec:  func(v *resp.Value) decoded { r, err := decKeyMember(v); return decoded{r, err} },
			ok:   []resp.Value{resp.ArrayOf(b("z"), b("m"), b("2")), resp.ArrayOf(b("z"), b("m"), resp.Double(2))},
			want: []any{
				Optional[KeyMember]{Value: KeyMember{Key: "z", ZMember: ZMember{Member: "m", Score: 2}}, Valid: true},
				Optional[KeyMember]{Value: KeyMember{Key: "z", ZMember: ZMember{Member: "m", Score: 2}}, Valid: true},
			},
			bad: []resp.Value{resp.ArrayOf(b("z"), b("m")), resp.ArrayOf(resp.ArrayOf(), b("m"), b("2")), resp.ArrayOf(b("z"), b("m"), b("two"))},
		},
	}
	for _, c := range cases {
		for _, null := range []resp.Value{resp.NullValue(), resp.NullArray()} {
			got := c.dec(&null)
			if got.err != nil || reflect.ValueOf(got.v).FieldByName("Valid").Bool() {
				t.Errorf("%s: null decoded to %+v, %v; want an invalid result", c.name, got.v, got.err)
			}
		}
		for j, v := range c.ok {
			if got := c.dec(&v); got.err != nil || !reflect.DeepEqual(got.v, c.want[j]) {
				t.Errorf("%s: %s decoded to %+v, %v; want %+v", c.name, v.String(), got.v, got.err, c.want[j])
			}
		}
		for _, v := range c.bad {
			got := c.dec(&v)
			zero := reflect.Zero(reflect.TypeOf(got.v)).Interface()
			if got.err == nil || !reflect.DeepEqual(got.v, zero) {
				t.Errorf("%s: %s decoded to %+v, %v; want an error and an empty result", c.name, v.String(), got.v, got.err)
			}
		}
	}
}
