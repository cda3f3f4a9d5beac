package lifecycle

import (
	"strings"
	"testing"
	"time"
)

func i32(v int32) *int32 { return &v }

func TestCheckQuota(t *testing.T) {
	ns := QuotaRule{Name: "ns", MaxSandboxes: i32(3)}
	rate := QuotaRule{Name: "rate", MaxClaimsPerMinute: i32(2)}
	py := QuotaRule{Name: "py", Templates: []string{"python"}, MaxSandboxes: i32(1)}
	zero := QuotaRule{Name: "zero", MaxSandboxes: i32(0)}
	ago := func(d time.Duration) time.Time { return t0.Add(-d) }
	cases := map[string]struct {
		rules     []QuotaRule
		use       QuotaUse
		ask       QuotaAsk
		wantQuota string
		wantLimit Limit
		wantUsed  int
		wantRetry time.Duration
	}{
		"no rules":                             {nil, QuotaUse{Held: []string{"a", "a"}}, QuotaAsk{"a", 1}, "", "", 0, 0},
		"under the sandbox limit":              {[]QuotaRule{ns}, QuotaUse{Held: []string{"a", "b"}}, QuotaAsk{"a", 1}, "", "", 0, 0},
		"at the sandbox limit":                 {[]QuotaRule{ns}, QuotaUse{Held: []string{"a", "b", "c"}}, QuotaAsk{"a", 1}, "ns", LimitSandboxes, 3, 0},
		"a fork of two passes it":              {[]QuotaRule{ns}, QuotaUse{Held: []string{"a", "b"}}, QuotaAsk{"a", 2}, "ns", LimitSandboxes, 2, 0},
		"a retry asks for nothing":             {[]QuotaRule{zero}, QuotaUse{}, QuotaAsk{"a", 0}, "", "", 0, 0},
		"zero refuses everything":              {[]QuotaRule{zero}, QuotaUse{}, QuotaAsk{"a", 1}, "zero", LimitSandboxes, 0, 0},
		"template rule, other tmpl":            {[]QuotaRule{py}, QuotaUse{Held: []string{"python"}}, QuotaAsk{"node", 1}, "", "", 0, 0},
		"template rule counts only its own":    {[]QuotaRule{py}, QuotaUse{Held: []string{"node", "node"}}, QuotaAsk{"python", 1}, "", "", 0, 0},
		"template rule, full":                  {[]QuotaRule{py}, QuotaUse{Held: []string{"python", "node"}}, QuotaAsk{"python", 1}, "py", LimitSandboxes, 1, 0},
		"rate: two in the window":              {[]QuotaRule{rate}, QuotaUse{Claims: []QuotaClaim{{"a", ago(10 * time.Second)}, {"b", ago(50 * time.Second)}}}, QuotaAsk{"a", 1}, "rate", LimitClaimsPerMinute, 2, 10 * time.Second},
		"rate: one left the window":            {[]QuotaRule{rate}, QuotaUse{Claims: []QuotaClaim{{"a", ago(10 * time.Second)}, {"b", ago(61 * time.Second)}}}, QuotaAsk{"a", 1}, "", "", 0, 0},
		"rate: exactly a minute old is out":    {[]QuotaRule{rate}, QuotaUse{Claims: []QuotaClaim{{"a", ago(time.Minute)}, {"b", ago(time.Second)}}}, QuotaAsk{"a", 1}, "", "", 0, 0},
		"rate: fork of 3 over an empty window": {[]QuotaRule{rate}, QuotaUse{}, QuotaAsk{"a", 3}, "rate", LimitClaimsPerMinute, 0, time.Minute},
		"rate: fork of 2 waits for the older":  {[]QuotaRule{rate}, QuotaUse{Claims: []QuotaClaim{{"a", ago(10 * time.Second)}, {"b", ago(40 * time.Second)}}}, QuotaAsk{"a", 2}, "rate", LimitClaimsPerMinute, 2, 50 * time.Second},
		"first refusing rule wins":             {[]QuotaRule{ns, py}, QuotaUse{Held: []string{"python", "x", "y"}}, QuotaAsk{"python", 1}, "ns", LimitSandboxes, 3, 0},
		"later rule refuses":                   {[]QuotaRule{ns, py}, QuotaUse{Held: []string{"python"}}, QuotaAsk{"python", 1}, "py", LimitSandboxes, 1, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := CheckQuota(t0, tc.rules, tc.use, tc.ask)
			if tc.wantQuota == "" {
				if got != nil {
					t.Fatalf("CheckQuota = %+v, want allowed", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("CheckQuota allowed, want %s %s", tc.wantQuota, tc.wantLimit)
			}
			if got.Quota != tc.wantQuota || got.Limit != tc.wantLimit || got.Used != tc.wantUsed || got.RetryAfter != tc.wantRetry {
				t.Errorf("CheckQuota = %+v, want quota %s limit %s used %d retry %v", got, tc.wantQuota, tc.wantLimit, tc.wantUsed, tc.wantRetry)
			}
			if msg := got.Message("default", tc.ask.Template); !strings.Contains(msg, string(tc.wantLimit)) || !strings.Contains(msg, tc.wantQuota) {
				t.Errorf("message %q names neither the limit nor the quota", msg)
			}
		})
	}
}

func TestPruneClaims(t *testing.T) {
	got := PruneClaims(t0, []QuotaClaim{{"a", t0.Add(-2 * time.Minute)}, {"b", t0.Add(-time.Second)}, {"c", t0.Add(-time.Minute)}})
	if len(got) != 1 || got[0].Template != "b" {
		t.Errorf("PruneClaims kept %+v, want only b", got)
	}
}
