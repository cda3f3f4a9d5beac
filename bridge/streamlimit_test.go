package bridge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
)

func TestAdmitStream(t *testing.T) {
	cases := map[string]struct {
		open, limit int
		want        bool
	}{
		"none open":               {0, 3, true},
		"one below":               {2, 3, true},
		"at the limit":            {3, 3, false},
		"above (a lowered limit)": {5, 3, false},
		"no limit":                {1 << 20, 0, true},
		"negative: no limit":      {7, -1, true},
		"limit of one, free":      {0, 1, true},
		"limit of one, held":      {1, 1, false},
	}
	for name, c := range cases {
		if got := admitStream(c.open, c.limit); got != c.want {
			t.Errorf("%s: admitStream(%d, %d) = %v, want %v", name, c.open, c.limit, got, c.want)
		}
	}
}

// The limiter counts per caller, refuses past the limit with an error a
// person can act on, and gives a stream back once however often release
// is called.
func TestStreamLimiterCountsPerCaller(t *testing.T) {
	l := NewStreamLimiter(2, "sandpod serve/bridge")
	r1, err := l.Acquire("token #1")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := l.Acquire("token #1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Acquire("token #1")
	if status.Code(err) != codes.ResourceExhausted || errinfo.Reason(err) != errinfo.ReasonStreamLimit {
		t.Fatalf("third stream: %v, want RESOURCE_EXHAUSTED STREAM_LIMIT", err)
	}
	for _, part := range []string{"token #1", "2", "sandpod serve/bridge --max-streams-per-caller"} {
		if !strings.Contains(status.Convert(err).Message(), part) {
			t.Errorf("refusal %q does not name %q", status.Convert(err).Message(), part)
		}
	}
	if _, err := l.Acquire("token #2"); err != nil {
		t.Errorf("another caller refused: %v", err)
	}
	r1()
	r1() // twice: counted once
	if got := l.Open("token #1"); got != 1 {
		t.Errorf("after one release: %d open, want 1", got)
	}
	if _, err := l.Acquire("token #1"); err != nil {
		t.Errorf("after a release: %v", err)
	}
	r2()
	_, err = l.Acquire(anonymous)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = l.Acquire(anonymous)
	_, err = l.Acquire(anonymous)
	if !strings.Contains(status.Convert(err).Message(), "without a token") {
		t.Errorf("anonymous refusal: %v", err)
	}
}

func TestStreamLimiterForgetsIdleCallers(t *testing.T) {
	l := NewStreamLimiter(0, "x")
	var releases []func()
	for range 100 {
		r, err := l.Acquire("c")
		if err != nil {
			t.Fatalf("no limit refused: %v", err)
		}
		releases = append(releases, r)
	}
	for _, r := range releases {
		r()
	}
	if len(l.open) != 0 {
		t.Errorf("counts left after every release: %v", l.open)
	}
	var nl *StreamLimiter
	if r, err := nl.Acquire("c"); err != nil || r == nil {
		t.Errorf("nil limiter: %v", err)
	}
}

// ForTokens names callers as the gRPC server does: by their token's
// caller, anonymous without authenticators, and refuses unknown tokens.
func TestForTokens(t *testing.T) {
	ctx := context.Background()
	l := NewStreamLimiter(1, "x")
	check := l.ForTokens([]Authenticator{StaticTokens{{Secret: "a"}, {Secret: "b"}}})
	if _, err := check(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := check(ctx, "a"); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("second stream of token a: %v", err)
	}
	if l.Open("token #1") != 1 {
		t.Errorf("token a not counted as its caller, token #1: %v", l.open)
	}
	if _, err := check(ctx, "b"); err != nil {
		t.Errorf("token b: %v", err)
	}
	if _, err := check(ctx, "nope"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("unknown token: %v", err)
	}
	open := l.ForTokens(nil)
	if _, err := open(ctx, "anything"); err != nil {
		t.Fatal(err)
	}
	if l.Open(anonymous) != 1 {
		t.Errorf("without authenticators the caller is anonymous: %v", l.open)
	}
}

func TestLimitHTTP(t *testing.T) {
	l := NewStreamLimiter(1, "sandpod mcp")
	hold, _ := l.Acquire("u")
	h := l.LimitHTTP(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }),
		func(r *http.Request) string { return r.Header.Get("U") })
	serve := func(user string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("U", user)
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := serve("u"); rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "sandpod mcp --max-streams-per-caller") {
		t.Errorf("over the limit: %d %q", rec.Code, rec.Body.String())
	}
	if rec := serve("v"); rec.Code != http.StatusNoContent {
		t.Errorf("another caller: %d", rec.Code)
	}
	hold()
	if rec := serve("u"); rec.Code != http.StatusNoContent {
		t.Errorf("after release: %d", rec.Code)
	}
	if l.Open("u") != 0 {
		t.Errorf("request ended but still counted")
	}
}
