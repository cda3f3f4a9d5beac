package bridge

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func TestClaimLabels(t *testing.T) {
	pooled := &sandpodv1.Sandbox{Name: "sb-1", Template: "python", Pool: "python"}
	cold := &sandpodv1.Sandbox{Name: "sb-2", Template: "node"}
	for _, tc := range []struct {
		name                          string
		sb                            *sandpodv1.Sandbox
		warm                          bool
		err                           error
		outcome, code, template, pool string
	}{
		{"warm", pooled, true, nil, "warm", "OK", "python", "python"},
		{"cold", cold, false, nil, "cold", "OK", "node", ""},
		{"cold from a pool's template", pooled, false, nil, "cold", "OK", "python", "python"},
		{"not found", nil, false, errinfo.New(codes.NotFound, errinfo.ReasonSandboxNotFound, nil, "no such sandbox"), "error", "NotFound", "", ""},
		{"canceled", nil, false, fmt.Errorf("wait: %w", context.Canceled), "error", "Canceled", "", ""},
		{"deadline", nil, false, context.DeadlineExceeded, "error", "DeadlineExceeded", "", ""},
		{"plain error", nil, false, errors.New("boom"), "error", "Unknown", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, c, tpl, p := claimLabels(tc.sb, tc.warm, tc.err)
			if o != tc.outcome || c != tc.code || tpl != tc.template || p != tc.pool {
				t.Fatalf("claimLabels = %q %q %q %q, want %q %q %q %q", o, c, tpl, p, tc.outcome, tc.code, tc.template, tc.pool)
			}
		})
	}
}
