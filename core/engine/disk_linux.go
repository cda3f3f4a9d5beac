package engine

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A sandbox's disk: what a sandbox writes on the host (its directory:
// workspace, root file system, the layer over a snapshot, agent log; not
// runc's bundle, bundle.go) lives on a file system of its own, an ext4
// image file (sparse: it takes what is written, up to the limit)
// loop-mounted on the sandbox's directory. A sandbox that fills it gets ENOSPC; the host's disk
// and the state store are untouched. The image is made before the sandbox
// first starts (pool members ahead of their claims), mounted again by the
// next engine after a reboot, and removed with the sandbox.
//
// Project quotas (XFS, or ext4 with the project feature) would bound the
// same directory without an image; they are not used yet: the kernels the
// engine is tested on are built without them (CONFIG_XFS_QUOTA,
// CONFIG_QFMT_V2), so that path could not be proven.

// diskLoop is the one mechanism: an ext4 image per sandbox, loop-mounted.
const diskLoop = "loop-mounted ext4 image per sandbox"

// disks makes, mounts and removes the sandboxes' images.
type disks struct {
	// dir holds the images, <state>/disks/<ns>/<name>.img.
	dir string
	// mode is diskLoop, or "" where the machine cannot (why says why):
	// sandboxes then have no disk limit.
	mode, why string
	mkfs      string
	formatMu  sync.Mutex
}

// detectDisks chooses how sandboxes' disks are bounded on this machine,
// once, by making and mounting a small image in the state directory.
func detectDisks(stateDir string) *disks {
	d := &disks{dir: filepath.Join(stateDir, "disks")}
	if err := d.probe(); err != nil {
		d.why = err.Error()
		return d
	}
	d.mode = diskLoop
	return d
}

func (d *disks) probe() error {
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return fmt.Errorf("no loop devices: %w", err)
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		for _, p := range []string{"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"} {
			if _, serr := os.Stat(p); serr == nil {
				mkfs, err = p, nil
				break
			}
		}
	}
	if err != nil {
		return errors.New("mkfs.ext4 not found (install e2fsprogs)")
	}
	d.mkfs = mkfs
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return err
	}
	// Images a dying engine left half made.
	tmps, _ := filepath.Glob(filepath.Join(d.dir, "*", "*.img.tmp-*"))
	for _, p := range tmps {
		_ = os.Remove(p)
	}
	tmp, err := os.MkdirTemp(d.dir, ".probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	img, mnt := filepath.Join(tmp, "probe.img"), filepath.Join(tmp, "m")
	if err := d.format(img, MinDiskBytes, MinDiskBytes/diskBytesPerInode); err != nil {
		return err
	}
	if err := os.Mkdir(mnt, 0o700); err != nil {
		return err
	}
	if err := attachImage(img, mnt); err != nil {
		return err
	}
	return detachDisk(mnt)
}

// String says how disks are bounded, for the start's log line.
func (d *disks) String() string {
	if d.mode == "" {
		return "none (" + d.why + "): a sandbox can fill the state directory's disk"
	}
	return d.mode + " (ephemeral-storage limit, default " + strconv.FormatInt(DefaultDiskBytes>>30, 10) + " GiB; one inode per 16 KiB)"
}

// enforced says whether sandboxes made now get a disk limit.
func (d *disks) enforced() bool { return d.mode != "" }

func (d *disks) image(r *record) string {
	return filepath.Join(d.dir, r.Namespace, r.Name+".img")
}

// ensure mounts a sandbox's disk on dir (its directory), making it first
// if it has none yet. The directory of a sandbox made before disk limits
// (it holds files, without an image) stays as it is. Callers start or
// seed the sandbox (it is busy): no two ensure one sandbox at once.
func (d *disks) ensure(dir string, r *record) error {
	if isMountPoint(dir) {
		return nil
	}
	img := d.image(r)
	made := false
	if _, err := os.Stat(img); errors.Is(err, os.ErrNotExist) {
		if !d.enforced() || r.Spec.DiskBytes == 0 || !emptyOrMissing(dir) {
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(img), 0o700); err != nil {
			return err
		}
		if err := d.makeImage(img, r.Spec.DiskBytes, r.Spec.DiskInodes); err != nil {
			return err
		}
		made = true
	} else if err != nil {
		return err
	}
	return d.mount(img, dir, made)
}

// reattachDisks mounts the disk of every sandbox the store knows, and of
// the orphans (directories without a record) so that their files stay
// where an operator looks for them. For a start, before anything else.
func (e *Engine) reattachDisks() {
	disked := make([]record, 0, len(e.sandboxes)+len(e.orphans))
	for _, sb := range e.sandboxes {
		disked = append(disked, sb.rec)
	}
	for key := range e.orphans {
		ns, name, _ := strings.Cut(key, "/")
		disked = append(disked, record{Namespace: ns, Name: name})
	}
	for i := range disked {
		r := &disked[i]
		if err := e.disks.reattach(sandboxDir(e.cfg.StateDir, r), r); err != nil {
			e.log.Error("mount a sandbox's disk", "sandbox", r.key(), "err", err)
		}
	}
}

