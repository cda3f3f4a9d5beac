package integration

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// badCase is one bad request: the call, the status code it must get, and a
// part of the message that names what was wrong (the field, or the value the
// caller sent), so a person can act on it. A few cases expect codes.OK: bad
// input the server must survive and handle (a stdin flood, a symbolic link
// that is stat'ed or removed rather than followed); they check the outcome
// themselves.
type badCase struct {
	call     func(t *testing.T) error
	code     codes.Code
	mentions string
}

// badInputEnv is what the cases act on.
type badInputEnv struct {
	c sandpodv1.SandboxServiceClient
	// sb is a running, claimed sandbox holding the fixtures of badInputFixtures.
	sb string
	// tokens are next_page_tokens of real first pages, by query.
	tokens map[string]string
}

// badInputConfig adds a second template and pool to the default ones, so
// that every list has a second page (and so a real page token).
var badInputConfig = defaultConfig + `---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: spare
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: docker.io/local/python:3
---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxWarmPool
metadata:
  name: spare
spec:
  templateRef:
    name: spare
  replicas: 0
`

// badInputFixtures are made in the sandbox before the table runs: symbolic
// links (to a file, for stat and remove), a link loop, a dangling link, a
// non-empty directory and a plain file. Links to absolute paths are no bad
// input: they resolve in the sandbox's own file system (files_test.go).
const badInputFixtures = `set -e
for op in stat remove; do ln -s /etc/passwd link-$op; done
ln -s loop loop
ln -s nowhere dangling
mkdir -p full/sub
printf data > plain.txt`

// TestBadInput sends each kind of bad argument to every RPC and checks the
// status code and that the message names the field; then that the server is
// still healthy and that no sandbox was made or lost on the way.
func TestBadInput(t *testing.T) {
	srv := startServer(t, badInputConfig)
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	sh(t, c, sb.Name, badInputFixtures)
	if _, err := c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "spare", Name: "by-create", RequestId: "made-by-create"}); err != nil {
		t.Fatal(err)
	}
	e := &badInputEnv{c: c, sb: sb.Name, tokens: pageTokens(t, c)}

	waitPoolSettled(t, c, "python", 2)
	before := inventory(t, c)

	cases := map[string]badCase{}
	for _, group := range []map[string]badCase{lifecycleCases(e), listCases(e), poolCases(e), execCases(e), fileCases(e)} {
		for name, tc := range group {
			if _, dup := cases[name]; dup {
				t.Fatalf("two cases named %q", name)
			}
			cases[name] = tc
		}
	}
	t.Logf("%d bad-input cases", len(cases))
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		tc := cases[name]
		t.Run(name, func(t *testing.T) {
			err := tc.call(t)
			wantBadInput(t, err, tc.code, tc.mentions)
			wantBadInputReason(t, name, err)
		})
	}

	// The server is still healthy and serves normal calls.
	h, err := healthpb.NewHealthClient(srv.Conn()).Check(ctx(t), &healthpb.HealthCheckRequest{Service: sandpodv1.SandboxService_ServiceDesc.ServiceName})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health after the bad input: %v, %v", h, err)
	}
	if r := sh(t, c, sb.Name, "echo still here"); r.stdout != "still here\n" || r.exit.GetExitCode() != 0 {
		t.Fatalf("exec after the bad input: %+v", r)
	}
	if got, err := readFile(t, c, sb.Name, "plain.txt"); err != nil || string(got) != "data" {
		t.Fatalf("read after the bad input: %q, %v", got, err)
	}
	// Nothing above made, lost or replaced a sandbox (pool members included).
	waitPoolSettled(t, c, "python", 2)
	if after := inventory(t, c); !slices.Equal(before, after) {
		t.Fatalf("sandboxes before the bad input:\n  %v\nafter:\n  %v", before, after)
	}
}

// wantBadInput checks the code and that the message mentions what was
// wrong, and is short enough to read: it must not echo a huge input back.
func wantBadInput(t *testing.T, err error, code codes.Code, mentions string) {
	t.Helper()
	msg := status.Convert(err).Message()
	short := msg
	if len(short) > 300 {
		short = short[:300] + fmt.Sprintf("… (%d bytes)", len(msg))
	}
	if status.Code(err) != code {
		t.Fatalf("got %s %q, want code %s", status.Code(err), short, code)
	}
	if !strings.Contains(msg, mentions) {
		t.Fatalf("message %q does not mention %q", short, mentions)
	}
	if len(msg) > 1024 {
		t.Fatalf("message of %d bytes echoes too much of the input: %q", len(msg), short)
	}
}

