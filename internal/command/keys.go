package command

// BeginSearch says how a key specification finds the argument its keys begin at.
type BeginSearch uint8

// Begin-search kinds (COMMAND INFO's begin_search type).
const (
	// BeginUnknown: Redis cannot say where the keys are (SORT's BY, GET and STORE).
	BeginUnknown BeginSearch = iota
	// BeginIndex: the keys begin at a fixed argument index.
	BeginIndex
	// BeginKeyword: the keys begin after a keyword, searched from an index.
	BeginKeyword
)

// FindKeys says how a key specification finds its keys from where they begin.
type FindKeys uint8

// Find-keys kinds (COMMAND INFO's find_keys type).
const (
	// FindUnknown: Redis cannot say how many keys there are.
	FindUnknown FindKeys = iota
	// FindRange: a range of arguments, up to a last index, at a step.
	FindRange
	// FindKeyNum: an argument gives the number of keys that follow (EVAL's numkeys).
	FindKeyNum
)

// KeyFlag is a set of key-specification flags.
type KeyFlag uint16

// Key-specification flags, named after Redis's spelling.
const (
	KeyRO            KeyFlag = 1 << iota // RO: read only
	KeyRW                                // RW: read and write
	KeyOW                                // OW: overwrite without reading
	KeyRM                                // RM: delete
	KeyAccess                            // access: returns, copies or uses the user data
	KeyUpdate                            // update: updates the data
	KeyInsert                            // insert: adds data without changing existing data
	KeyDelete                            // delete: removes data
	KeyNotKey                            // not_key: not a key, though it routes like one (a shard channel)
	KeyIncomplete                        // incomplete: the specification may miss keys
	KeyVariableFlags                     // variable_flags: the flags depend on the arguments
)

// KeySpec is one key specification of a command (COMMAND INFO's key_specs): where its keys
// begin and how to find them from there. Values live in the generated table: never modify them.
type KeySpec struct {
	// Begin is how the first key is found.
	Begin BeginSearch
	// Index is BeginIndex's argument index (the command name is index 0).
	Index int16
	// Keyword is BeginKeyword's keyword, upper case.
	Keyword string
	// StartFrom is where BeginKeyword's search starts: a positive index searches forward, a
	// negative one counts from the end and searches backward.
	StartFrom int16
	// Find is how the keys are found from the first one.
	Find FindKeys
	// LastKey is FindRange's last key, relative to the first; -1 is the last argument, and
	// other negative values count from the end (or, with Limit, divide the remainder).
	LastKey int16
	// KeyStep is the distance between keys (FindRange and FindKeyNum).
	KeyStep int16
	// Limit, for FindRange with LastKey -1, keeps 1/Limit of the remaining arguments.
	Limit int16
	// KeyNumIdx is FindKeyNum's index of the key count, relative to the begin index.
	KeyNumIdx int16
	// FirstKey is FindKeyNum's first key, relative to the begin index.
	FirstKey int16
	// Flags are the specification's flags.
	Flags KeyFlag
}

// Keys appends to dst the indexes in args of the command's keys (args[0] is the command name)
// and returns them, in key-specification order, evaluated as Redis's COMMAND GETKEYS does.
// Specifications flagged not_key (shard channels) are skipped. complete is false when the
// result cannot be trusted to be exactly the keys: an unknown or incomplete specification
// (SORT's BY, GET and STORE; MIGRATE, whose key argument is empty in its KEYS form), or
// arguments that do not fit the specification (a key count that is not a number, too few
// arguments), which the server rejects.
func (i *Info) Keys(args [][]byte, dst []int) (keys []int, complete bool) {
	keys, complete = dst, true
	argc := len(args)
	for s := range i.keySpecs {
		ks := &i.keySpecs[s]
		if ks.Flags&KeyNotKey != 0 {
			continue
		}
		if ks.Flags&KeyIncomplete != 0 {
			complete = false
		}
		first := 0
		switch ks.Begin {
		case BeginIndex:
			first = int(ks.Index)
		case BeginKeyword:
			first = keywordEnd(args, ks)
			if first == 0 {
				continue // no such keyword: no keys from this specification
			}
		default:
			complete = false
			continue
		}
		var last, step int
		switch ks.Find {
		case FindRange:
			step = int(ks.KeyStep)
			switch {
			case ks.LastKey >= 0:
				last = first + int(ks.LastKey)
			case ks.Limit == 0:
				last = argc + int(ks.LastKey)
			default:
				last = first + (argc-first)/int(ks.Limit) + int(ks.LastKey)
			}
		case FindKeyNum:
			step = int(ks.KeyStep)
			at := first + int(ks.KeyNumIdx)
			if at >= argc {
				complete = false
				continue
			}
			n, ok := parseCount(args[at])
			if !ok {
				complete = false
				continue
			}
			first += int(ks.FirstKey)
			last = first + n - 1
		default:
			complete = false
			continue
		}
		if step < 1 {
			complete = false
			continue
		}
		for j := first; j <= last; j += step {
			if j >= argc || j < 1 {
				// Too few arguments: a command of fixed arity is invalid here (the server
				// rejects it); a variadic one simply has fewer keys.
				if i.arity >= 0 {
					complete = false
				}
				break
			}
			keys = append(keys, j)
		}
	}
	return keys, complete
}

// keywordEnd returns the index after ks's keyword in args, or 0 when it is absent. The search
// mirrors Redis: forward from StartFrom up to but excluding the last argument, or backward
// from len(args)+StartFrom down to but excluding the command name.
func keywordEnd(args [][]byte, ks *KeySpec) int {
	argc := len(args)
	start, end, dir := int(ks.StartFrom), argc-1, 1
	if ks.StartFrom <= 0 {
		start, end, dir = argc+int(ks.StartFrom), 0, -1
	}
	for j := start; j != end; j += dir {
		if j >= argc || j < 1 {
			break
		}
		if equalFold(args[j], ks.Keyword) {
			return j + 1
		}
	}
	return 0
}

// parseCount parses a non-negative decimal count as Redis does (no sign, no leading zero), up
// to nine digits.
func parseCount(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
