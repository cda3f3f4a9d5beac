package engine

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/lifecycle"
)

// The agent's liveness and restart policy. Like core/lifecycle, everything
// in this file is a pure function of its inputs (no clock, no I/O): the
// engine observes, asks, and acts on the answer.

// HealthCheck configures the engine's liveness checks of running agents: a
// GetAgentInfo call with the sandbox's secret every Period, failing after
// Timeout; FailureThreshold failures in a row mean the agent is hung, and
// the engine kills its process tree. Zero fields take the defaults.
type HealthCheck struct {
	Period           metav1.Duration `json:"period,omitempty"`
	Timeout          metav1.Duration `json:"timeout,omitempty"`
	FailureThreshold int             `json:"failureThreshold,omitempty"`
}

// Restart policies of a sandbox whose agent died or was killed for a hang.
const (
	// RestartAlways restarts the agent (same name, same files, new process
	// tree) with a crash-loop back-off, like a pod's restartPolicy Always.
	RestartAlways = "Always"
	// RestartNever leaves the sandbox Failed until ResumeSandbox.
	RestartNever = "Never"
)

// RestartPolicy configures what happens to a claimed sandbox whose agent
// died or was killed for a hang. Zero fields take the defaults.
type RestartPolicy struct {
	// Policy is Always (the default) or Never.
	Policy string `json:"policy,omitempty"`
	// The back-off is lifecycle.RestartBackoff, the controller's too: the
	// first restart of a streak is immediate, the next waits
	// InitialBackoff, which doubles with each restart of the streak, up to
	// MaxBackoff.
	InitialBackoff metav1.Duration `json:"initialBackoff,omitempty"`
	MaxBackoff     metav1.Duration `json:"maxBackoff,omitempty"`
	// ResetAfter: an agent that ran this long before it died starts a new
	// streak (its restart is immediate again).
	ResetAfter metav1.Duration `json:"resetAfter,omitempty"`
	// MaxStartFailures restarts in a row whose new agent never answered
	// make the sandbox Failed (nothing will change by retrying).
	MaxStartFailures int `json:"maxStartFailures,omitempty"`
}

// Defaults of HealthCheck and RestartPolicy.
const (
	DefaultHealthPeriod     = 5 * time.Second
	DefaultHealthTimeout    = 2 * time.Second
	DefaultHealthThreshold  = 3
	DefaultInitialBackoff   = lifecycle.RestartBackoffBase
	DefaultMaxBackoff       = lifecycle.RestartBackoffMax
	DefaultBackoffReset     = lifecycle.RestartBackoffReset
	DefaultMaxStartFailures = 5
)

// withDefaults fills zero fields from b (another source of settings), then
// from the defaults.
func (h HealthCheck) withDefaults(b HealthCheck) HealthCheck {
	h.Period = pick(h.Period.Duration, b.Period.Duration, DefaultHealthPeriod)
	h.Timeout = pick(h.Timeout.Duration, b.Timeout.Duration, DefaultHealthTimeout)
	h.FailureThreshold = pickInt(h.FailureThreshold, b.FailureThreshold, DefaultHealthThreshold)
	return h
}

func (p RestartPolicy) withDefaults(b RestartPolicy) RestartPolicy {
	switch {
	case p.Policy != "":
	case b.Policy != "":
		p.Policy = b.Policy
	default:
		p.Policy = RestartAlways
	}
	p.InitialBackoff = pick(p.InitialBackoff.Duration, b.InitialBackoff.Duration, DefaultInitialBackoff)
	p.MaxBackoff = pick(p.MaxBackoff.Duration, b.MaxBackoff.Duration, DefaultMaxBackoff)
	p.ResetAfter = pick(p.ResetAfter.Duration, b.ResetAfter.Duration, DefaultBackoffReset)
	p.MaxStartFailures = pickInt(p.MaxStartFailures, b.MaxStartFailures, DefaultMaxStartFailures)
	return p
}

func pick(a, b, d time.Duration) metav1.Duration {
	switch {
	case a > 0:
		return metav1.Duration{Duration: a}
	case b > 0:
		return metav1.Duration{Duration: b}
	}
	return metav1.Duration{Duration: d}
}

func pickInt(a, b, d int) int {
	switch {
	case a > 0:
		return a
	case b > 0:
		return b
	}
	return d
}

func (h HealthCheck) check() error {
	if h.Period.Duration < 0 || h.Timeout.Duration < 0 || h.FailureThreshold < 0 {
		return fmt.Errorf("agentHealthCheck: period, timeout and failureThreshold must not be negative")
	}
	return nil
}