// reattach mounts the disk of a sandbox that has one and lost its mount (a
// reboot, a purge): what an engine does for every sandbox when it starts,
// before anything reads or writes the sandbox's directory.
func (d *disks) reattach(dir string, r *record) error {
	if isMountPoint(dir) {
		return nil
	}
	img := d.image(r)
	if _, err := os.Stat(img); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	return d.mount(img, dir, false)
}

func (d *disks) mount(img, dir string, fresh bool) error {
	// Two mounts of one ext4 at once would corrupt it: an unmount the
	// kernel finishes lazily (MNT_DETACH) still holds the image. An image
	// just made was never attached.
	if !fresh {
		if err := awaitDetached(img, detachWait); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := attachImage(img, dir); err != nil {
		return fmt.Errorf("mount the sandbox's disk %s: %w", img, err)
	}
	return nil
}

// release unmounts a deleted sandbox's disk and removes its image; its
// loop device goes with the mount (autoclear).
func (d *disks) release(dir string, r *record) error {
	if isMountPoint(dir) {
		if err := detachDisk(dir); err != nil {
			return err
		}
	}
	if err := os.Remove(d.image(r)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// makeImage makes a sandbox's image: a sparse copy of a formatted image of
// the same size and inode count (formatted, below), so a cold create pays
// a copy of a few MiB of metadata instead of mkfs (4 ms, not 200, for
// 10 GiB). The images share a file system UUID, which ext4 does not mind.
func (d *disks) makeImage(img string, size, inodes int64) error {
	tpl, err := d.formatted(size, inodes)
	if err != nil {
		return err
	}
	return atomicFile(img, func(tmp string) error { return copySparseFile(tmp, tpl) })
}

// formatted returns the formatted image of size bytes and inodes inodes,
// making it the first time it is asked for (or at start, warm); one at a
// time, so that a pool's members wait for one mkfs instead of running one
// each.
func (d *disks) formatted(size, inodes int64) (string, error) {
	d.formatMu.Lock()
	defer d.formatMu.Unlock()
	tpl := filepath.Join(d.dir, ".formatted", strconv.FormatInt(size, 10)+"-"+strconv.FormatInt(inodes, 10)+".img")
	if _, err := os.Stat(tpl); err == nil {
		return tpl, nil
	}
	if err := os.MkdirAll(filepath.Dir(tpl), 0o700); err != nil {
		return "", err
	}
	return tpl, atomicFile(tpl, func(tmp string) error { return d.format(tmp, size, inodes) })
}

// warm formats the images of the given limits ahead of the first sandbox
// that needs one.
func (d *disks) warm(limits [][2]int64) {
	for _, l := range limits {
		if _, err := d.formatted(l[0], l[1]); err != nil {
			return
		}
	}
}

// format makes a sparse ext4 file system of size bytes with at least
// inodes inodes (mkfs rounds up to fill its tables) in the file img. Lazy
// table and journal init keep it sparse (a few MiB on disk); diskReserve
// is reserved for the engine.
func (d *disks) format(img string, size, inodes int64) error {
	f, err := os.OpenFile(img, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	f.Close()
	if err != nil {
		return err
	}
	if out, err := exec.Command(d.mkfs, mkfsArgs(img, size, inodes)...).CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// atomicFile makes path with make(tmp) beside it and a rename: a file half
// made never has the final name (a dying engine leaves a tmp, swept at the
// next start).
func atomicFile(path string, make func(tmp string) error) error {
	tmp := path + ".tmp-" + newUID()[:8]
	err := make(tmp)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// copySparseFile copies the file src to the new file dst, holes kept.
func copySparseFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := copySparse(int(out.Fd()), int(in.Fd()), fi.Size(), 0); err != nil {
		out.Close()
		return err
	}
	// Written back here, by the start that made it: left dirty, its
	// megabytes would be flushed by the next fsync of the host's file
	// system (ext4 orders data before a journal commit), the store's
	// commit of a claim among them.
	if err := unix.Fdatasync(int(out.Fd())); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// diskReserve is kept free for the engine: ext4 lets only the host's root
// (CAP_SYS_RESOURCE in the host's user namespace, which no process of a
// sandbox has) write into its reserved blocks, so a sandbox that filled its
// disk can still be started (its root file system's /etc and runc's
// bundle are written at each start).
const diskReserve = 2 << 20

func mkfsArgs(img string, size, inodes int64) []string {
	reserve := strconv.FormatFloat(float64(diskReserve)*100/float64(size), 'f', 6, 64) // percent
	return []string{"-q", "-F", "-b", "4096", "-I", "256", "-m", reserve, "-N", strconv.FormatInt(inodes, 10),
		"-L", "sandpod", "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard", img}
}

// diskMountOptions: discard gives the host the blocks of deleted files
// back (the loop device punches holes in the image); noinit_itable keeps
// the kernel from zeroing inode tables, which would fill the image's holes.
const diskMountOptions = "discard,noinit_itable"

// attachImage loop-mounts an ext4 image on target (nosuid, nodev). The
// loop device is set to clear itself when its mount goes, so an unmount,
// or a mount that fails, leaves no device behind.
func attachImage(img, target string) error {
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer ctl.Close()
	for range 64 { // another process may take the free device first
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return fmt.Errorf("find a free loop device: %w", err)
		}
		dev := "/dev/loop" + strconv.Itoa(n)
		lfd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", dev, err)
		}
		cfg := unix.LoopConfig{Fd: uint32(f.Fd()), Size: 4096, Info: unix.LoopInfo64{Flags: unix.LO_FLAGS_AUTOCLEAR | unix.LO_FLAGS_DIRECT_IO}}
		copy(cfg.Info.File_name[:len(cfg.Info.File_name)-1], img)
		if err := unix.IoctlLoopConfigure(lfd, &cfg); err != nil {
			unix.Close(lfd)
			if errors.Is(err, unix.EBUSY) {
				continue
			}
			return fmt.Errorf("set up %s: %w", dev, err)
		}
		err = unix.Mount(dev, target, "ext4", unix.MS_NOSUID|unix.MS_NODEV, diskMountOptions)
		unix.Close(lfd) // the mount holds the device now; without one it clears
		if err != nil {
			return fmt.Errorf("mount %s: %w", dev, err)
		}
		return nil
	}
	return errors.New("no free loop device after 64 tries")
}

// detachDisk unmounts a sandbox's disk; one still held (a process of the
// sandbox not yet gone) is detached and goes when the last user does.
func detachDisk(dir string) error {
	err := unix.Unmount(dir, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(dir, unix.MNT_DETACH)
	}
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", dir, err)
}

// detachWait bounds how long a mount waits for an image's earlier loop
// device to go.
const detachWait = 10 * time.Second

// awaitDetached waits until no loop device is backed by img.
func awaitDetached(img string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		devs := loopDevicesOf(img)
		if len(devs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is still attached to %s after %s (mounted elsewhere, or an unmount not finished)", img, strings.Join(devs, ", "), wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// loopDevicesOf lists the loop devices backed by the file img.
func loopDevicesOf(img string) []string {
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) == img {
			out = append(out, "/dev/"+filepath.Base(filepath.Dir(filepath.Dir(f))))
		}
	}
	return out
}

// purgeDetachWait bounds how long purge waits for the disks of the
// sandboxes it has just killed: a loop device goes with the last process
// that holds its file system, which a loaded machine may take a while to
// end (purge is run by hand or by a test's cleanup, never on a claim's path).
const purgeDetachWait = 60 * time.Second

// awaitDisksDetached waits until the loop devices of every image of a
// state directory are gone (purge: the next serve mounts them again).
func awaitDisksDetached(stateDir string) error {
	imgs, _ := filepath.Glob(filepath.Join(stateDir, "disks", "*", "*.img"))
	for _, img := range imgs {
		if filepath.Base(filepath.Dir(img)) == ".formatted" {
			continue
		}
		if err := awaitDetached(img, purgeDetachWait); err != nil {
			return err
		}
	}
	return nil
}

// isMountPoint says whether something is mounted on dir (its device is
// not its parent's).
func isMountPoint(dir string) bool {
	var st, parent unix.Stat_t
	if unix.Lstat(dir, &st) != nil || unix.Lstat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}

func emptyOrMissing(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) == 0
}

// diskMountsUnder lists the sandboxes' disks mounted below dir/sandboxes
// (deepest first): what purge unmounts after the workspaces on them.
func diskMountsUnder(stateDir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	prefix := filepath.Join(stateDir, "sandboxes") + "/"
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := 6
		for sep < len(fields) && fields[sep] != "-" {
			sep++
		}
		if len(fields) < 10 || sep+2 >= len(fields) {
			continue
		}
		mp := unescapeMount(fields[4])
		if fields[sep+1] == "ext4" && strings.HasPrefix(fields[sep+2], "/dev/loop") && strings.HasPrefix(mp, prefix) {
			out = append([]string{mp}, out...)
		}
	}
	return out
}
