package bridge

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sandpod/sandpod/core/agent"
	"github.com/sandpod/sandpod/core/agentconn"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func TestCheckRunCode(t *testing.T) {
	cases := map[string]struct {
		req     *sandpodv1.RunCodeRequest
		wantErr string
	}{
		"plain":            {req: &sandpodv1.RunCodeRequest{Code: "1+1"}},
		"python named":     {req: &sandpodv1.RunCodeRequest{Code: "1", Language: "python", ContextId: "ctx-1"}},
		"at the limit":     {req: &sandpodv1.RunCodeRequest{Code: strings.Repeat("#", agent.MaxCodeBytes)}},
		"too large":        {req: &sandpodv1.RunCodeRequest{Code: strings.Repeat("#", agent.MaxCodeBytes+1)}, wantErr: "code: is 1048577 bytes"},
		"not utf-8":        {req: &sandpodv1.RunCodeRequest{Code: "\xff"}, wantErr: "UTF-8"},
		"other language":   {req: &sandpodv1.RunCodeRequest{Code: "1", Language: "javascript"}, wantErr: `language: "javascript" is not supported`},
		"bad context":      {req: &sandpodv1.RunCodeRequest{Code: "1", ContextId: "../x"}, wantErr: "context_id"},
		"negative timeout": {req: &sandpodv1.RunCodeRequest{Code: "1", Timeout: durationpb.New(-time.Second)}, wantErr: "timeout"},
		"huge timeout":     {req: &sandpodv1.RunCodeRequest{Code: "1", Timeout: durationpb.New(25 * time.Hour)}, wantErr: "timeout"},
		"day timeout":      {req: &sandpodv1.RunCodeRequest{Code: "1", Timeout: durationpb.New(24 * time.Hour)}},
		"reserved env":     {req: &sandpodv1.RunCodeRequest{Code: "1", Env: map[string]string{"SANDPOD_X": "1"}}, wantErr: "reserved"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := checkRunCode(tc.req)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want InvalidArgument mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestWithClaimEnv(t *testing.T) {
	got := withClaimEnv(agentconn.Endpoint{Env: map[string]string{"A": "claim", "B": "claim"}}, map[string]string{"B": "req"})
	if got["A"] != "claim" || got["B"] != "req" || len(got) != 2 {
		t.Fatalf("merged env: %v", got)
	}
}
