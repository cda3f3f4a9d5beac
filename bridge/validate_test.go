package bridge

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestCheckLifetime(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		ttl      *durationpb.Duration
		shutdown *timestamppb.Timestamp
		wantErr  string
	}{
		"neither":          {},
		"ttl":              {ttl: durationpb.New(time.Hour)},
		"shutdown":         {shutdown: timestamppb.New(now.Add(time.Hour))},
		"both":             {ttl: durationpb.New(time.Hour), shutdown: timestamppb.New(now.Add(time.Hour)), wantErr: "not both"},
		"zero ttl":         {ttl: durationpb.New(0), wantErr: "positive"},
		"huge ttl":         {ttl: durationpb.New(MaxTTL + time.Second), wantErr: "limit"},
		"invalid ttl":      {ttl: &durationpb.Duration{Seconds: 1, Nanos: -1}, wantErr: "ttl"},
		"shutdown now":     {shutdown: timestamppb.New(now), wantErr: "not in the future"},
		"shutdown too far": {shutdown: timestamppb.New(now.Add(MaxTTL + time.Hour)), wantErr: "away"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := checkLifetime(tc.ttl, tc.shutdown, now)
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

func TestPage(t *testing.T) {
	items := []string{"a", "b", "c", "d", "e"}
	id := func(s string) string { return s }
	var got []string
	tok := ""
	for {
		p, next, err := page(items, id, 2, tok)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p...)
		if next == "" {
			break
		}
		tok = next
	}
	if strings.Join(got, "") != "abcde" {
		t.Fatalf("pages joined = %v", got)
	}
	if _, _, err := page(items, id, 2, "garbage!"); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("forged token: %v", err)
	}
	// A token past a deleted item still continues after it.
	p, _, _ := page([]string{"a", "c"}, id, 5, encodePageToken("b"))
	if len(p) != 1 || p[0] != "c" {
		t.Fatalf("after deleted item: %v", p)
	}
}

// FuzzRequestValidation checks that the edge checks never panic and that
// whatever they accept is safe to use as a name, label, env var or token.
func FuzzRequestValidation(f *testing.F) {
	for _, s := range []string{"", "python", "a-b", "-a", "A", "a/b", "x\x00y", strings.Repeat("a", 70), "k=v", "after:zz"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if checkName("name", a, true) == nil && len(validation.IsDNS1123Label(a)) > 0 {
			t.Fatalf("accepted name %q that is not a DNS label", a)
		}
		if checkLabels("labels", map[string]string{a: b}) == nil &&
			(len(validation.IsQualifiedName(a)) > 0 || len(validation.IsValidLabelValue(b)) > 0) {
			t.Fatalf("accepted label %q=%q", a, b)
		}
		if checkEnv("env", map[string]string{a: b}) == nil && (!isEnvName(a) || strings.ContainsRune(b, 0)) {
			t.Fatalf("accepted env %q=%q", a, b)
		}
		if checkRequestID(a) == nil && (len(a) > MaxRequestIDLen || strings.ContainsAny(a, " \x00\n")) {
			t.Fatalf("accepted request id %q", a)
		}
		_, _ = decodePageToken(a)
		_, _ = parseSelector(a)
	})
}
