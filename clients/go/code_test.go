package sandpod

import (
	"errors"
	"testing"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func TestSplitUTF8KeepsCharactersWhole(t *testing.T) {
	e := []byte("é€😀") // 2, 3 and 4 bytes
	tests := []struct {
		held, chunk []byte
		text        string
		rest        int
	}{
		{nil, []byte("abc"), "abc", 0},
		{nil, e[:1], "", 1},
		{e[:1], e[1:2], "é", 0},
		{nil, e[:4], "é", 2},
		{e[2:4], e[4:], "€😀", 0},
		{nil, e[:8], "é€", 3},
		{nil, []byte{0xff}, "\xff", 0}, // invalid stays as it is
	}
	for i, tt := range tests {
		text, rest := splitUTF8(append([]byte(nil), tt.held...), tt.chunk)
		if text != tt.text || len(rest) != tt.rest {
			t.Errorf("%d: got %q rest %d; want %q rest %d", i, text, len(rest), tt.text, tt.rest)
		}
	}
}

func TestExecutionDecoderAndErrors(t *testing.T) {
	var seen []string
	d := executionDecoder{cfg: &codeConfig{onStdout: func(s string) { seen = append(seen, s) }}}
	msgs := []*pb.RunCodeResponse{
		{Msg: &pb.RunCodeResponse_Stdout{Stdout: []byte("h\xc3")}},
		{Msg: &pb.RunCodeResponse_Stdout{Stdout: []byte("\xa9\n")}},
		{Msg: &pb.RunCodeResponse_Result{Result: &pb.CodeResult{Data: map[string][]byte{"text/plain": []byte("3")}, IsMainResult: true}}},
		{Msg: &pb.RunCodeResponse_Error{Error: &pb.CodeError{Name: "ContextDied", Value: "gone"}}},
		{Msg: &pb.RunCodeResponse_Done{Done: &pb.CodeDone{ContextId: "default", ExecutionCount: 2, ContextLost: true}}},
	}
	for i, m := range msgs {
		if last := d.feed(m); last != (i == len(msgs)-1) {
			t.Fatalf("message %d: last=%v", i, last)
		}
	}
	ex := d.ex
	if ex.Stdout != "hé\n" || ex.Text() != "3" || ex.ContextID != "default" || len(seen) != 2 || seen[0] != "h" {
		t.Fatalf("execution: %+v, callbacks %q", ex, seen)
	}
	err := ex.Err()
	if !errors.Is(err, ErrCodeFailed) || !errors.Is(err, ErrCodeContextLost) {
		t.Fatalf("Err: %v", err)
	}
	if kindOf(5 /* NotFound */, reasonCodeContextNotFound) != ErrCodeContextNotFound || !errors.Is(ErrCodeContextNotFound, ErrNotFound) {
		t.Fatal("CODE_CONTEXT_NOT_FOUND does not map to ErrCodeContextNotFound")
	}
}
