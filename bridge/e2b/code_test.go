package e2b

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func TestResultLine(t *testing.T) {
	got := resultLine(&sandpodv1.CodeResult{IsMainResult: true, Data: map[string][]byte{
		"text/plain":       []byte("42"),
		"image/png":        {0x89, 'P', 'N', 'G'},
		"application/json": []byte(`{"a": 1}`),
		"text/x-custom":    []byte("c"),
	}})
	want := map[string]any{
		"type": "result", "is_main_result": true, "text": "42", "png": "iVBORw==",
		"json": map[string]any{"a": float64(1)}, "extra": map[string]any{"text/x-custom": "c"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resultLine (-want +got):\n%s", diff)
	}
}

func TestLineBuffer(t *testing.T) {
	now := time.Unix(0, 7)
	out := func(s string) *sandpodv1.RunCodeResponse {
		return &sandpodv1.RunCodeResponse{Msg: &sandpodv1.RunCodeResponse_Stdout{Stdout: []byte(s)}}
	}
	errOut := &sandpodv1.RunCodeResponse{Msg: &sandpodv1.RunCodeResponse_Stderr{Stderr: []byte("e\n")}}
	done := &sandpodv1.RunCodeResponse{Msg: &sandpodv1.RunCodeResponse_Done{Done: &sandpodv1.CodeDone{ExecutionCount: 3}}}
	line := func(kind, text string) map[string]any {
		return map[string]any{"type": kind, "text": text, "timestamp": int64(7)}
	}
	var l lineBuffer
	var got []map[string]any
	result := &sandpodv1.RunCodeResponse{Msg: &sandpodv1.RunCodeResponse_Result{Result: &sandpodv1.CodeResult{
		IsMainResult: true, Data: map[string][]byte{"text/plain": []byte("42")}}}}
	// The rest of a line may come after a result (two pipes in the agent):
	// the line stays whole.
	for _, res := range []*sandpodv1.RunCodeResponse{out("hel"), out("lo"), result, out("\npart"), errOut, out("tail"), done} {
		got = append(got, l.add(res, now)...)
	}
	want := []map[string]any{
		resultLine(result.GetResult()),
		line("stdout", "hello\n"),
		line("stdout", "part"), // flushed by the stderr line
		line("stderr", "e\n"),
		line("stdout", "tail"), // flushed by the end
		{"type": "number_of_executions", "execution_count": int64(3)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}