// inventory lists every sandbox (pool members too) of the namespaces the
// cases touch, as namespace/name/uid.
func inventory(t *testing.T, c sandpodv1.SandboxServiceClient) []string {
	t.Helper()
	var out []string
	for _, ns := range []string{"", "team-a"} {
		resp, err := c.ListSandboxes(ctx(t), &sandpodv1.ListSandboxesRequest{Namespace: ns, IncludePoolMembers: true, PageSize: 1000})
		if err != nil {
			t.Fatalf("inventory: %v", err)
		}
		for _, sb := range resp.GetSandboxes() {
			out = append(out, sb.GetNamespace()+"/"+sb.GetName()+"/"+sb.GetUid())
		}
	}
	slices.Sort(out)
	return out
}

// waitPoolSettled waits until a pool has its ready members and none starting.
func waitPoolSettled(t *testing.T, c sandpodv1.SandboxServiceClient, pool string, ready int32) {
	t.Helper()
	eventually(t, "pool "+pool+" settled", func() bool {
		p, err := c.GetWarmPool(ctx(t), &sandpodv1.GetWarmPoolRequest{Name: pool})
		return err == nil && p.GetWarmPool().GetReadyReplicas() == ready && p.GetWarmPool().GetPendingReplicas() == 0
	})
}

