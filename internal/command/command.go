package command

//go:generate go run ./gen

// Flag is a set of the command flags COMMAND INFO reports (readonly, write, admin, blocking, ...).
type Flag uint32

// Command flags, one bit each, named after Redis's spelling.
const (
	FlagWrite           Flag = 1 << iota // write: may modify the keyspace
	FlagReadOnly                         // readonly: reads keys only
	FlagDenyOOM                          // denyoom: refused when maxmemory is reached
	FlagAdmin                            // admin: an administrative command
	FlagPubSub                           // pubsub: a pub/sub command
	FlagNoScript                         // noscript: not allowed in scripts
	FlagBlocking                         // blocking: may block the client
	FlagLoading                          // loading: allowed while the dataset loads
	FlagStale                            // stale: allowed on a replica with stale data
	FlagSkipMonitor                      // skip_monitor: not shown to MONITOR
	FlagSkipSlowlog                      // skip_slowlog: not recorded in the slow log
	FlagAsking                           // asking: accepted on an importing slot (cluster)
	FlagFast                             // fast: O(1) or O(log N)
	FlagNoAuth                           // no_auth: allowed before authentication
	FlagMayReplicate                     // may_replicate: may be propagated to replicas
	FlagNoMandatoryKeys                  // no_mandatory_keys: may take no key at all
	FlagMovableKeys                      // movablekeys: key positions depend on arguments
	FlagNoAsyncLoading                   // no_async_loading: refused during async loading
	FlagNoMulti                          // no_multi: refused inside MULTI
	FlagAllowBusy                        // allow_busy: allowed while a script is busy
	FlagModule                           // module: implemented by a module
)

// Category is a set of ACL categories (@read, @write, @admin, @dangerous, ...).
type Category uint32

// ACL categories, one bit each.
const (
	CatKeyspace    Category = 1 << iota // @keyspace
	CatRead                             // @read
	CatWrite                            // @write
	CatSet                              // @set
	CatSortedSet                        // @sortedset
	CatList                             // @list
	CatHash                             // @hash
	CatString                           // @string
	CatBitmap                           // @bitmap
	CatHyperLogLog                      // @hyperloglog
	CatGeo                              // @geo
	CatStream                           // @stream
	CatPubSub                           // @pubsub
	CatAdmin                            // @admin
	CatFast                             // @fast
	CatSlow                             // @slow
	CatBlocking                         // @blocking
	CatDangerous                        // @dangerous
	CatConnection                       // @connection
	CatTransaction                      // @transaction
	CatScripting                        // @scripting
)

// Session says how a command changes the connection that runs it beyond its own execution.
// Redis does not describe it; it comes from the overlay file (overlay.txt).
type Session uint8

// Session classes.
const (
	// SessionNone: the command leaves no state on its connection.
	SessionNone Session = iota
	// SessionTransaction: MULTI, EXEC, DISCARD. They queue or run the commands that follow on
	// the same connection.
	SessionTransaction
	// SessionWatch: WATCH, UNWATCH. They arm or clear optimistic locks that a later EXEC on the
	// same connection checks.
	SessionWatch
	// SessionState: the command changes a property of the connection that later commands see
	// (database, user, protocol, name, tracking, read-only mode, ...).
	SessionState
	// SessionSubscribe: the subscribe family; the connection enters subscriber mode.
	SessionSubscribe
	// SessionTakeover: the command breaks the one-reply-per-command exchange (MONITOR,
	// CLIENT REPLY, QUIT, SYNC, ...): no connection that pairs replies with commands may run it.
	SessionTakeover
)

var sessionNames = [...]string{"none", "transaction", "watch", "state", "subscribe", "takeover"}

// String returns the class's name as the overlay spells it.
func (s Session) String() string {
	if int(s) < len(sessionNames) {
		return sessionNames[s]
	}
	return "session(?)"
}

// Blocking says whether a command may wait on the server.
type Blocking uint8

// Blocking modes.
const (
	// BlockingNever: the command replies without waiting for other clients or replicas.
	BlockingNever Blocking = iota
	// BlockingAlways: the command may wait (BLPOP, WAIT, ...).
	BlockingAlways
	// BlockingWithToken: the command waits only when an option token is present (XREAD BLOCK).
	BlockingWithToken
)

// Info describes one command or subcommand. Values live in the generated table: never modify
// them.
type Info struct {
	name        string // canonical, upper case: "GET", "CLIENT REPLY"
	key         string // lower-case table key: "get"; for a subcommand, "reply"
	arity       int16
	firstKey    int16
	lastKey     int16
	step        int16
	flags       Flag
	categories  Category
	session     Session
	blocking    Blocking
	admin       bool
	extra       bool   // described by the overlay, not by the captured server
	sentinel    bool   // a command of redis-sentinel only (testdata/sentinel.json)
	blockToken  string // for BlockingWithToken
	alternative string // what to use instead, for session-changing commands
	keySpecs    []KeySpec
	subs        []Info // sorted by key
}

// Name returns the canonical name: upper case, a subcommand after its container and a space
// ("CLIENT REPLY").
func (i *Info) Name() string { return i.name }

// Arity is Redis's arity: the exact number of arguments including the command name, or, when
// negative, the minimum number.
func (i *Info) Arity() int { return int(i.arity) }

