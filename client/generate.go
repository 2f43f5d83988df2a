package client

// The typed command surface (commands_gen.go) is generated from commands.txt, checked against
// the command table of internal/command. After editing commands.txt, run go generate ./client.

//go:generate go run ../internal/command/surface/gen
