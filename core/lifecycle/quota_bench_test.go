package lifecycle

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkCheckQuota is the decision's cost on a claim in a namespace of
// n sandboxes with a claim log as long, under two quotas (the backends call
// it once per create or claim in a namespace that has quotas).
func BenchmarkCheckQuota(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			use := QuotaUse{}
			for i := range n {
				t := fmt.Sprint("t", i%10)
				use.Held = append(use.Held, t)
				use.Claims = append(use.Claims, QuotaClaim{Template: t, At: t0.Add(-time.Duration(i) * time.Millisecond)})
			}
			rules := []QuotaRule{{Name: "ns", MaxSandboxes: i32(int32(n + 1))}, {Name: "rate", Templates: []string{"t1"}, MaxClaimsPerMinute: i32(int32(n))}}
			b.ResetTimer()
			for range b.N {
				if CheckQuota(t0, rules, use, QuotaAsk{Template: "t1", Count: 1}) != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}