// pageTokens collects the next_page_token of a real first page of each list.
func pageTokens(t *testing.T, c sandpodv1.SandboxServiceClient) map[string]string {
	t.Helper()
	sbs, err := c.ListSandboxes(ctx(t), &sandpodv1.ListSandboxesRequest{IncludePoolMembers: true, PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	tpls, err := c.ListTemplates(ctx(t), &sandpodv1.ListTemplatesRequest{PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	pools, err := c.ListWarmPools(ctx(t), &sandpodv1.ListWarmPoolsRequest{PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{"sandboxes": sbs.GetNextPageToken(), "templates": tpls.GetNextPageToken(), "pools": pools.GetNextPageToken()}
	for q, tok := range tokens {
		if tok == "" {
			t.Fatalf("no second page of %s to take a token from", q)
		}
	}
	return tokens
}

// tamper changes the last byte a token carries, as a client poking at an
// opaque token would.
func tamper(tok string) string {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) == 0 {
		return tok + "x"
	}
	b[len(b)-1] ^= 1
	return base64.RawURLEncoding.EncodeToString(b)
}

func manyLabels(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = "v"
	}
	return m
}

func manyEnv(n, size int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("V%d", i)] = strings.Repeat("x", size)
	}
	return m
}

func lifecycleCases(e *badInputEnv) map[string]badCase {
	c := e.c
	create := func(r *sandpodv1.CreateSandboxRequest) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := c.CreateSandbox(ctx(t), r)
			return err
		}
	}
	py := func(r *sandpodv1.CreateSandboxRequest) func(*testing.T) error {
		r.Template = "python"
		return create(r)
	}
	claimAsIs := func(r *sandpodv1.ClaimSandboxRequest) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := c.ClaimSandbox(ctx(t), r)
			return err
		}
	}
	claimPy := func(r *sandpodv1.ClaimSandboxRequest) func(*testing.T) error {
		if r.Template == "" {
			r.Template = "python"
		}
		return claimAsIs(r)
	}
	get := func(name, ns string) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := c.GetSandbox(ctx(t), &sandpodv1.GetSandboxRequest{Name: name, Namespace: ns})
			return err
		}
	}
	suspend := func(name, ns string) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := c.SuspendSandbox(ctx(t), &sandpodv1.SuspendSandboxRequest{Name: name, Namespace: ns})
			return err
		}
	}
	resume := func(name, ns string) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := c.ResumeSandbox(ctx(t), &sandpodv1.ResumeSandboxRequest{Name: name, Namespace: ns})
			return err
		}
	}
	extend := func(r *sandpodv1.ExtendSandboxRequest) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := c.ExtendSandbox(ctx(t), r)
			return err
		}
	}
	del := func(name, ns string) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := c.DeleteSandbox(ctx(t), &sandpodv1.DeleteSandboxRequest{Name: name, Namespace: ns})
			return err
		}
	}
	long := strings.Repeat("a", 64)
	past := timestamppb.New(time.Now().Add(-time.Hour))
	soon := timestamppb.New(time.Now().Add(2 * time.Hour))
	tooFar := timestamppb.New(time.Now().Add(400 * 24 * time.Hour))
	hour := durationpb.New(time.Hour)
	sb := e.sb
	ia, nf := codes.InvalidArgument, codes.NotFound
	return map[string]badCase{
		// CreateSandbox: names and namespaces.
		"create: no template":                   {create(&sandpodv1.CreateSandboxRequest{}), ia, "template"},
		"create: unknown template":              {create(&sandpodv1.CreateSandboxRequest{Template: "nope"}), nf, "nope"},
		"create: uppercase template":            {create(&sandpodv1.CreateSandboxRequest{Template: "Python"}), ia, "template"},
		"create: template too long":             {create(&sandpodv1.CreateSandboxRequest{Template: long}), ia, "template"},
		"create: uppercase name":                {py(&sandpodv1.CreateSandboxRequest{Name: "Bad"}), ia, "name"},
		"create: name too long":                 {py(&sandpodv1.CreateSandboxRequest{Name: long}), ia, "name"},
		"create: name with dots":                {py(&sandpodv1.CreateSandboxRequest{Name: "a.b"}), ia, "name"},
		"create: unicode name":                  {py(&sandpodv1.CreateSandboxRequest{Name: "sändbox"}), ia, "name"},
		"create: name starts with '-'":          {py(&sandpodv1.CreateSandboxRequest{Name: "-a"}), ia, "name"},
		"create: existing name":                 {py(&sandpodv1.CreateSandboxRequest{Name: sb}), codes.AlreadyExists, sb},
		"create: bad namespace":                 {py(&sandpodv1.CreateSandboxRequest{Namespace: "a/b"}), ia, "namespace"},
		"create: uppercase namespace":           {py(&sandpodv1.CreateSandboxRequest{Namespace: "Team"}), ia, "namespace"},
		"create: namespace too long":            {py(&sandpodv1.CreateSandboxRequest{Namespace: long}), ia, "namespace"},
		"create: template not in the namespace": {py(&sandpodv1.CreateSandboxRequest{Namespace: "team-a"}), nf, "team-a"},
		// CreateSandbox: lifetime.
		"create: negative ttl":                   {py(&sandpodv1.CreateSandboxRequest{Ttl: durationpb.New(-time.Second)}), ia, "ttl"},
		"create: zero ttl":                       {py(&sandpodv1.CreateSandboxRequest{Ttl: durationpb.New(0)}), ia, "ttl"},
		"create: ttl beyond a year":              {py(&sandpodv1.CreateSandboxRequest{Ttl: durationpb.New(400 * 24 * time.Hour)}), ia, "ttl"},
		"create: ttl beyond the proto range":     {py(&sandpodv1.CreateSandboxRequest{Ttl: &durationpb.Duration{Seconds: 1 << 62}}), ia, "ttl"},
		"create: ttl with bad nanos":             {py(&sandpodv1.CreateSandboxRequest{Ttl: &durationpb.Duration{Seconds: 60, Nanos: -1}}), ia, "ttl"},
		"create: shutdown time in the past":      {py(&sandpodv1.CreateSandboxRequest{ShutdownTime: past}), ia, "shutdown_time"},
		"create: shutdown time beyond a year":    {py(&sandpodv1.CreateSandboxRequest{ShutdownTime: tooFar}), ia, "shutdown_time"},
		"create: shutdown time beyond year 9999": {py(&sandpodv1.CreateSandboxRequest{ShutdownTime: &timestamppb.Timestamp{Seconds: 1 << 40}}), ia, "shutdown_time"},
		"create: ttl and shutdown time":          {py(&sandpodv1.CreateSandboxRequest{Ttl: hour, ShutdownTime: soon}), ia, "ttl"},
		"create: unknown shutdown policy":        {py(&sandpodv1.CreateSandboxRequest{ShutdownPolicy: 42}), ia, "shutdown_policy"},
		"create: negative shutdown policy":       {py(&sandpodv1.CreateSandboxRequest{ShutdownPolicy: -1}), ia, "shutdown_policy"},
		// CreateSandbox: labels.
		"create: bad label key":         {py(&sandpodv1.CreateSandboxRequest{Labels: map[string]string{"bad key": "v"}}), ia, "labels"},
		"create: bad label value":       {py(&sandpodv1.CreateSandboxRequest{Labels: map[string]string{"k": "spaces are bad"}}), ia, "labels"},
		"create: label key too long":    {py(&sandpodv1.CreateSandboxRequest{Labels: map[string]string{long: "v"}}), ia, "labels"},
		"create: label value too long":  {py(&sandpodv1.CreateSandboxRequest{Labels: map[string]string{"k": long}}), ia, "labels"},
		"create: unicode label key":     {py(&sandpodv1.CreateSandboxRequest{Labels: map[string]string{"tëam": "rl"}}), ia, "labels"},
		"create: empty label key":       {py(&sandpodv1.CreateSandboxRequest{Labels: map[string]string{"": "v"}}), ia, "labels"},
		"create: too many labels":       {py(&sandpodv1.CreateSandboxRequest{Labels: manyLabels(65)}), ia, "labels"},
		"create: reserved label prefix": {py(&sandpodv1.CreateSandboxRequest{Labels: map[string]string{"sandpod.dev/pool": "python"}}), ia, "labels"},
		// CreateSandbox: env.
		"create: bad env name":           {py(&sandpodv1.CreateSandboxRequest{Env: map[string]string{"1X": "v"}}), ia, "env"},
		"create: empty env name":         {py(&sandpodv1.CreateSandboxRequest{Env: map[string]string{"": "v"}}), ia, "env"},
		"create: env name with '='":      {py(&sandpodv1.CreateSandboxRequest{Env: map[string]string{"A=B": "v"}}), ia, "env"},
		"create: NUL in env name":        {py(&sandpodv1.CreateSandboxRequest{Env: map[string]string{"A\x00B": "v"}}), ia, "env"},
		"create: env name too long":      {py(&sandpodv1.CreateSandboxRequest{Env: map[string]string{strings.Repeat("N", 257): "v"}}), ia, "env"},
		"create: reserved env name":      {py(&sandpodv1.CreateSandboxRequest{Env: map[string]string{"SANDPOD_AGENT_SECRET": "x"}}), ia, "reserved"},
		"create: NUL in env value":       {py(&sandpodv1.CreateSandboxRequest{Env: map[string]string{"A": "x\x00y"}}), ia, "NUL"},
		"create: too many env variables": {py(&sandpodv1.CreateSandboxRequest{Env: manyEnv(257, 1)}), ia, "env"},
		"create: env value over 128 KiB": {py(&sandpodv1.CreateSandboxRequest{Env: map[string]string{"A": strings.Repeat("x", 128<<10+1)}}), ia, "env"},
		// An env variable the kernel cannot pass to a program (NAME=value
		// and its NUL over 128 KiB) would make every exec fail.
		"create: env variable over the kernel's limit": {py(&sandpodv1.CreateSandboxRequest{Env: map[string]string{"LONG_NAME": strings.Repeat("x", 128<<10-4)}}), ia, "env"},
		// Nor can it pass more than about 2 MiB of arguments and environment.
		"create: env over 1 MiB in all": {py(&sandpodv1.CreateSandboxRequest{Env: manyEnv(12, 100<<10)}), ia, "env"},
		// CreateSandbox: request id and size.
		"create: request id with spaces":    {py(&sandpodv1.CreateSandboxRequest{RequestId: "a b"}), ia, "request_id"},
		"create: request id too long":       {py(&sandpodv1.CreateSandboxRequest{RequestId: strings.Repeat("r", 200)}), ia, "request_id"},
		"create: unicode request id":        {py(&sandpodv1.CreateSandboxRequest{RequestId: "réq-1"}), ia, "request_id"},
		"create: request id with a newline": {py(&sandpodv1.CreateSandboxRequest{RequestId: "r\n1"}), ia, "request_id"},
		"create: message over 8 MiB":        {py(&sandpodv1.CreateSandboxRequest{Env: map[string]string{"BIG": strings.Repeat("x", 9<<20)}}), codes.ResourceExhausted, "larger than max"},

		// ClaimSandbox.
		"claim: no template":                   {claimAsIs(&sandpodv1.ClaimSandboxRequest{}), ia, "template"},
		"claim: unknown template":              {claimPy(&sandpodv1.ClaimSandboxRequest{Template: "missing"}), nf, "missing"},
		"claim: bad template name":             {claimPy(&sandpodv1.ClaimSandboxRequest{Template: "../x"}), ia, "template"},
		"claim: template not in the namespace": {claimPy(&sandpodv1.ClaimSandboxRequest{Namespace: "team-a"}), nf, "team-a"},
		"claim: bad namespace":                 {claimPy(&sandpodv1.ClaimSandboxRequest{Namespace: "team_a"}), ia, "namespace"},
		"claim: negative ttl":                  {claimPy(&sandpodv1.ClaimSandboxRequest{Ttl: durationpb.New(-time.Minute)}), ia, "ttl"},
		"claim: zero ttl":                      {claimPy(&sandpodv1.ClaimSandboxRequest{Ttl: durationpb.New(0)}), ia, "ttl"},
		"claim: shutdown time in the past":     {claimPy(&sandpodv1.ClaimSandboxRequest{ShutdownTime: past}), ia, "shutdown_time"},
		"claim: ttl and shutdown time":         {claimPy(&sandpodv1.ClaimSandboxRequest{Ttl: hour, ShutdownTime: soon}), ia, "ttl"},
		"claim: bad label":                     {claimPy(&sandpodv1.ClaimSandboxRequest{Labels: map[string]string{"a/b/c": "v"}}), ia, "labels"},
		"claim: reserved label prefix":         {claimPy(&sandpodv1.ClaimSandboxRequest{Labels: map[string]string{"sandpod.dev/claim": "x"}}), ia, "labels"},
		"claim: bad env name":                  {claimPy(&sandpodv1.ClaimSandboxRequest{Env: map[string]string{"A-B": "v"}}), ia, "env"},
		"claim: reserved env name":             {claimPy(&sandpodv1.ClaimSandboxRequest{Env: map[string]string{"SANDPOD_X": "v"}}), ia, "env"},
		"claim: unknown shutdown policy":       {claimPy(&sandpodv1.ClaimSandboxRequest{ShutdownPolicy: 7}), ia, "shutdown_policy"},
		"claim: bad request id":                {claimPy(&sandpodv1.ClaimSandboxRequest{RequestId: "tab\there"}), ia, "request_id"},
		"claim: request id of a create":        {claimPy(&sandpodv1.ClaimSandboxRequest{RequestId: "made-by-create"}), ia, "request_id"},

		// GetSandbox.
		"get: missing":           {get("ghost", ""), nf, "ghost"},
		"get: empty name":        {get("", ""), ia, "name"},
		"get: uppercase name":    {get("Ghost", ""), ia, "name"},
		"get: name with dots":    {get("a.b", ""), ia, "name"},
		"get: name too long":     {get(long, ""), ia, "name"},
		"get: bad namespace":     {get(sb, "a b"), ia, "namespace"},
		"get: another namespace": {get(sb, "team-a"), nf, "team-a"},

		// SuspendSandbox / ResumeSandbox.
		"suspend: missing":       {suspend("ghost", ""), nf, "ghost"},
		"suspend: empty name":    {suspend("", ""), ia, "name"},
		"suspend: unicode name":  {suspend("ñame", ""), ia, "name"},
		"suspend: bad namespace": {suspend(sb, "-ns"), ia, "namespace"},
		"resume: missing":        {resume("ghost", ""), nf, "ghost"},
		"resume: empty name":     {resume("", ""), ia, "name"},
		"resume: name too long":  {resume(long, ""), ia, "name"},
		"resume: bad namespace":  {resume(sb, "NS"), ia, "namespace"},

		// ExtendSandbox.
		"extend: nothing given":               {extend(&sandpodv1.ExtendSandboxRequest{Name: sb}), ia, "ttl"},
		"extend: into the past (time)":        {extend(&sandpodv1.ExtendSandboxRequest{Name: sb, ShutdownTime: past}), ia, "shutdown_time"},
		"extend: into the past (ttl)":         {extend(&sandpodv1.ExtendSandboxRequest{Name: sb, Ttl: durationpb.New(-time.Hour)}), ia, "ttl"},
		"extend: zero ttl":                    {extend(&sandpodv1.ExtendSandboxRequest{Name: sb, Ttl: durationpb.New(0)}), ia, "ttl"},
		"extend: ttl beyond a year":           {extend(&sandpodv1.ExtendSandboxRequest{Name: sb, Ttl: durationpb.New(367 * 24 * time.Hour)}), ia, "ttl"},
		"extend: shutdown time beyond a year": {extend(&sandpodv1.ExtendSandboxRequest{Name: sb, ShutdownTime: tooFar}), ia, "shutdown_time"},
		"extend: ttl and shutdown time":       {extend(&sandpodv1.ExtendSandboxRequest{Name: sb, Ttl: hour, ShutdownTime: soon}), ia, "ttl"},
		"extend: missing":                     {extend(&sandpodv1.ExtendSandboxRequest{Name: "ghost", Ttl: hour}), nf, "ghost"},
		"extend: empty name":                  {extend(&sandpodv1.ExtendSandboxRequest{Ttl: hour}), ia, "name"},

		// DeleteSandbox.
		"delete: missing":           {del("ghost", ""), nf, "ghost"},
		"delete: empty name":        {del("", ""), ia, "name"},
		"delete: name with dots":    {del("x.y", ""), ia, "name"},
		"delete: bad namespace":     {del(sb, "a.b"), ia, "namespace"},
		"delete: another namespace": {del(sb, "team-a"), nf, "team-a"},
	}
}

