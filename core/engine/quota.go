package engine

import (
	"fmt"
	"sort"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// checkQuota checks a SandboxQuota document of the configuration.
func checkQuota(q *v1alpha1.SandboxQuota) error {
	if q.Namespace == "" {
		q.Namespace = DefaultNamespace
	}
	if err := checkName("SandboxQuota", q.Name); err != nil {
		return err
	}
	s := q.Spec
	if s.MaxSandboxes == nil && s.MaxClaimsPerMinute == nil {
		return fmt.Errorf("config: SandboxQuota %s/%s: set spec.maxSandboxes, spec.maxClaimsPerMinute or both", q.Namespace, q.Name)
	}
	for _, v := range []*int32{s.MaxSandboxes, s.MaxClaimsPerMinute} {
		if v != nil && *v < 0 {
			return fmt.Errorf("config: SandboxQuota %s/%s: limits must not be negative", q.Namespace, q.Name)
		}
	}
	return nil
}

// quotaRulesLocked are the quotas of a namespace as lifecycle rules, by
// name, pools resolved to their templates. Callers hold e.mu.
func (e *Engine) quotaRulesLocked(ns string) []lifecycle.QuotaRule {
	var out []lifecycle.QuotaRule
	for _, q := range e.quotas {
		if q.Namespace != ns {
			continue
		}
		r := lifecycle.QuotaRule{Name: q.Name, MaxSandboxes: q.Spec.MaxSandboxes, MaxClaimsPerMinute: q.Spec.MaxClaimsPerMinute}
		r.Templates = append(r.Templates, q.Spec.Templates...)
		for _, p := range q.Spec.Pools {
			if pl := e.pools[ns+"/"+p]; pl != nil {
				r.Templates = append(r.Templates, pl.template)
			} else {
				// A pool that does not exist covers nothing; keep the rule
				// narrowed rather than widened to the whole namespace.
				r.Templates = append(r.Templates, "\x00no-pool:"+p)
			}
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// admitLocked checks that count more sandboxes of template fit the
// namespace's quotas and, when record is set, counts them as handed out
// now (the claim window is kept in memory: a restart forgets the last
// minute's claims). Callers hold e.mu.
func (e *Engine) admitLocked(ns, template string, count int, record bool) error {
	rules := e.quotaRulesLocked(ns)
	if len(rules) == 0 || count <= 0 {
		return nil
	}
	now := e.now()
	e.claimLog[ns] = lifecycle.PruneClaims(now, e.claimLog[ns])
	use := lifecycle.QuotaUse{Claims: e.claimLog[ns]}
	for _, sb := range e.sandboxes {
		if r := &sb.rec; r.Namespace == ns && r.Claimed && !r.Deleting {
			use.Held = append(use.Held, r.Spec.Template)
		}
	}
	if no := lifecycle.CheckQuota(now, rules, use, lifecycle.QuotaAsk{Template: template, Count: count}); no != nil {
		return &QuotaError{Namespace: ns, Template: template, Refusal: no}
	}
	if record {
		for range count {
			e.claimLog[ns] = append(e.claimLog[ns], lifecycle.QuotaClaim{Template: template, At: now})
		}
	}
	return nil
}
