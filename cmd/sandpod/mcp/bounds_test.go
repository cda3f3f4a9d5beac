package mcp

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	long := strings.Repeat("a", 50) + strings.Repeat("z", 50)
	cases := map[string]struct {
		in       string
		limit    int
		want     string // "" to check only the properties below
		wantCut  bool
		wantHead string
		wantTail string
	}{
		"fits":          {in: "hello\n", limit: 6, want: "hello\n"},
		"empty":         {in: "", limit: 4, want: ""},
		"invalid utf-8": {in: "a\xffb", limit: 10, want: "a\uFFFDb"},
		"cut keeps both ends": {in: long, limit: 20, wantCut: true,
			wantHead: strings.Repeat("a", 10) + "\n[... 80 of 100 bytes left out", wantTail: "kept ...]\n" + strings.Repeat("z", 10)},
		// é is 2 bytes: the cut never splits it.
		"cut on characters": {in: strings.Repeat("é", 20), limit: 9, wantCut: true,
			wantHead: "éé\n", wantTail: "]\néé"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, cut := clip([]byte(tc.in), tc.limit)
			if cut != tc.wantCut {
				t.Errorf("cut = %v, want %v", cut, tc.wantCut)
			}
			if !utf8.ValidString(got) {
				t.Errorf("not UTF-8: %q", got)
			}
			if !tc.wantCut {
				if got != tc.want {
					t.Errorf("clip = %q, want %q", got, tc.want)
				}
				return
			}
			if !strings.HasPrefix(got, tc.wantHead) || !strings.HasSuffix(got, tc.wantTail) {
				t.Errorf("clip = %q, want it to start %q and end %q", got, tc.wantHead, tc.wantTail)
			}
			head, rest, _ := strings.Cut(got, "\n[...")
			_, tail, _ := strings.Cut(rest, "...]\n")
			if body := len(head) + len(tail); body > tc.limit {
				t.Errorf("kept %d bytes of the input, over the limit %d", body, tc.limit)
			}
		})
	}
}