// Flags returns the command's flags.
func (i *Info) Flags() Flag { return i.flags }

// Has reports whether the command has every flag in f.
func (i *Info) Has(f Flag) bool { return i.flags&f == f }

// Categories returns the command's ACL categories.
func (i *Info) Categories() Category { return i.categories }

// InCategory reports whether the command belongs to every category in c.
func (i *Info) InCategory(c Category) bool { return i.categories&c == c }

// ReadOnly reports whether the command only reads the keyspace (Redis's readonly flag).
func (i *Info) ReadOnly() bool { return i.Has(FlagReadOnly) }

// Write reports whether the command may modify the keyspace (Redis's write flag).
func (i *Info) Write() bool { return i.Has(FlagWrite) }

// PubSub reports whether the command belongs to pub/sub (Redis's pubsub flag: PUBLISH and
// PUBSUB as well as the subscribe family).
func (i *Info) PubSub() bool { return i.Has(FlagPubSub) }

// Admin reports whether respire refuses the command unless the application allows
// administrative commands. The rule (in the generator, documented in docs/options.md): the
// command is in the ACL category @admin or @dangerous, except the overlay's admin-exempt
// commands, or it is one of the overlay's admin-add commands.
func (i *Info) Admin() bool { return i.admin }

// Session returns how the command changes its connection's state.
func (i *Info) Session() Session { return i.session }

// SessionChanging reports whether the command's effect on its connection outlives it.
func (i *Info) SessionChanging() bool { return i.session != SessionNone }

// Alternative names what to use instead of a session-changing command on a shared connection.
func (i *Info) Alternative() string { return i.alternative }

// Blocking returns whether the command may wait on the server.
func (i *Info) Blocking() Blocking { return i.blocking }

// BlockToken returns the option token that makes a BlockingWithToken command wait ("BLOCK").
func (i *Info) BlockToken() string { return i.blockToken }

// Container reports whether the command has subcommands (CLIENT, CONFIG, ...).
func (i *Info) Container() bool { return len(i.subs) > 0 }

// Subcommands returns a container's subcommands, sorted by name. Do not modify them.
func (i *Info) Subcommands() []Info { return i.subs }

// Extra reports whether the command comes from the overlay rather than from the captured
// server (a command of a later Redis version).
func (i *Info) Extra() bool { return i.extra }

// Sentinel reports whether the command exists only on redis-sentinel (SENTINEL and its
// subcommands).
func (i *Info) Sentinel() bool { return i.sentinel }

// KeySpecs returns the command's key specifications. Do not modify them.
func (i *Info) KeySpecs() []KeySpec { return i.keySpecs }

// LegacyKeys returns COMMAND INFO's first key, last key and step.
func (i *Info) LegacyKeys() (first, last, step int) {
	return int(i.firstKey), int(i.lastKey), int(i.step)
}

// MayBlock reports whether the call whose arguments are args (args[0] is the command name) may
// wait on the server: always for BlockingAlways; for BlockingWithToken when the token appears
// among the arguments before the first key (where the options of XREAD and XREADGROUP go). A
// token that merely looks like one (a consumer named BLOCK) errs on the blocking side.
func (i *Info) MayBlock(args [][]byte) bool {
	switch i.blocking {
	case BlockingAlways:
		return true
	case BlockingWithToken:
		end := len(args)
		var buf [8]int
		if keys, _ := i.Keys(args, buf[:0]); len(keys) > 0 {
			end = keys[0]
		}
		for _, a := range args[1:end] {
			if equalFold(a, i.blockToken) {
				return true
			}
		}
	}
	return false
}

// Commands returns the table's top-level commands, sorted by name. Do not modify them.
func Commands() []Info { return commands[:] }

// Text is the argument type of Lookup: the bytes of a command name, as a string or a byte
// slice.
type Text interface{ ~string | ~[]byte }

// Lookup finds a command by its name and, for a container, its subcommand, ignoring ASCII
// letter case. It returns the subcommand's Info when name is a container and sub names one of
// its subcommands, the container's own Info when sub is empty or unknown, and nil for an
// unknown command. It does not allocate.
func Lookup[T Text](name, sub T) *Info {
	i := search(commands[:], name)
	if i == nil || len(i.subs) == 0 || len(sub) == 0 {
		return i
	}
	if s := search(i.subs, sub); s != nil {
		return s
	}
	return i
}

// search binary-searches a table sorted by key.
func search[T Text](table []Info, name T) *Info {
	lo, hi := 0, len(table)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch c := compareFold(name, table[mid].key); {
		case c == 0:
			return &table[mid]
		case c > 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return nil
}

// compareFold compares b, folded to lower case (ASCII), with the lower-case key.
func compareFold[T Text](b T, key string) int {
	n := min(len(b), len(key))
	for j := 0; j < n; j++ {
		c := lower(b[j])
		if c != key[j] {
			if c < key[j] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(b) < len(key):
		return -1
	case len(b) > len(key):
		return 1
	}
	return 0
}

// equalFold reports whether b equals the upper-case token s, ignoring ASCII letter case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for j := range b {
		if upper(b[j]) != s[j] {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}
