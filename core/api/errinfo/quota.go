package errinfo

import (
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
)

// QuotaExceeded is the RESOURCE_EXHAUSTED of a create, claim or fork over a
// SandboxQuota, the same on both backends: reason CLAIM_RATE_EXCEEDED for
// maxClaimsPerMinute (rate), SANDBOX_QUOTA_EXCEEDED for maxSandboxes; the
// quota, the limit, its value, the use and (for the rate) when to retry in
// the metadata; msg names them for a person.
func QuotaExceeded(ns, quota, limit string, max int32, used int, retryAfter time.Duration, rate bool, msg string) error {
	reason := ReasonSandboxQuotaExceeded
	md := map[string]string{"quota": quota, "namespace": ns, "limit": limit, "max": strconv.Itoa(int(max)), "used": strconv.Itoa(used)}
	if rate {
		reason = ReasonClaimRateExceeded
		md["retry_after"] = retryAfter.Round(time.Second).String()
	}
	return New(codes.ResourceExhausted, reason, md, msg)
}
