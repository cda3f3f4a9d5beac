package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandpod/sandpod/core/api/errinfo"
)

// ClaimWindow is the sliding window of a quota's MaxClaimsPerMinute.
const ClaimWindow = time.Minute

// QuotaRule is one SandboxQuota as the decision needs it: its limits, and
// the templates it covers (empty: every sandbox of the namespace). A quota
// that names pools covers their templates; the caller resolves them.
type QuotaRule struct {
	Name               string
	Templates          []string
	MaxSandboxes       *int32
	MaxClaimsPerMinute *int32
}

func (q QuotaRule) covers(template string) bool {
	return len(q.Templates) == 0 || slices.Contains(q.Templates, template)
}

// QuotaUse is what a namespace holds: the template of every sandbox that
// counts (claimed or created, not an unclaimed pool member, not being
// deleted), and the template and time of every claim, create or fork made
// in the last ClaimWindow.
type QuotaUse struct {
	Held   []string
	Claims []QuotaClaim
}

// QuotaClaim is one sandbox handed out (claimed, created or forked).
type QuotaClaim struct {
	Template string
	At       time.Time
}

// QuotaAsk is the request: Count new sandboxes of Template (a fork asks for
// several; a retry that returns an earlier sandbox asks for none).
type QuotaAsk struct {
	Template string
	Count    int
}

// Limit names which of a quota's limits refused a request.
type Limit string

const (
	LimitSandboxes       Limit = "maxSandboxes"
	LimitClaimsPerMinute Limit = "maxClaimsPerMinute"
)

// QuotaRefusal says which limit a request would pass, with its use.
type QuotaRefusal struct {
	Quota string
	Limit Limit
	Max   int32
	// Used is the use the limit counts now (sandboxes held, or claims in
	// the last minute); Asked is what the request adds.
	Used, Asked int
	// RetryAfter: for the claim rate, when the oldest claim in the window
	// leaves it (0 for maxSandboxes: wait for a delete).
	RetryAfter time.Duration
}

// Message names the limit and the use, for a person to act on.
func (r *QuotaRefusal) Message(namespace, template string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "SandboxQuota %q of namespace %q: ", r.Quota, namespace)
	switch r.Limit {
	case LimitSandboxes:
		fmt.Fprintf(&b, "%s is %d and %d %s sandboxes exist", r.Limit, r.Max, r.Used, template)
		if r.Asked > 1 {
			fmt.Fprintf(&b, " (this call asks for %d more)", r.Asked)
		}
		b.WriteString(": delete some first")
	default:
		fmt.Fprintf(&b, "%s is %d and %d %s sandboxes were handed out in the last minute", r.Limit, r.Max, r.Used, template)
		if r.Asked > 1 {
			fmt.Fprintf(&b, " (this call asks for %d more)", r.Asked)
		}
		fmt.Fprintf(&b, ": retry in %s", r.RetryAfter.Round(time.Second))
	}
	return b.String()
}

// CheckQuota says whether ask fits every rule that covers its template, and
// if not, the first limit it would pass (rules in the order given: callers
// sort them by name). A limit of 0 refuses every request it covers; a nil
// one does not limit.
func CheckQuota(now time.Time, rules []QuotaRule, use QuotaUse, ask QuotaAsk) *QuotaRefusal {
	if ask.Count <= 0 {
		return nil
	}
	for _, q := range rules {
		if !q.covers(ask.Template) {
			continue
		}
		if q.MaxSandboxes != nil {
			held := 0
			for _, t := range use.Held {
				if q.covers(t) {
					held++
				}
			}
			if held+ask.Count > int(*q.MaxSandboxes) {
				return &QuotaRefusal{Quota: q.Name, Limit: LimitSandboxes, Max: *q.MaxSandboxes, Used: held, Asked: ask.Count}
			}
		}
		if q.MaxClaimsPerMinute != nil {
			since := now.Add(-ClaimWindow)
			inWindow := func(c QuotaClaim) bool {
				return c.At.After(since) && !c.At.After(now) && q.covers(c.Template)
			}
			n := 0
			for _, c := range use.Claims {
				if inWindow(c) {
					n++
				}
			}
			if n+ask.Count > int(*q.MaxClaimsPerMinute) {
				// Only a refusal needs the times: the window frees enough
				// room when the claim that must leave it does, the
				// (excess)th oldest.
				in := make([]time.Time, 0, n)
				for _, c := range use.Claims {
					if inWindow(c) {
						in = append(in, c.At)
					}
				}
				slices.SortFunc(in, func(a, b time.Time) int { return a.Compare(b) })
				retry := ClaimWindow
				if excess := n + ask.Count - int(*q.MaxClaimsPerMinute); excess <= n {
					retry = in[excess-1].Add(ClaimWindow).Sub(now)
				}
				return &QuotaRefusal{Quota: q.Name, Limit: LimitClaimsPerMinute, Max: *q.MaxClaimsPerMinute, Used: n, Asked: ask.Count, RetryAfter: retry}
			}
		}
	}
	return nil
}

// PruneClaims drops the claims that have left the window (what a backend
// keeps in memory between calls).
func PruneClaims(now time.Time, claims []QuotaClaim) []QuotaClaim {
	out := claims[:0]
	for _, c := range claims {
		if c.At.After(now.Add(-ClaimWindow)) {
			out = append(out, c)
		}
	}
	return out
}

// Err is the refusal as the API's RESOURCE_EXHAUSTED (errinfo.QuotaExceeded).
func (r *QuotaRefusal) Err(namespace, template string) error {
	return errinfo.QuotaExceeded(namespace, r.Quota, string(r.Limit), r.Max, r.Used, r.RetryAfter, r.Limit == LimitClaimsPerMinute, r.Message(namespace, template))
}
