package integration

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// unclaimedMember is the refusal every call that would reach an unclaimed
// warm pool member gets (lifecycle.MayReach).
const unclaimedMember = `is an unclaimed member of warm pool "python"; claim one first (ClaimSandbox with template "python")`

// poolMembers lists the unclaimed members of the pool "python", by name.
func poolMembers(t *testing.T, c sandpodv1.SandboxServiceClient) []*sandpodv1.Sandbox {
	t.Helper()
	resp, err := c.ListSandboxes(ctx(t), &sandpodv1.ListSandboxesRequest{IncludePoolMembers: true, PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []*sandpodv1.Sandbox
	for _, sb := range resp.GetSandboxes() {
		if !sb.GetClaimed() && sb.GetPool() == "python" {
			out = append(out, sb)
		}
	}
	return out
}

func memberNames(ms []*sandpodv1.Sandbox) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.GetName())
	}
	return out
}

// wantRefused checks the refusal of a call on an unclaimed member: the code,
// the message, and the ErrorInfo reason clients can branch on.
func wantRefused(t *testing.T, what string, err error) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), unclaimedMember) {
		t.Errorf("%s on an unclaimed member: %v; want FAILED_PRECONDITION %q", what, err, unclaimedMember)
		return
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == "UNCLAIMED_POOL_MEMBER" && info.GetMetadata()["pool"] == "python" {
			return
		}
	}
	t.Errorf("%s: no ErrorInfo UNCLAIMED_POOL_MEMBER in %v", what, st.Details())
}

// sandboxCalls makes each call that acts on a sandbox, and returns its error.
func sandboxCalls(t *testing.T, c sandpodv1.SandboxServiceClient, name string) map[string]func() error {
	return map[string]func() error{
		"Exec": func() error {
			_, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: name, Shell: "echo planted > planted.txt; sleep 1000 &"}, "")
			return err
		},
		"WriteFile": func() error { return writeFile(t, c, name, "planted.txt", []byte("planted")) },
		"ReadFile": func() error {
			_, err := readFile(t, c, name, "planted.txt")
			if status.Code(err) == codes.NotFound {
				err = nil // reached the agent: nothing there to read
			}
			return err
		},
		"ListFiles": func() error {
			_, err := c.ListFiles(ctx(t), &sandpodv1.ListFilesRequest{Sandbox: name, Path: "."})
			return err
		},
		"StatFile": func() error {
			_, err := c.StatFile(ctx(t), &sandpodv1.StatFileRequest{Sandbox: name, Path: "."})
			return err
		},
		"MakeDir": func() error {
			_, err := c.MakeDir(ctx(t), &sandpodv1.MakeDirRequest{Sandbox: name, Path: "planted-dir", Parents: true})
			return err
		},
		"RemoveFile": func() error {
			_, err := c.RemoveFile(ctx(t), &sandpodv1.RemoveFileRequest{Sandbox: name, Path: "planted-dir", Recursive: true})
			if status.Code(err) == codes.NotFound {
				err = nil
			}
			return err
		},
		"RunCode": func() error {
			_, err := runCode(t, c, &sandpodv1.RunCodeRequest{Sandbox: name, Code: "open('planted.txt', 'w').write('planted')"})
			return err
		},
		"CreateCodeContext": func() error {
			_, err := c.CreateCodeContext(ctx(t), &sandpodv1.CreateCodeContextRequest{Sandbox: name})
			return err
		},
		"ExtendSandbox": func() error {
			_, err := c.ExtendSandbox(ctx(t), &sandpodv1.ExtendSandboxRequest{Name: name, Ttl: dur(time.Hour)})
			return err
		},
		"SuspendSandbox": func() error {
			_, err := c.SuspendSandbox(ctx(t), &sandpodv1.SuspendSandboxRequest{Name: name})
			return err
		},
		"ResumeSandbox": func() error {
			_, err := c.ResumeSandbox(ctx(t), &sandpodv1.ResumeSandboxRequest{Name: name})
			return err
		},
	}
}

// callOrder runs suspend before resume, and plants before it reads.
var callOrder = []string{"Exec", "RunCode", "CreateCodeContext", "WriteFile", "ReadFile", "MakeDir", "ListFiles", "StatFile", "RemoveFile", "ExtendSandbox", "SuspendSandbox", "ResumeSandbox"}

