package engine

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Files of snapshots and of the sandboxes made from them. A workspace is the
// sandbox's to change while it runs, so it is walked by file descriptors
// (openat with O_NOFOLLOW, fstatat without following): no link in it is
// ever followed on the host, and a directory swapped for a link mid-walk
// fails that entry instead of leading out. Only directories, regular files
// and symbolic links (recreated as links, never read through) are kept;
// fifos, sockets and device nodes are skipped and reported.

// snapshotIDBase is the host id range that owns the files of every stored
// snapshot: one no sandbox is ever given (ranges start at firstIDBase), so
// no sandbox sees a snapshot's files as its own until they are mapped into
// its range when it is made from the snapshot.
const snapshotIDBase = firstIDBase - idRangeSize

// Limits of one copy: how deep a tree may go and how many entries it may
// have (the byte quota is the engine's config).
const (
	maxCopyDepth   = 256
	maxCopyEntries = 1 << 20
)

// mapID moves a host id of the range at from into the range at to. An id
// outside the source range (none should be) becomes the target's nobody.
func mapID(id, from, to uint32) uint32 {
	if id >= from && id-from < idRangeSize {
		return id - from + to
	}
	return to + 65534
}

// copyStats is what a copy kept and skipped: Bytes of file data (apparent
// sizes), Alloc of them on disk (holes not counted; what the quota counts).
type copyStats struct {
	Bytes, Alloc, Entries int64
	Skipped               []string
	Reflinked             bool
}

func (s *copyStats) skip(path, why string) {
	if len(s.Skipped) < 10 {
		s.Skipped = append(s.Skipped, path+": "+why)
	}
}

var errCopyLimit = errors.New("copy limit")

// copyTree copies the directory src into dst (which must not exist) with
// ownership moved from the id range at from to the one at to. Files are
// cloned (FICLONE, a reflink) where the file system can, else copied in the
// kernel (copy_file_range). maxBytes > 0 bounds the data copied.
func copyTree(src, dst string, from, to uint32, maxBytes int64) (*copyStats, error) {
	sfd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", src, err)
	}
	defer unix.Close(sfd)
	if err := os.Mkdir(dst, 0o700); err != nil {
		return nil, err
	}
	dfd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	c := &copier{from: from, to: to, maxBytes: maxBytes, stats: &copyStats{Reflinked: true}, root: dfd, links: map[[2]uint64]string{}}
	var st unix.Stat_t
	if err := unix.Fstat(sfd, &st); err != nil {
		return nil, err
	}
	if err := c.dir(sfd, dfd, ".", 0); err != nil {
		return c.stats, err
	}
	if err := c.meta(dfd, "", &st); err != nil {
		return c.stats, err
	}
	if c.stats.Bytes == 0 {
		c.stats.Reflinked = false
	}
	return c.stats, nil
}

type copier struct {
	from, to uint32
	maxBytes int64
	stats    *copyStats
	// root is the copy's directory; links, by device and inode, the path
	// under it of the first copy of each file with hard links: its other
	// names become links to that copy, as in the workspace. Copied once
	// per name, a file linked a thousand times would cost the host a
	// thousand times the disk it costs its sandbox.
	root  int
	links map[[2]uint64]string
}

func (c *copier) dir(sfd, dfd int, path string, depth int) error {
	if depth > maxCopyDepth {
		return fmt.Errorf("%s: deeper than %d directories: %w", path, maxCopyDepth, errCopyLimit)
	}
	// ReadDir on a duplicate: os.File closes what it wraps.
	dup, err := unix.Dup(sfd)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(dup), path)
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	for _, ent := range ents {
		name := ent.Name()
		p := filepath.Join(path, name)
		c.stats.Entries++
		if c.stats.Entries > maxCopyEntries {
			return fmt.Errorf("more than %d entries: %w", maxCopyEntries, errCopyLimit)
		}
		var st unix.Stat_t
		if err := unix.Fstatat(sfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed meanwhile
			}
			return fmt.Errorf("stat %s: %w", p, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			err = c.subdir(sfd, dfd, name, p, depth)
		case unix.S_IFREG:
			err = c.file(sfd, dfd, name, p)
		case unix.S_IFLNK:
			err = c.link(sfd, dfd, name, p, &st)
		default:
			c.stats.Entries--
			c.stats.skip(p, "not a file, directory or link (fifo, socket or device): not kept")
			continue
		}
		if err != nil {
			if errors.Is(err, errChanged) {
				c.stats.skip(p, "changed while it was copied")
				continue
			}
			return err
		}
	}
	return nil
}

