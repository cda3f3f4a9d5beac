package engine

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAgentHung(t *testing.T) {
	cases := map[string]struct {
		failures, threshold int
		want                bool
	}{
		"no failure":          {0, 3, false},
		"below the threshold": {2, 3, false},
		"at the threshold":    {3, 3, true},
		"above the threshold": {4, 3, true},
		"threshold of one":    {1, 1, true},
		"no threshold":        {10, 0, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := agentHung(tc.failures, tc.threshold); got != tc.want {
				t.Errorf("agentHung(%d, %d) = %v, want %v", tc.failures, tc.threshold, got, tc.want)
			}
		})
	}
}

func TestPlanRestart(t *testing.T) {
	always := RestartPolicy{}.withDefaults(RestartPolicy{})
	never := RestartPolicy{Policy: RestartNever}.withDefaults(RestartPolicy{})
	fast := RestartPolicy{InitialBackoff: dur(time.Second)}.withDefaults(RestartPolicy{})
	cases := map[string]struct {
		policy RestartPolicy
		in     agentDown
		want   restartPlan
	}{
		"first death restarts at once": {always,
			agentDown{Wanted: true, RanFor: time.Minute},
			restartPlan{Restart: true, Delay: 0, Streak: 1}},
		"the second waits the initial back-off": {always,
			agentDown{Wanted: true, RanFor: 3 * time.Second, Streak: 1},
			restartPlan{Restart: true, Delay: 10 * time.Second, Streak: 2}},
		"a crash loop doubles the back-off": {always,
			agentDown{Wanted: true, RanFor: 3 * time.Second, Streak: 3},
			restartPlan{Restart: true, Delay: 40 * time.Second, Streak: 4}},
		"a configured initial back-off": {fast,
			agentDown{Wanted: true, RanFor: 3 * time.Second, Streak: 3},
			restartPlan{Restart: true, Delay: 4 * time.Second, Streak: 4}},
		"the back-off is capped": {always,
			agentDown{Wanted: true, RanFor: time.Second, Streak: 40},
			restartPlan{Restart: true, Delay: 5 * time.Minute, Streak: 41}},
		"a long run resets the streak: at once again": {always,
			agentDown{Wanted: true, RanFor: 10 * time.Minute, Streak: 7},
			restartPlan{Restart: true, Delay: 0, Streak: 1}},
		"an agent that answered clears start failures": {always,
			agentDown{Wanted: true, RanFor: time.Second, Streak: 2, StartFailures: 4},
			restartPlan{Restart: true, Delay: 20 * time.Second, Streak: 3}},
		"a failed restart backs off too": {always,
			agentDown{Wanted: true, FailedStart: true, Streak: 1},
			restartPlan{Restart: true, Delay: 10 * time.Second, Streak: 2, StartFailures: 1}},
		"a failed restart never resets the streak": {always,
			agentDown{Wanted: true, FailedStart: true, Streak: 2, StartFailures: 1, RanFor: time.Hour},
			restartPlan{Restart: true, Delay: 20 * time.Second, Streak: 3, StartFailures: 2}},
		"restarts that keep failing give up": {always,
			agentDown{Wanted: true, FailedStart: true, Streak: 5, StartFailures: 4},
			restartPlan{GaveUp: true, Streak: 6, StartFailures: 5}},
		"policy Never": {never,
			agentDown{Wanted: true, RanFor: time.Hour, Streak: 2},
			restartPlan{Streak: 2}},
		"suspended, expired or deleting: nothing restarts": {always,
			agentDown{Wanted: false, Streak: 1},
			restartPlan{Streak: 1}},
		"an unclaimed pool member is replaced by its pool": {always,
			agentDown{Wanted: true, Unclaimed: true},
			restartPlan{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := planRestart(tc.policy, tc.in); got != tc.want {
				t.Errorf("planRestart(%+v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestRestartSummary(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := map[string]struct {
		n    int32
		last *agentExit
		want string
	}{
		"never restarted": {0, &agentExit{Time: at, Reason: "exited with code 1"}, ""},
		"once":            {1, &agentExit{Time: at, Reason: hangReason(3, 15400*time.Millisecond)}, "agent restarted 1 time; last: killed after 3 failed health checks (no answer for 15s) at 2026-01-02T03:04:05Z"},
		"twice":           {2, &agentExit{Time: at, Reason: "exited with code 137"}, "agent restarted 2 times; last: exited with code 137 at 2026-01-02T03:04:05Z"},
		"no last exit":    {3, nil, "agent restarted 3 times"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := restartSummary(tc.n, tc.last); got != tc.want {
				t.Errorf("restartSummary = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSettingsDefaultsAndChecks(t *testing.T) {
	h := HealthCheck{FailureThreshold: 5}.withDefaults(HealthCheck{Period: dur(time.Second), FailureThreshold: 2})
	if h.Period.Duration != time.Second || h.Timeout.Duration != DefaultHealthTimeout || h.FailureThreshold != 5 {
		t.Errorf("health defaults: %+v", h)
	}
	p := RestartPolicy{}.withDefaults(RestartPolicy{Policy: RestartNever})
	if p.Policy != RestartNever || p.InitialBackoff.Duration != 10*time.Second || p.MaxBackoff.Duration != 5*time.Minute ||
		p.ResetAfter.Duration != 10*time.Minute || p.MaxStartFailures != 5 {
		t.Errorf("restart defaults: %+v", p)
	}
	for _, bad := range []RestartPolicy{{Policy: "OnFailure"}, {InitialBackoff: dur(time.Minute), MaxBackoff: dur(time.Second)}, {MaxStartFailures: -1}} {
		if err := bad.check(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if err := (HealthCheck{Period: dur(-time.Second)}).check(); err == nil {
		t.Error("a negative period was accepted")
	}
}

func TestParseLocalEngineConfig(t *testing.T) {
	doc := "---\napiVersion: sandpod.dev/v1alpha1\nkind: LocalEngineConfig\n" +
		"agentHealthCheck: {period: 1s, timeout: 500ms, failureThreshold: 2}\n" +
		"agentRestart: {policy: Never, initialBackoff: 2s}\n"
	defs, err := ParseDefinitions("t", []byte(tmpl+doc))
	if err != nil {
		t.Fatal(err)
	}
	e := defs.Engine
	if e == nil || e.AgentHealthCheck.Period.Duration != time.Second || e.AgentHealthCheck.Timeout.Duration != 500*time.Millisecond ||
		e.AgentHealthCheck.FailureThreshold != 2 || e.AgentRestart.Policy != RestartNever || e.AgentRestart.InitialBackoff.Duration != 2*time.Second {
		t.Fatalf("engine config = %+v", e)
	}
	for name, bad := range map[string]string{
		"twice":         tmpl + doc + doc,
		"unknown field": tmpl + "---\napiVersion: sandpod.dev/v1alpha1\nkind: LocalEngineConfig\nagentHealth: {period: 1s}\n",
		"bad policy":    tmpl + "---\napiVersion: sandpod.dev/v1alpha1\nkind: LocalEngineConfig\nagentRestart: {policy: Sometimes}\n",
	} {
		if _, err := ParseDefinitions("t", []byte(bad)); err == nil || !strings.Contains(err.Error(), "LocalEngineConfig") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func dur(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

func TestSandboxRestartPolicy(t *testing.T) {
	yes, no := true, false
	cases := map[string]struct {
		engine string
		req    *bool
		tmpl   bool
		want   string
	}{
		"engine default":                {RestartAlways, nil, false, RestartAlways},
		"engine Never":                  {RestartNever, nil, false, RestartNever},
		"template on over engine Never": {RestartNever, nil, true, RestartAlways},
		"request off over engine":       {RestartAlways, &no, false, RestartNever},
		"request off over template on":  {RestartAlways, &no, true, RestartNever},
		"request on over engine Never":  {RestartNever, &yes, false, RestartAlways},
		"request on with template on":   {RestartNever, &yes, true, RestartAlways},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := sandboxRestartPolicy(tc.engine, tc.req, tc.tmpl); got != tc.want {
				t.Errorf("sandboxRestartPolicy(%q, %v, %v) = %q, want %q", tc.engine, tc.req, tc.tmpl, got, tc.want)
			}
		})
	}
}
