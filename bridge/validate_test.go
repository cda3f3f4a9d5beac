package bridge

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sandpod/sandpod/core/agent"
	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
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
	q := pageQuery("ListSandboxes", "", "team=rl", "false")
	var got []string
	tok := ""
	for {
		p, next, err := page(items, id, 2, q, tok)
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
	// A token past a deleted item still continues after it.
	p, _, _ := page([]string{"a", "c"}, id, 5, q, encodePageToken(q, "b"))
	if len(p) != 1 || p[0] != "c" {
		t.Fatalf("after deleted item: %v", p)
	}
	// "" and "default" are the same namespace.
	if _, _, err := page(items, id, 2, pageQuery("ListSandboxes", "default", "team=rl", "false"), encodePageToken(q, "b")); err != nil {
		t.Fatalf("token of namespace \"\" sent with \"default\": %v", err)
	}
}

func TestPageTokenRefused(t *testing.T) {
	q := pageQuery("ListSandboxes", "", "", "true")
	good := encodePageToken(q, "python-abc12")
	raw, _ := base64.RawURLEncoding.DecodeString(good)
	raw[0] ^= 1
	cases := map[string]struct{ query, token, want string }{
		"garbage":             {q, "garbage!", "not a token this server issued"},
		"too short":           {q, "AAAA", "not a token this server issued"},
		"old format":          {q, base64.RawURLEncoding.EncodeToString([]byte("after:python-abc12")), "for this request"},
		"tampered":            {q, base64.RawURLEncoding.EncodeToString(raw), "for this request"},
		"another method":      {pageQuery("ListTemplates", ""), good, "for this request"},
		"another namespace":   {pageQuery("ListSandboxes", "team-a", "", "true"), good, "for this request"},
		"another selector":    {pageQuery("ListSandboxes", "", "team=rl", "true"), good, "for this request"},
		"without pool filter": {pageQuery("ListSandboxes", "", "", "false"), good, "for this request"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := decodePageToken(tc.query, tc.token)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "page_token: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want InvalidArgument page_token mentioning %q", err, tc.want)
			}
		})
	}
	if last, err := decodePageToken(q, good); err != nil || last != "python-abc12" {
		t.Fatalf("good token: %q, %v", last, err)
	}
}

func TestEdgeChecks(t *testing.T) {
	big := func(n int) string { return strings.Repeat("x", n) }
	envOf := func(n, size int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("V%d", i)] = big(size)
		}
		return m
	}
	cases := map[string]struct {
		err  error
		want string // "" means accepted
	}{
		"label":                          {checkLabels("labels", map[string]string{"team": "rl", "example.com/run": "3"}), ""},
		"reserved label":                 {checkLabels("labels", map[string]string{"sandpod.dev/pool": "x"}), "labels: key \"sandpod.dev/pool\": keys under sandpod.dev/ are reserved"},
		"reserved claim label":           {checkLabels("labels", map[string]string{"sandpod.dev/claim": ""}), "reserved"},
		"lookalike label prefix":         {checkLabels("labels", map[string]string{"sandpod.dev.example/x": "y"}), ""},
		"long label key echoed short":    {checkLabels("labels", map[string]string{big(1 << 20): "v"}), "(1048576 bytes)"},
		"env at the kernel's limit":      {checkEnv("env", map[string]string{"A": big(MaxArgLen - 2)}), ""},
		"env over the kernel's limit":    {checkEnv("env", map[string]string{"A": big(MaxArgLen - 1)}), "env: A=value is 131072 bytes, the limit is 131071"},
		"env of 1 MiB in all":            {checkEnv("env", envOf(8, 100<<10)), ""},
		"env over 1 MiB in all":          {checkEnv("env", envOf(11, 100<<10)), "in all, the limit is 1048576"},
		"selector at the limit":          {selErr("a in (" + strings.Repeat("v,", (MaxSelectorLen-8)/2) + "v)"), ""},
		"selector over the limit":        {selErr("a in (" + strings.Repeat("v,", (MaxSelectorLen-8)/2+1) + "v)"), "label_selector: is 16386 bytes, the limit is 16384"},
		"bad long selector echoed short": {selErr(strings.Repeat("a", 5000) + "=b"), "no more than 63"},
		"name echoed short":              {checkName("name", big(5000), true), "(5000 bytes)"},
		"argv[0] empty":                  {checkExecStart(&sandpodv1.ExecStart{Argv: []string{"", "x"}}), "argv: argv[0] (the program) is empty"},
		"argument at the limit":          {checkExecStart(&sandpodv1.ExecStart{Argv: []string{"echo", big(MaxArgLen)}}), ""},
		"argument over the limit":        {checkExecStart(&sandpodv1.ExecStart{Argv: []string{"echo", big(MaxArgLen + 1)}}), "argv: argument 1 is 131072 bytes, the limit is 131071"},
		"shell over the limit":           {checkExecStart(&sandpodv1.ExecStart{Shell: big(MaxArgLen + 1)}), "shell: is 131072 bytes"},
		"working dir name too long":      {checkExecStart(&sandpodv1.ExecStart{Shell: "true", WorkingDir: big(256)}), "working_dir: a name in the path is 256 bytes long, the limit is 255"},
		"path name too long":             {checkPath("path", "a/"+big(256)), "path: a name in the path is 256 bytes long"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.want == "" {
				if tc.err != nil {
					t.Fatalf("refused: %v", tc.err)
				}
				return
			}
			if status.Code(tc.err) != codes.InvalidArgument || !strings.Contains(tc.err.Error(), tc.want) {
				t.Fatalf("got %v, want InvalidArgument mentioning %q", tc.err, tc.want)
			}
			if n := len(status.Convert(tc.err).Message()); n > 1024 {
				t.Fatalf("message of %d bytes: it echoes too much of the input", n)
			}
		})
	}
}

