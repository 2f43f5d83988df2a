package client_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/respire-go/respire/client"
)

// TestOptionsDocListsAdminCommands: docs/options.md lists exactly client.AdminCommands(), so
// the documentation follows the command table.
func TestOptionsDocListsAdminCommands(t *testing.T) {
	doc, err := os.ReadFile("../docs/options.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok1 := strings.Cut(string(doc), "<!-- admin-commands:begin -->")
	list, _, ok2 := strings.Cut(rest, "<!-- admin-commands:end -->")
	if !ok1 || !ok2 {
		t.Fatal("docs/options.md lacks the admin-commands markers")
	}
	var documented []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(list, -1) {
		documented = append(documented, m[1])
	}
	if want := client.AdminCommands(); !slices.Equal(documented, want) {
		t.Fatalf("docs/options.md lists %v\nclient.AdminCommands() is %v", documented, want)
	}
}
