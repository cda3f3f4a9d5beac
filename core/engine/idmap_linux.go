package engine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Idmapped snapshot layers: a fork's overlay takes the snapshot's files
// through a bind mount that shows them owned by the fork's id range
// (mount_setattr with MOUNT_ATTR_IDMAP), so no file is chowned, however
// many there are. Where the kernel or file system cannot, forks fall back
// to an ownership pass (shiftTree).

// usernsOf returns a file descriptor of a new user namespace that maps the
// ids from..from+65535 to to..to+65535: the idmapping of a mount. A
// short-lived process holds the namespace until the descriptor is open.
func usernsOf(from, to uint32) (int, error) {
	// The system's sleep first: serve runs as root, and its $PATH is no
	// place to pick a program from when a fixed one exists.
	sleep := ""
	for _, p := range []string{"/usr/bin/sleep", "/bin/sleep"} {
		if _, err := os.Stat(p); err == nil {
			sleep = p
			break
		}
	}
	if sleep == "" {
		p, err := exec.LookPath("sleep")
		if err != nil {
			return -1, fmt.Errorf("no sleep program to hold a user namespace: %w", err)
		}
		sleep = p
	}
	m := []syscall.SysProcIDMap{{ContainerID: int(from), HostID: int(to), Size: idRangeSize}}
	cmd := exec.Command(sleep, "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER, UidMappings: m, GidMappings: m,
		Pdeathsig: syscall.SIGKILL,
	}
	cmd.Env = []string{}
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("start a user namespace: %w", err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	fd, err := unix.Open("/proc/"+strconv.Itoa(cmd.Process.Pid)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	return fd, nil
}

// mountIdmapped bind-mounts src on target, read-only, with its ids moved
// from the range at from to the one at to.
func mountIdmapped(src, target string, from, to uint32) error {
	ns, err := usernsOf(from, to)
	if err != nil {
		return err
	}
	defer unix.Close(ns)
	tree, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("open_tree %s: %w", src, err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{
		Attr_set:  unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Userns_fd: uint64(ns),
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("idmap %s: %w", src, err)
	}
	if err := os.MkdirAll(target, 0o700); err != nil {
		return err
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach %s: %w", target, err)
	}
	return nil
}

// mountLayered mounts a workspace on target over the snapshot files lower,
// owned by the id range at base: through an idmapped view of lower when
// the kernel allows it (idmapped reports true), else over lower itself
// with an ownership pass. The idmapped view is detached once the overlay
// holds it (overlayfs keeps its own reference to each layer).
func mountLayered(target, lower, upper, work string, base uint32) (idmapped bool, err error) {
	// The overlay's root takes its owner and mode from the upper layer's
	// root: give it those of the snapshot's root, in the sandbox's range,
	// before mounting (a layer is not changed while mounted).
	var st unix.Stat_t
	if err := unix.Lstat(lower, &st); err != nil {
		return false, err
	}
	if err := os.MkdirAll(upper, 0o700); err != nil {
		return false, err
	}
	if err := os.Lchown(upper, int(mapID(st.Uid, snapshotIDBase, base)), int(mapID(st.Gid, snapshotIDBase, base))); err != nil {
		return false, err
	}
	if err := unix.Chmod(upper, st.Mode&0o7777); err != nil {
		return false, err
	}
	view := filepath.Join(filepath.Dir(upper), "lower")
	if err := mountIdmapped(lower, view, snapshotIDBase, base); err == nil {
		err = mountOverlay(target, view, upper, work)
		_ = unmount(view)
		_ = os.Remove(view)
		if err == nil {
			return true, nil
		}
	}
	if err := mountOverlay(target, lower, upper, work); err != nil {
		return false, err
	}
	if err := shiftTree(target, snapshotIDBase, base); err != nil {
		_ = unmount(target)
		return false, fmt.Errorf("give the workspace to the sandbox's ids: %w", err)
	}
	return false, nil
}

// probeIdmap says whether an idmapped view of a directory in dir can be
// mounted (the kernel and the file system support it).
func probeIdmap(dir string) error {
	tmp, err := os.MkdirTemp(dir, ".probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	src, view := filepath.Join(tmp, "src"), filepath.Join(tmp, "view")
	if err := os.Mkdir(src, 0o700); err != nil {
		return err
	}
	if err := mountIdmapped(src, view, snapshotIDBase, firstIDBase); err != nil {
		return err
	}
	return unmount(view)
}