func listCases(e *badInputEnv) map[string]badCase {
	c := e.c
	list := func(r *sandpodv1.ListSandboxesRequest) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := c.ListSandboxes(ctx(t), r)
			return err
		}
	}
	watch := func(r *sandpodv1.WatchSandboxesRequest) func(*testing.T) error {
		return func(t *testing.T) error {
			s, err := c.WatchSandboxes(ctx(t), r)
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		}
	}
	longSelector := "a in (" + strings.Repeat("v,", 10000) + "v)"
	tok := e.tokens["sandboxes"]
	ia := codes.InvalidArgument
	forged := base64.RawURLEncoding.EncodeToString([]byte("after:zzz"))
	return map[string]badCase{
		"list: bad namespace":              {list(&sandpodv1.ListSandboxesRequest{Namespace: "Team"}), ia, "namespace"},
		"list: bad selector":               {list(&sandpodv1.ListSandboxesRequest{LabelSelector: "a in (b"}), ia, "label_selector"},
		"list: selector with a bad key":    {list(&sandpodv1.ListSandboxesRequest{LabelSelector: "bad key=v"}), ia, "label_selector"},
		"list: selector value too long":    {list(&sandpodv1.ListSandboxesRequest{LabelSelector: "a=" + strings.Repeat("v", 64)}), ia, "label_selector"},
		"list: selector without a key":     {list(&sandpodv1.ListSandboxesRequest{LabelSelector: "=v"}), ia, "label_selector"},
		"list: selector too long":          {list(&sandpodv1.ListSandboxesRequest{LabelSelector: longSelector}), ia, "label_selector"},
		"list: page size too big":          {list(&sandpodv1.ListSandboxesRequest{PageSize: 5000}), ia, "page_size"},
		"list: negative page size":         {list(&sandpodv1.ListSandboxesRequest{PageSize: -1}), ia, "page_size"},
		"list: garbage page token":         {list(&sandpodv1.ListSandboxesRequest{PageToken: "not-a-token"}), ia, "page_token"},
		"list: forged page token":          {list(&sandpodv1.ListSandboxesRequest{PageToken: forged, IncludePoolMembers: true}), ia, "page_token"},
		"list: tampered page token":        {list(&sandpodv1.ListSandboxesRequest{PageToken: tamper(tok), IncludePoolMembers: true}), ia, "page_token"},
		"list: token of another selector":  {list(&sandpodv1.ListSandboxesRequest{PageToken: tok, IncludePoolMembers: true, LabelSelector: "team=rl"}), ia, "page_token"},
		"list: token of another namespace": {list(&sandpodv1.ListSandboxesRequest{PageToken: tok, IncludePoolMembers: true, Namespace: "team-a"}), ia, "page_token"},
		"list: token without the pool":     {list(&sandpodv1.ListSandboxesRequest{PageToken: tok}), ia, "page_token"},
		"list: token of ListTemplates":     {list(&sandpodv1.ListSandboxesRequest{PageToken: e.tokens["templates"], IncludePoolMembers: true}), ia, "page_token"},

		"watch: bad selector":       {watch(&sandpodv1.WatchSandboxesRequest{LabelSelector: "a,,b"}), ia, "label_selector"},
		"watch: selector too long":  {watch(&sandpodv1.WatchSandboxesRequest{LabelSelector: longSelector}), ia, "label_selector"},
		"watch: bad namespace":      {watch(&sandpodv1.WatchSandboxesRequest{Namespace: "ns/x"}), ia, "namespace"},
		"watch: namespace too long": {watch(&sandpodv1.WatchSandboxesRequest{Namespace: strings.Repeat("n", 64)}), ia, "namespace"},
	}
}

