package testserver

import (
	"strings"
	"testing"
)

func TestRaceReports(t *testing.T) {
	report := "==================\nWARNING: DATA RACE\nRead at 0x00c000 by goroutine 7:\n  main.f()\n"
	tests := map[string]struct {
		log  string
		want []string
	}{
		"clean":       {log: "level=INFO msg=serving\n"},
		"one report":  {log: "level=INFO msg=a\n" + report + "==================\nlevel=INFO msg=b\n", want: []string{"Read at 0x00c000 by goroutine 7"}},
		"halted":      {log: report + "exit status 66\n", want: []string{"WARNING: DATA RACE", "main.f()"}},
		"two reports": {log: report + "==================\n" + strings.Replace(report, "goroutine 7", "goroutine 9", 1) + "==================\n", want: []string{"goroutine 7", "goroutine 9"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := RaceReports(tc.log)
			if len(tc.want) == 0 && got != "" {
				t.Fatalf("got %q, want none", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("report %q lacks %q", got, w)
				}
			}
			if strings.Contains(got, "msg=b") {
				t.Errorf("report %q runs past its end", got)
			}
		})
	}
}