func (p RestartPolicy) check() error {
	if p.Policy != "" && p.Policy != RestartAlways && p.Policy != RestartNever {
		return fmt.Errorf("agentRestart: policy %q, want %s or %s", p.Policy, RestartAlways, RestartNever)
	}
	if p.InitialBackoff.Duration < 0 || p.MaxBackoff.Duration < 0 || p.ResetAfter.Duration < 0 || p.MaxStartFailures < 0 {
		return fmt.Errorf("agentRestart: durations and maxStartFailures must not be negative")
	}
	if p.MaxBackoff.Duration > 0 && p.InitialBackoff.Duration > p.MaxBackoff.Duration {
		return fmt.Errorf("agentRestart: initialBackoff %s is above maxBackoff %s", p.InitialBackoff.Duration, p.MaxBackoff.Duration)
	}
	return nil
}

// agentHung says whether failures health checks in a row mean the agent is
// hung and must be killed.
func agentHung(failures, threshold int) bool {
	return threshold > 0 && failures >= threshold
}

// agentDown describes one end of an agent, as the restart policy sees it.
type agentDown struct {
	// Wanted: the sandbox should be running (not suspended, expired or
	// being deleted: then nothing restarts).
	Wanted bool
	// Unclaimed: a warm pool member; the pool replaces it instead.
	Unclaimed bool
	// FailedStart: a restart whose new agent never answered.
	FailedStart bool
	// RanFor is how long the agent had been answering before it ended (0
	// for a failed start).
	RanFor time.Duration
	// Streak and StartFailures are the counts before this end.
	Streak, StartFailures int
}

// restartPlan is the policy's answer.
type restartPlan struct {
	// Restart after Delay. When false, the sandbox is Failed.
	Restart bool
	Delay   time.Duration
	// GaveUp: restarts kept failing (MaxStartFailures in a row).
	GaveUp bool
	// Streak and StartFailures are the counts to remember.
	Streak, StartFailures int
}

// sandboxRestartPolicy is the restart policy of one sandbox: its claim's or
// create's explicit restart_on_failure (true: Always, false: Never), else
// Always when its template asks for restartOnFailure, else the engine's
// agentRestart policy (default Always). The local engine's restart is the
// same thing as a replaced pod on Kubernetes (same name, same files, a new
// process tree), with a back-off; an unset template field cannot be told
// from false, so a template can turn restarts on but not off here.
func sandboxRestartPolicy(engine string, req *bool, tmpl bool) string {
	switch {
	case req != nil && *req:
		return RestartAlways
	case req != nil:
		return RestartNever
	case tmpl:
		return RestartAlways
	}
	return engine
}

// planRestart decides whether and when an ended agent is restarted: always
// (unless the policy is Never, the sandbox should not run, or it is an
// unclaimed pool member), after the back-off of lifecycle.RestartBackoff
// (at once, then InitialBackoff, 2x, 4x, ... up to MaxBackoff); an agent
// that ran for ResetAfter starts a new streak. Restarts whose agent never
// answers count separately: MaxStartFailures of them in a row give up.
func planRestart(p RestartPolicy, d agentDown) restartPlan {
	plan := restartPlan{Streak: d.Streak, StartFailures: d.StartFailures}
	if !d.Wanted || d.Unclaimed || p.Policy == RestartNever {
		return plan
	}
	b := lifecycle.RestartBackoff{Base: p.InitialBackoff.Duration, Max: p.MaxBackoff.Duration, Reset: p.ResetAfter.Duration}
	if d.FailedStart {
		plan.StartFailures++
	} else {
		plan.StartFailures = 0
		plan.Streak = int(b.Streak(int32(d.Streak), d.RanFor))
	}
	delay := b.Delay(int32(plan.Streak))
	plan.Streak++
	if p.MaxStartFailures > 0 && plan.StartFailures >= p.MaxStartFailures {
		plan.GaveUp = true
		return plan
	}
	plan.Restart = true
	plan.Delay = delay
	return plan
}

// hangReason says why a hung agent was killed.
func hangReason(failures int, silent time.Duration) string {
	return fmt.Sprintf("killed after %d failed health checks (no answer for %s)", failures, silent.Round(time.Second))
}

// restartSummary is the message of a sandbox whose agent was restarted.
func restartSummary(restarts int32, last *agentExit) string {
	if restarts <= 0 {
		return ""
	}
	times := "times"
	if restarts == 1 {
		times = "time"
	}
	s := fmt.Sprintf("agent restarted %d %s", restarts, times)
	if last != nil {
		s += "; last: " + last.Reason + " at " + last.Time.UTC().Format(time.RFC3339)
	}
	return s
}

// agentExit records how and when an agent last ended.
type agentExit struct {
	Time   time.Time `json:"time"`
	Reason string    `json:"reason"`
}
