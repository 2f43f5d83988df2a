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
	if name == "" && len(args) > 0 {
		name = strings.ToUpper(string(args[0]))
	}
	hit := false
	for _, c := range f.Commands {
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
	if f.Keys == "" {
		return true
	}
	if len(args) < 2 || !keyed[name] {
		return false
	}
	ok, _ := path.Match(f.Keys, string(args[1]))
	return ok
}

// keyed lists the commands whose first argument is a key.
var keyed = map[string]bool{"GET": true, "SET": true, "DEL": true, "EXISTS": true, "INCR": true, "MGET": true,
	"MSET": true, "LPUSH": true, "RPUSH": true, "LPOP": true, "RPOP": true, "LLEN": true, "BLPOP": true, "BRPOP": true,
	"WATCH": true}

// validate checks the fault under field.
func (f *CommandErrorFault) validate(field string) error {
	if len(f.Commands) == 0 {
		return fieldErr(field+".commands", "needs at least one command, such as [GET] or [\"CLIENT SETINFO\"]")
	}
	for i, c := range f.Commands {
		words := strings.Fields(c)
		if len(words) == 0 || len(words) > 2 || strings.Join(words, " ") != c {
			return fieldErr(field+".commands["+strconv.Itoa(i)+"]", "must be a command name, or a name and a subcommand separated by one space")
		}
	}
	if f.Keys != "" {
		if _, err := path.Match(f.Keys, ""); err != nil {
			return fieldErr(field+".keys", "invalid pattern "+strconv.Quote(f.Keys))
		}
	}
	if !isErrorReply(f.Reply) {
		return fieldErr(field+".reply", "must be an error reply starting with an upper-case code, such as \"BUSY Redis is busy running a script.\"")
	}
	return nil
}