// errChanged: an entry changed type between its stat and its open (the
// sandbox is running); it is skipped.
var errChanged = errors.New("changed during the copy")

func (c *copier) subdir(sfd, dfd int, name, path string, depth int) error {
	cfd, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return errChanged
		}
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(cfd)
	var st unix.Stat_t
	if err := unix.Fstat(cfd, &st); err != nil {
		return err
	}
	if err := unix.Mkdirat(dfd, name, 0o700); err != nil {
		return fmt.Errorf("make %s: %w", path, err)
	}
	nfd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(nfd)
	if err := c.dir(cfd, nfd, path, depth+1); err != nil {
		return err
	}
	return c.meta(nfd, "", &st)
}

func (c *copier) file(sfd, dfd int, name, path string) error {
	// O_NONBLOCK: a fifo swapped in after the stat must not hang the copy.
	in, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
			return errChanged
		}
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(in)
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errChanged
	}
	inode := [2]uint64{st.Dev, st.Ino}
	if first, ok := c.links[inode]; ok && st.Nlink > 1 {
		// The copy's tree is the engine's own (directories it made, in a
		// root-only directory): first's components are no links.
		if err := unix.Linkat(c.root, first, dfd, name, 0); err != nil {
			return fmt.Errorf("link %s to %s: %w", path, first, err)
		}
		return nil
	}
	// What a file takes on disk counts, not its apparent size: a sparse
	// file's holes are kept as holes (copySparse).
	alloc := st.Blocks * 512
	if c.maxBytes > 0 && c.stats.Alloc+alloc > c.maxBytes {
		return fmt.Errorf("more than %d bytes of files on disk: %w", c.maxBytes, errCopyLimit)
	}
	out, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer unix.Close(out)
	if st.Size > 0 {
		if unix.IoctlFileClone(out, in) != nil {
			c.stats.Reflinked = false
			// Bounded by the size seen and by what the quota has left: a
			// file growing or filling its holes meanwhile is cut there.
			budget := int64(0)
			if c.maxBytes > 0 {
				budget = c.maxBytes - c.stats.Alloc
			}
			n, err := copySparse(out, in, st.Size, budget)
			if err != nil {
				return fmt.Errorf("copy %s: %w", path, err)
			}
			alloc = max(alloc, n)
		}
	}
	c.stats.Bytes += st.Size
	c.stats.Alloc += alloc
	if st.Nlink > 1 {
		c.links[inode] = path
	}
	return c.meta(out, "", &st)
}

func (c *copier) link(sfd, dfd int, name, path string, st *unix.Stat_t) error {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(sfd, name, buf)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL) {
			return errChanged
		}
		return fmt.Errorf("read link %s: %w", path, err)
	}
	if err := unix.Symlinkat(string(buf[:n]), dfd, name); err != nil {
		return fmt.Errorf("make link %s: %w", path, err)
	}
	return c.meta(dfd, name, st)
}