// TestUnclaimedPoolMembersCannotBeReached: a caller who sees a warm pool
// member (ListSandboxes with include_pool_members) cannot exec in it, touch
// its files or change its lifecycle before it is claimed, so nothing is
// planted for the next claimer; once claimed, the same calls work.
func TestUnclaimedPoolMembersCannotBeReached(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	waitPoolSettled(t, c, "python", 2)

	members := poolMembers(t, c)
	if len(members) != 2 {
		t.Fatalf("ListSandboxes with include_pool_members shows %d members of a pool of 2: %v", len(members), memberNames(members))
	}
	plain, err := c.ListSandboxes(ctx(t), &sandpodv1.ListSandboxesRequest{})
	if err != nil || len(plain.GetSandboxes()) != 0 {
		t.Fatalf("ListSandboxes without include_pool_members: %v, %v; want no sandbox", plain.GetSandboxes(), err)
	}
	target := members[0].GetName()
	if got, err := getSandbox(t, c, target); err != nil || got.GetPhase() != sandpodv1.Phase_PHASE_RUNNING {
		t.Fatalf("GetSandbox of a member: %v, %v; members are visible by name", got, err)
	}

	calls := sandboxCalls(t, c, target)
	for _, name := range callOrder {
		wantRefused(t, name, calls[name]())
	}
	// Refused means untouched: still RUNNING, same incarnation, no clock.
	got, err := getSandbox(t, c, target)
	if err != nil || got.GetPhase() != sandpodv1.Phase_PHASE_RUNNING || got.GetUid() != members[0].GetUid() || got.GetShutdownTime() != nil {
		t.Fatalf("the member after the refused calls: %v, %v", got, err)
	}

	// Claim until the claim hands out that very member (oldest first: the
	// pool's two members come before any refill).
	var sb *sandpodv1.Sandbox
	for i := 0; i < 2 && sb == nil; i++ {
		if got, warm := claim(t, c, "python"); !warm {
			t.Fatalf("claim %d was cold with a ready pool", i)
		} else if got.GetName() == target {
			sb = got
		}
	}
	if sb == nil {
		t.Fatalf("two claims of a pool of 2 did not hand out member %s", target)
	}
	// (The pattern 'sleep 10[0]0' does not match this command's own line.)
	planted := "ls -d planted.txt planted-dir 2>/dev/null; cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -o 'sleep 10[0]0' || true"
	if r := sh(t, c, target, planted); r.stdout != "" {
		t.Fatalf("the claimed member holds what the refused calls tried to plant: %q", r.stdout)
	}
	calls = sandboxCalls(t, c, target)
	for _, name := range callOrder {
		if err := calls[name](); err != nil {
			t.Errorf("%s after the claim: %v", name, err)
		}
	}
	if data, err := readFile(t, c, target, "planted.txt"); err != nil || string(data) != "planted" {
		t.Errorf("read after the claim: %q, %v", data, err)
	}
}

// TestPoolReplacesMembersThatFailOrStop: a member whose process tree is
// killed, one deleted by an operator, and one left suspended (by a state
// written before suspend refused members) are each replaced, and the pool
// is back at its size.
func TestPoolReplacesMembersThatFailOrStop(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	waitPoolSettled(t, c, "python", 2)

	replaced := func(what, gone string) {
		t.Helper()
		eventually(t, what+": member "+gone+" replaced and the pool of 2 ready again", func() bool {
			p, err := c.GetWarmPool(ctx(t), &sandpodv1.GetWarmPoolRequest{Name: "python"})
			names := memberNames(poolMembers(t, c))
			return err == nil && p.GetWarmPool().GetReadyReplicas() == 2 && len(names) == 2 && !slices.Contains(names, gone)
		})
		if _, err := getSandbox(t, c, gone); status.Code(err) != codes.NotFound {
			t.Fatalf("%s: the replaced member %s is still there: %v", what, gone, err)
		}
	}

	// kill -9 of its process tree (its init, PID 1 of its namespace).
	victim := poolMembers(t, c)[0].GetName()
	if err := syscall.Kill(initPID(t, victim), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	replaced("killed", victim)

	// Deleted through the API: allowed, and the pool refills.
	victim = poolMembers(t, c)[0].GetName()
	if _, err := c.DeleteSandbox(ctx(t), &sandpodv1.DeleteSandboxRequest{Name: victim}); err != nil {
		t.Fatalf("delete of an unclaimed member: %v", err)
	}
	replaced("deleted", victim)

	// Suspended: the API refuses that now, so write it into the state as an
	// older server would have left it, and start the server again.
	victim = poolMembers(t, c)[0].GetName()
	srv.Stop(t)
	suspendInState(t, filepath.Join(srv.StateDir(), "state.db"), "default/"+victim)
	srv.StartAgain(t)
	replaced("suspended", victim)
}

// suspendInState marks a sandbox's stored record suspended.
func suspendInState(t *testing.T, path, key string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("sandboxes"))
		var rec map[string]any
		if err := json.Unmarshal(b.Get([]byte(key)), &rec); err != nil {
			return err
		}
		rec["mode"], rec["message"] = "Suspended", "suspended"
		out, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return b.Put([]byte(key), out)
	})
	if err != nil {
		t.Fatalf("suspend %s in the state: %v", key, err)
	}
}
