package testserver

import (
	"strings"
	"testing"
)

// raceMarker opens each report of a binary built with -race.
const raceMarker = "WARNING: DATA RACE"

// RaceReports returns the race detector's reports in a process's log
// (each from its WARNING line to the closing line of ='s), or "".
func RaceReports(log string) string {
	var b strings.Builder
	for {
		i := strings.Index(log, raceMarker)
		if i < 0 {
			return b.String()
		}
		log = log[i:]
		end := strings.Index(log, "\n==================")
		if end < 0 {
			end = len(log)
		}
		b.WriteString(log[:end])
		b.WriteString("\n")
		log = log[end:]
	}
}

// CheckNoRace fails t when what's log holds a race report. The suites run
// `sandpod serve` and `sandpod bridge` from a binary built with -race
// (make test: bin/sandpod-race, GORACE=halt_on_error=1, so the first race
// also ends the process with exit status 66).
func CheckNoRace(t testing.TB, what, log string) {
	t.Helper()
	if r := RaceReports(log); r != "" {
		t.Errorf("%s reported a data race:\n%s", what, r)
	}
}
