package surface

import (
	"strings"
	"testing"
)

const header = "result int int64 intShape decInt\nresult ok None okShape decOK\n"

// TestGeneratorRefusesWhatItCannotCheck: every mistake a spec line can make is an error that
// names it, never generated code that would misbehave on the wire.
func TestGeneratorRefusesWhatItCannotCheck(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"get Get(key string) nosuch\n\tdoc.\n", `unknown result "nosuch"`},
		{"get Get(key, other string) int = key\n\tdoc.\n", "parameter other is not on the wire"},
		{"get Get(key string) int = key:zz\n\tdoc.\n", `unknown modifier "zz"`},
		{"get Get(key string) int\n", "has no documentation"},
		{"nosuch Get(key string) int\n\tdoc.\n", "is not a command of the table"},
		{"client Get(key string) int\n\tdoc.\n", "or is a container"},
		{"select Select(db int64) ok\n\tdoc.\n", "must be @dedicated"},
		{"get Get(key string) int = key \"EXTRA\"\n\tdoc.\n", "do not fit the arity"},
		{"get Get(key string) int\n\tdoc.\nget Get(key string) int\n\tdoc.\n", "already defined"},
		{"get Get(key string) int\n\tdoc.\nraw get because it is not typed\n", "also has a typed form"},
		{"get Get(flag bool) int\n\tdoc.\n", "needs ?TOKEN"},
		{"get Get(d time.Duration) int\n\tdoc.\n", "needs a unit modifier"},
		{"get Get(key string) int @sometimes\n\tdoc.\n", "unknown flag"},
		{"\tdoc without a command\n", "documentation outside"},
		{"result s string bulkShape decS packed unpack\n", "[unpack] [packed]"},
		{"result s string bulkShape decS packed packed\n", "[unpack] [packed]"},
		{"result s string bulkShape decS shared\n", "[unpack] [packed]"},
	} {
		sp, err := Parse([]byte(header + tc.spec))
		if err == nil {
			_, err = Generate(sp)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
}

// TestGeneratedForm: a form with a literal, a counted list, an optional token and options
// compiles to the encoder the wire needs.
func TestGeneratedForm(t *testing.T) {
	spec := header + "enum MinMax\nresult opt Optional[string] bulkShape decOpt unpack packed\n" +
		"zmpop ZMPop(which MinMax, count int64, keys ...string) opt = keys!:n which count?COUNT\n\tpops.\n" +
		"incr Incr(key string) int\n\tincrements.\n"
	sp, err := Parse([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	src, err := Generate(sp)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"e.begin(cmdZmpop, bulkShape, -1)",
		`e.need("keys", len(keys))`,
		"e.counted(keys)",
		"e.str(string(which))",
		"if count != 0 {\n\t\te.str(\"COUNT\")\n\t\te.int(count)\n\t}",
		"func (c Commands) ZMPop(ctx context.Context, which MinMax, count int64, keys ...string) (value string, ok bool, err error)",
		"func (b *Batch) ZMPop(which MinMax, count int64, keys ...string) *Future[Optional[string]]",
		"e.begin(cmdIncr, intShape, 2)",
		"return queuePacked(b, &e, decOptPacked)",
		"return queue(b, &e, decInt)",
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("the generated code lacks %q", want)
		}
	}
}
