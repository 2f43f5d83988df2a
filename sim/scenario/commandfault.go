package scenario

import (
	"path"
	"strconv"
	"strings"
)

// CommandErrorFault makes a node answer the commands it names with an error reply, without
// executing them, for its window: a server that is BUSY running a script, LOADING its dataset,
// out of memory (OOM), a READONLY replica, or a Cluster node answering MOVED. Handshake steps
// are commands too, so SELECT or CLIENT SETINFO can be failed alone.
type CommandErrorFault struct {
	// Node is the node.
	Node string `yaml:"node"`
	// For is the window's length; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
	// Commands lists the commands refused: a name ("GET", "SELECT"), or a name and its
	// subcommand ("CLIENT SETINFO"), in any case. At least one.
	Commands []string `yaml:"commands"`
	// Keys, when set, is a glob (path.Match syntax: *, ?, [a-z]) that the command's first key
	// must match: "k*" refuses GET k3 but not GET c1. Commands without a key never match it.
	Keys string `yaml:"keys,omitempty"`
	// Reply is the error reply, code first: "BUSY Redis is busy running a script. You can only
	// call SCRIPT KILL or SHUTDOWN NOSCRIPT.", "OOM command not allowed when used memory >
	// 'maxmemory'.", "READONLY You can't write against a read only replica.", "MOVED 3999
	// 127.0.0.1:6381".
	Reply string `yaml:"reply"`
}

// Matches reports whether the fault refuses the command args, whose canonical upper-case name is
// name (empty for a command the node does not know: args[0] is compared instead).
func (f *CommandErrorFault) Matches(name string, args [][]byte) bool {
	return matchCommand(f.Commands, f.Keys, name, args)
}

// matchCommand reports whether the command args (canonical name name, or "" when unknown) is
// one of commands and, with a keys pattern, whether its first key matches it.
func matchCommand(commands []string, keys, name string, args [][]byte) bool {
	if name == "" && len(args) > 0 {
		name = strings.ToUpper(string(args[0]))
	}
	hit := false
	for _, c := range commands {
		cmd, sub, hasSub := strings.Cut(c, " ")
		if !strings.EqualFold(cmd, name) {
			continue
		}
		if hasSub && (len(args) < 2 || !strings.EqualFold(sub, string(args[1]))) {
			continue
		}
		hit = true
		break
	}
	if !hit {
		return false
	}
	if keys == "" {
		return true
	}
	if len(args) < 2 || !keyed[name] {
		return false
	}
	ok, _ := path.Match(keys, string(args[1]))
	return ok
}

// SlowReplyFault makes a node slow on the commands it names for its window: each one executes,
// then keeps the node busy for Extra before its reply is written, as a slow command (a big
// KEYS, a long script) does in a server that runs one command at a time. Nothing else is served
// meanwhile.
type SlowReplyFault struct {
	// Node is the node.
	Node string `yaml:"node"`
	// For is the window's length; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
	// Commands and Keys select the commands, as in CommandErrorFault.
	Commands []string `yaml:"commands"`
	Keys     string   `yaml:"keys,omitempty"`
	// Extra is how long the node stays busy before the reply (positive; a range is drawn once).
	Extra TimeRange `yaml:"extra"`
}

// Matches reports whether the fault slows the command args.
func (f *SlowReplyFault) Matches(name string, args [][]byte) bool {
	return matchCommand(f.Commands, f.Keys, name, args)
}

// MalformedReplyFault makes a node answer the commands it names with a malformed frame for its
// window, after executing them: the client's parser fails, its connection is lost, and the
// commands in flight end with an unknown outcome. With WrongKind the frame is well formed but of
// a kind the command does not accept (an integer, or an empty array for a command that answers
// an integer): the parser accepts it, the command's expected reply shape does not, and the
// command fails with that protocol error.
type MalformedReplyFault struct {
	// Node is the node.
	Node string `yaml:"node"`
	// For is the window's length; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
	// Commands and Keys select the commands, as in CommandErrorFault.
	Commands []string `yaml:"commands"`
	Keys     string   `yaml:"keys,omitempty"`
	// WrongKind replaces the reply with a well-formed reply of another kind instead of bytes no
	// parser accepts.
	WrongKind bool `yaml:"wrong_kind,omitempty"`
}

// Matches reports whether the fault garbles the reply of the command args.
func (f *MalformedReplyFault) Matches(name string, args [][]byte) bool {
	return matchCommand(f.Commands, f.Keys, name, args)
}

// keyed lists the commands whose first argument is a key.
var keyed = map[string]bool{"GET": true, "SET": true, "DEL": true, "EXISTS": true, "INCR": true, "MGET": true,
	"MSET": true, "LPUSH": true, "RPUSH": true, "LPOP": true, "RPOP": true, "LLEN": true, "BLPOP": true, "BRPOP": true,
	"WATCH": true}

// validate checks the fault under field.
func (f *CommandErrorFault) validate(field string) error {
	if err := validateMatch(field, f.Commands, f.Keys); err != nil {
		return err
	}
	if !isErrorReply(f.Reply) {
		return fieldErr(field+".reply", "must be an error reply starting with an upper-case code, such as \"BUSY Redis is busy running a script.\"")
	}
	return nil
}

// ValidateCommandMatch checks the commands and keys pattern of a command fault (command_error,
// slow_reply, malformed_reply) as the loader does, naming field in its error: for code that
// builds such faults itself (simtest's fault spaces) and must refuse them before it draws any.
func ValidateCommandMatch(field string, commands []string, keys string) error {
	return validateMatch(field, commands, keys)
}

// validateMatch checks a fault's commands and keys pattern under field.
func validateMatch(field string, commands []string, keys string) error {
	if len(commands) == 0 {
		return fieldErr(field+".commands", "needs at least one command, such as [GET] or [\"CLIENT SETINFO\"]")
	}
	for i, c := range commands {
		words := strings.Fields(c)
		if len(words) == 0 || len(words) > 2 || strings.Join(words, " ") != c {
			return fieldErr(field+".commands["+strconv.Itoa(i)+"]", "must be a command name, or a name and a subcommand separated by one space")
		}
	}
	if keys != "" {
		if _, err := path.Match(keys, ""); err != nil {
			return fieldErr(field+".keys", "invalid pattern "+strconv.Quote(keys))
		}
	}
	return nil
}
