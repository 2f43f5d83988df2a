package node

import "testing"

// TestGlobMatch: the node matches pattern subscriptions as Redis does.
func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct{ p, s string }{
		{"news.*", "news.sport"}, {"news.*", "news"}, {"h?llo", "hello"}, {"h?llo", "hllo"},
		{"h[ae]llo", "hallo"}, {"h[^e]llo", "hello"}, {"h[a-c]llo", "hbllo"}, {"*", ""}, {"a\\*", "a*"}, {"a\\*", "ab"},
	} {
		want := map[string]bool{"news.*|news.sport": true, "h?llo|hello": true, "h[ae]llo|hallo": true,
			"h[a-c]llo|hbllo": true, "*|": true, "a\\*|a*": true}[tc.p+"|"+tc.s]
		if got := globMatch(tc.p, tc.s); got != want {
			t.Errorf("globMatch(%q, %q) = %v", tc.p, tc.s, got)
		}
	}
}