func poolCases(e *badInputEnv) map[string]badCase {
	c := e.c
	templates := func(r *sandpodv1.ListTemplatesRequest) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := c.ListTemplates(ctx(t), r)
			return err
		}
	}
	pools := func(r *sandpodv1.ListWarmPoolsRequest) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := c.ListWarmPools(ctx(t), r)
			return err
		}
	}
	getPool := func(name, ns string) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := c.GetWarmPool(ctx(t), &sandpodv1.GetWarmPoolRequest{Name: name, Namespace: ns})
			return err
		}
	}
	scale := func(name, ns string, n int32) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := c.ScaleWarmPool(ctx(t), &sandpodv1.ScaleWarmPoolRequest{Name: name, Namespace: ns, Replicas: n})
			return err
		}
	}
	ia, nf := codes.InvalidArgument, codes.NotFound
	return map[string]badCase{
		"templates: bad namespace":              {templates(&sandpodv1.ListTemplatesRequest{Namespace: "x_y"}), ia, "namespace"},
		"templates: negative page size":         {templates(&sandpodv1.ListTemplatesRequest{PageSize: -5}), ia, "page_size"},
		"templates: page size too big":          {templates(&sandpodv1.ListTemplatesRequest{PageSize: 1001}), ia, "page_size"},
		"templates: garbage page token":         {templates(&sandpodv1.ListTemplatesRequest{PageToken: "%%%"}), ia, "page_token"},
		"templates: tampered page token":        {templates(&sandpodv1.ListTemplatesRequest{PageToken: tamper(e.tokens["templates"])}), ia, "page_token"},
		"templates: token of ListWarmPools":     {templates(&sandpodv1.ListTemplatesRequest{PageToken: e.tokens["pools"]}), ia, "page_token"},
		"templates: token of another namespace": {templates(&sandpodv1.ListTemplatesRequest{PageToken: e.tokens["templates"], Namespace: "team-a"}), ia, "page_token"},

		"pools: bad namespace":          {pools(&sandpodv1.ListWarmPoolsRequest{Namespace: "ÜNS"}), ia, "namespace"},
		"pools: page size too big":      {pools(&sandpodv1.ListWarmPoolsRequest{PageSize: 1 << 30}), ia, "page_size"},
		"pools: garbage page token":     {pools(&sandpodv1.ListWarmPoolsRequest{PageToken: "AAAA"}), ia, "page_token"},
		"pools: tampered page token":    {pools(&sandpodv1.ListWarmPoolsRequest{PageToken: tamper(e.tokens["pools"])}), ia, "page_token"},
		"pools: token of ListTemplates": {pools(&sandpodv1.ListWarmPoolsRequest{PageToken: e.tokens["templates"]}), ia, "page_token"},

		"pool: missing":           {getPool("ghost", ""), nf, "ghost"},
		"pool: empty name":        {getPool("", ""), ia, "name"},
		"pool: uppercase name":    {getPool("Python", ""), ia, "name"},
		"pool: name too long":     {getPool(strings.Repeat("p", 64), ""), ia, "name"},
		"pool: bad namespace":     {getPool("python", "a.b"), ia, "namespace"},
		"pool: another namespace": {getPool("python", "team-a"), nf, "team-a"},

		"scale: negative replicas":       {scale("python", "", -1), ia, "replicas"},
		"scale: most negative replicas":  {scale("python", "", -1<<31), ia, "replicas"},
		"scale: above the API's limit":   {scale("python", "", 10001), ia, "replicas"},
		"scale: over the engine's limit": {scale("python", "", 5000), codes.ResourceExhausted, "replicas"},
		"scale: missing pool":            {scale("ghost", "", 1), nf, "ghost"},
		"scale: empty name":              {scale("", "", 1), ia, "name"},
		"scale: bad name":                {scale("py_thon", "", 1), ia, "name"},
		"scale: bad namespace":           {scale("python", "Default", 1), ia, "namespace"},
	}
}
