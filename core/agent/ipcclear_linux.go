package agent

import (
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// clearSysVIPC removes every System V IPC object of the sandbox's IPC
// namespace (a restore in place: the old process tree made them, and a new
// container would have none). Only an object's owner or creator may remove
// it without CAP_SYS_ADMIN, which the sandbox's bounding set leaves out:
// each removal runs on a thread of its own that takes the owner's
// effective uid (the init holds CAP_SETUID) and is then discarded, so no
// other goroutine ever runs with that uid.
func clearSysVIPC() {
	for _, k := range []struct {
		file string
		rm   func(id int) error
	}{
		{"/proc/sysvipc/shm", func(id int) error { _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); return err }},
		{"/proc/sysvipc/msg", func(id int) error {
			_, _, e := unix.Syscall(unix.SYS_MSGCTL, uintptr(id), unix.IPC_RMID, 0)
			return errnoErr(e)
		}},
		{"/proc/sysvipc/sem", func(id int) error {
			_, _, e := unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), 0, unix.IPC_RMID, 0, 0, 0)
			return errnoErr(e)
		}},
	} {
		b, err := os.ReadFile(k.file)
		if err != nil {
			continue
		}
		for _, o := range sysvObjects(string(b)) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
				if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(o.uid), ^uintptr(0)); e != 0 {
					return
				}
				_ = k.rm(o.id)
			}()
			<-done
		}
	}
}

func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// sysvObject is one line of /proc/sysvipc/{shm,msg,sem}.
type sysvObject struct{ id, uid int }

// sysvObjects parses a /proc/sysvipc file: a header naming the columns
// (the id is the second; "uid" is the owner's), then one object a line.
func sysvObjects(text string) []sysvObject {
	lines := strings.Split(text, "\n")
	if len(lines) == 0 {
		return nil
	}
	uidCol := -1
	for i, h := range strings.Fields(lines[0]) {
		if h == "uid" {
			uidCol = i
		}
	}
	if uidCol < 0 {
		return nil
	}
	var out []sysvObject
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) <= uidCol {
			continue
		}
		id, err1 := strconv.Atoi(f[1])
		uid, err2 := strconv.Atoi(f[uidCol])
		if err1 == nil && err2 == nil && id >= 0 && uid >= 0 {
			out = append(out, sysvObject{id: id, uid: uid})
		}
	}
	return out
}