func selErr(s string) error {
	_, err := parseSelector(s)
	return err
}

// FuzzRequestValidation checks that the edge checks never panic and that
// whatever they accept is safe to use as a name, label, env var or token.
func FuzzRequestValidation(f *testing.F) {
	for _, s := range []string{"", "python", "a-b", "-a", "A", "a/b", "x\x00y", strings.Repeat("a", 70), "k=v", "after:zz", "sandpod.dev/pool", encodePageToken(pageQuery("ListSandboxes", ""), "python-x")} {
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
		q := pageQuery("ListSandboxes", b)
		if last, err := decodePageToken(q, a); err == nil && a != "" && encodePageToken(q, last) != a {
			t.Fatalf("accepted page token %q that this server would not have issued", a)
		}
		if _, err := decodePageToken(q, encodePageToken(q, a)); err != nil {
			t.Fatalf("refused its own page token for %q: %v", a, err)
		}
		if last, err := agent.DecodeListToken(b, a); err == nil && a != "" && agent.EncodeListToken(b, last) != a {
			t.Fatalf("accepted list_files page token %q that this server would not have issued", a)
		}
		if _, err := agent.DecodeListToken(b, agent.EncodeListToken(b, a)); a != "" && err != nil {
			t.Fatalf("refused its own list_files page token for %q: %v", a, err)
		}
		if a != "" && agent.CheckListToken(agent.EncodeListToken(b, a)) != nil {
			t.Fatalf("the bridge refused a list_files page token the agent issues for %q", a)
		}
		_, selErr := parseSelector(a)
		_, tokErr := decodePageToken(q, a)
		// Every refusal carries a reason and names its field (ErrorInfo).
		for _, err := range []error{
			checkName("name", a, true), checkLabels("labels", map[string]string{a: b}), checkEnv("env", map[string]string{a: b}),
			checkRequestID(a), selErr, tokErr,
			checkExecStart(&sandpodv1.ExecStart{Argv: []string{a}, WorkingDir: b, Env: map[string]string{a: b}}),
		} {
			if err != nil && (errinfo.Reason(err) == "" || errinfo.Metadata(err)["field"] == "") {
				t.Fatalf("refusal without a reason or field: %v", err)
			}
		}
	})
}

func TestNewPage(t *testing.T) {
	q := pageQuery("ListSnapshots", "team-a", "app=x")
	tok := encodePageToken(q, "b")
	cases := map[string]struct {
		ns      string
		size    int32
		token   string
		filters []string
		want    pageRequest
		wantErr string // in the InvalidArgument message
	}{
		"defaults":                     {"team-a", 0, "", []string{"app=x"}, pageRequest{size: DefaultPageSize, query: q}, ""},
		"a size and a token":           {"team-a", 2, tok, []string{"app=x"}, pageRequest{size: 2, query: q, token: tok}, ""},
		"the largest size":             {"team-a", MaxPageSize, "", []string{"app=x"}, pageRequest{size: MaxPageSize, query: q}, ""},
		"a negative size":              {"team-a", -1, "", []string{"app=x"}, pageRequest{}, "page_size: must be between 0 and"},
		"too large":                    {"team-a", MaxPageSize + 1, "", []string{"app=x"}, pageRequest{}, "page_size: must be between 0 and"},
		"a token of another filter":    {"team-a", 2, tok, []string{"app=y"}, pageRequest{}, "page_token: "},
		"a token of another namespace": {"team-b", 2, tok, []string{"app=x"}, pageRequest{}, "page_token: "},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := newPage("ListSnapshots", tc.ns, tc.size, tc.token, tc.filters...)
			if tc.wantErr != "" {
				if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("newPage: %v, want InvalidArgument with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("newPage = %+v, %v; want %+v", got, err, tc.want)
			}
			items, next, err := pageOf(got, []string{"a", "b", "c"}, func(s string) string { return s })
			if err != nil || len(items) == 0 || (tc.token != "" && items[0] != "c") {
				t.Fatalf("pageOf: %v, %q, %v", items, next, err)
			}
		})
	}
}