// meta sets owner (mapped), mode and times of fd (name empty) or of the
// link name in the directory fd. Mode after owner: a chown clears set-id bits.
func (c *copier) meta(fd int, name string, st *unix.Stat_t) error {
	uid, gid := int(mapID(st.Uid, c.from, c.to)), int(mapID(st.Gid, c.from, c.to))
	times := []unix.Timespec{st.Atim, st.Mtim}
	if name != "" { // a link: no mode of its own
		if err := unix.Fchownat(fd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		return unix.UtimesNanoAt(fd, name, times, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, st.Mode&0o7777); err != nil {
		return err
	}
	return unix.UtimesNanoAt(fd, fmt.Sprintf("/proc/self/fd/%d", fd), times, 0)
}

// shiftTree moves the ownership of every entry under dir (dir included)
// from the id range at from to the one at to, in place. It is for a tree
// the engine made (an overlay over a snapshot, before any sandbox runs on
// it); on overlayfs with metacopy a chown copies up metadata only.
func shiftTree(dir string, from, to uint32) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := shiftOne(fd, "", from, to); err != nil {
		return err
	}
	return shiftDir(fd, from, to, 0)
}

func shiftDir(fd int, from, to uint32, depth int) error {
	if depth > maxCopyDepth {
		return errCopyLimit
	}
	dup, err := unix.Dup(fd)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(dup), "")
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, ent := range ents {
		if err := shiftOne(fd, ent.Name(), from, to); err != nil {
			return err
		}
		if ent.IsDir() {
			cfd, err := unix.Openat(fd, ent.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			err = shiftDir(cfd, from, to, depth+1)
			unix.Close(cfd)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func shiftOne(dirfd int, name string, from, to uint32) error {
	var st unix.Stat_t
	flags := unix.AT_SYMLINK_NOFOLLOW
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	if err := unix.Fstatat(dirfd, name, &st, flags); err != nil {
		return err
	}
	uid, gid := int(mapID(st.Uid, from, to)), int(mapID(st.Gid, from, to))
	if err := unix.Fchownat(dirfd, name, uid, gid, flags); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK && st.Mode&0o6000 != 0 {
		return unix.Fchmodat(dirfd, name, st.Mode&0o7777, 0) // chown cleared the set-id bits
	}
	return nil
}

// overlayOptions are the mount options of a workspace layered on a
// snapshot: metacopy, so mapping ownership into the sandbox's range copies
// up metadata only, never the data.
func overlayOptions(lower, upper, work string) string {
	return "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work + ",metacopy=on,redirect_dir=on"
}

// mountOverlay mounts a workspace on target: the snapshot's files (lower,
// read-only) under a layer of the sandbox's own (upper). nosuid and nodev,
// as the workspace's bind mount is.
func mountOverlay(target, lower, upper, work string) error {
	for _, d := range []string{upper, work, target} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	return unix.Mount("overlay", target, "overlay", unix.MS_NOSUID|unix.MS_NODEV, overlayOptions(lower, upper, work))
}

// unmount detaches whatever is mounted on target (the sandbox's own
// container keeps its view until it stops); nothing mounted is fine.
func unmount(target string) error {
	err := unix.Unmount(target, unix.MNT_DETACH)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// isOverlayMount says whether an overlay is mounted on dir.
func isOverlayMount(dir string) bool {
	var fs unix.Statfs_t
	if unix.Statfs(dir, &fs) != nil {
		return false
	}
	return fs.Type == unix.OVERLAYFS_SUPER_MAGIC
}

// mountsUnder lists the overlay mount points at or below dir (deepest
// first), and the workspaces' mount points (swap_linux.go), from /proc/self/mountinfo: what purge unmounts.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		mp := unescapeMount(fields[4])
		sep := 6
		for sep < len(fields) && fields[sep] != "-" {
			sep++
		}
		if sep+1 >= len(fields) || (fields[sep+1] != "overlay" && filepath.Base(mp) != swapBaseName) {
			continue
		}
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// probeOverlay says whether this machine can layer workspaces with
// overlayfs and metacopy in dir (the state directory's file system), by
// mounting one for a moment.
func probeOverlay(dir string) error {
	tmp, err := os.MkdirTemp(dir, ".probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	lower, upper, work, merged := filepath.Join(tmp, "l"), filepath.Join(tmp, "u"), filepath.Join(tmp, "w"), filepath.Join(tmp, "m")
	if err := os.MkdirAll(lower, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(lower, "f"), []byte("x"), 0o600); err != nil {
		return err
	}
	if err := mountOverlay(merged, lower, upper, work); err != nil {
		return err
	}
	defer unmount(merged)
	return os.Lchown(filepath.Join(merged, "f"), 1, 1)
}
