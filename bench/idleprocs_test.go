package main

import "testing"

func TestProcStat(t *testing.T) {
	for name, tc := range map[string]struct {
		in    string
		ppid  int
		start uint64
		comm  string
		ok    bool
	}{
		"plain":         {in: "12 (pasta) S 7 12 12 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 5555 1000 10", ppid: 7, start: 5555, comm: "pasta", ok: true},
		"paren in name": {in: "13 (a) b) R 1 13 13 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0 0", ppid: 1, start: 77, comm: "a) b", ok: true},
		"truncated":     {in: "14 (x) S 1 2", ok: false},
		"no name":       {in: "garbage", ok: false},
	} {
		ppid, start, comm, ok := procStat([]byte(tc.in))
		if ok != tc.ok || (ok && (ppid != tc.ppid || start != tc.start || comm != tc.comm)) {
			t.Errorf("%s: got %d %d %q %v", name, ppid, start, comm, ok)
		}
	}
}

func TestDescendants(t *testing.T) {
	procs := map[int]proc{
		1: {pid: 1}, 10: {pid: 10, ppid: 1}, // serve
		11: {pid: 11, ppid: 10}, 12: {pid: 12, ppid: 11}, 13: {pid: 13, ppid: 12},
		20: {pid: 20, ppid: 1}, 21: {pid: 21, ppid: 20},
		30: {pid: 30, ppid: 99}, // parent unknown
	}
	got := descendants(procs, 10)
	if len(got) != 3 || got[0].pid != 11 || got[1].pid != 12 || got[2].pid != 13 {
		t.Errorf("descendants = %v", got)
	}
}

func TestKibField(t *testing.T) {
	b := []byte("Rss:   2048 kB\nPss:    1234 kB\nPss_Dirty:  99 kB\n")
	for key, want := range map[string]int64{"Pss:": 1234, "Pss_Dirty:": 99, "Swap:": 0} {
		if got := kibField(b, key); got != want {
			t.Errorf("%s = %d, want %d", key, got, want)
		}
	}
}
