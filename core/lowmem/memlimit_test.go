package lowmem

import (
	"math"
	"testing"
)

func TestMemoryLimit(t *testing.T) {
	const gi = 1 << 30
	cases := map[string]struct {
		flag    string
		env     bool
		cgroup  int64
		want    int64
		wantErr bool
	}{
		"no flag, no env, no cgroup limit": {want: 0},
		"no flag, cgroup limit":            {cgroup: gi, want: gi * 9 / 10},
		"GOMEMLIMIT wins over the cgroup":  {env: true, cgroup: gi, want: 0},
		"explicit quantity":                {flag: "96Mi", cgroup: gi, env: true, want: 96 << 20},
		"off, even over GOMEMLIMIT":        {flag: "off", env: true, cgroup: gi, want: math.MaxInt64},
		"zero":                             {flag: "0", cgroup: gi, want: math.MaxInt64},
		"garbage":                          {flag: "lots", wantErr: true},
		"negative":                         {flag: "-1Mi", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := MemoryLimit(tc.flag, tc.env, tc.cgroup)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("MemoryLimit = %d, %v; want %d (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseCgroupLimit(t *testing.T) {
	cases := map[string]int64{"max\n": 0, "1073741824\n": 1 << 30, "9223372036854771712\n": 0, "": 0}
	for in, want := range cases {
		if got := parseCgroupLimit(in); got != want {
			t.Errorf("parseCgroupLimit(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestStartupGCPercent(t *testing.T) {
	cases := []struct{ steady, want int }{
		{50, 25},  // the default
		{100, 50}, // Go's
		{16, 10},  // not under 10
		{5, 5},    // a lower steady target stays
		{-1, -1},  // GC off stays off
	}
	for _, c := range cases {
		if got := StartupGCPercent(c.steady); got != c.want {
			t.Errorf("StartupGCPercent(%d) = %d, want %d", c.steady, got, c.want)
		}
	}
}
