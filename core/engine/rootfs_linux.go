package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// defaultHostTrees are the host paths a sandbox sees (read-only) when its
// template names none of its own: what a shell and python3 need. On a
// merged-/usr host the top-level ones are symbolic links, made again in the
// sandbox's root.
var defaultHostTrees = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// hostEtc are the host's /etc entries a sandbox sees read-only: the dynamic
// linker's cache, certificates, time zone, and what interpreters read. Not
// passwd, shadow, sudoers, ssh or anything with a credential: the sandbox
// gets its own passwd, group, hosts and resolv.conf.
var hostEtc = []string{
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ssl", "ca-certificates", "ca-certificates.conf",
	"alternatives", "localtime", "timezone", "mime.types", "protocols", "services", "nsswitch.conf",
	"bash.bashrc", "profile", "profile.d", "inputrc", "terminfo", "debian_version", "os-release",
	"python3", "python3.11", "python3.12", "python3.13", "gai.conf", "host.conf", "magic", "magic.mime",
}

// prepareRootFS makes (or refreshes) a sandbox's root directory: owned by
// its root, with the host's top-level links, mount points for the host
// trees, and an /etc of its own. It returns the read-only mounts to make.
func prepareRootFS(rootfs string, idBase uint32, hostname string, runAsUID, runAsGID uint32, egress bool, extra []hostMount) ([]hostMount, error) {
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return nil, err
	}
	if err := os.Lchown(rootfs, int(idBase), int(idBase)); err != nil {
		return nil, fmt.Errorf("root file system owner: %w", err)
	}
	// The root is the sandbox's to change: everything below is done through
	// an os.Root, which never follows a link the sandbox planted out of it.
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var mounts []hostMount
	// What the engine makes in the root belongs to the sandbox's root, as
	// the rest of it does: runc, inside the user namespace, makes mount
	// points there.
	var owned []string
	for _, p := range defaultHostTrees {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				return nil, err
			}
			name := strings.TrimPrefix(p, "/")
			if cur, err := root.Readlink(name); err != nil || cur != target {
				_ = root.RemoveAll(name)
				if err := root.Symlink(target, name); err != nil {
					return nil, err
				}
				owned = append(owned, name)
			}
			continue
		}
		mounts = append(mounts, hostMount{Source: p, Destination: p})
	}
	if fi, err := root.Lstat("etc"); err == nil && !fi.IsDir() {
		_ = root.RemoveAll("etc")
	}
	if err := root.MkdirAll("etc", 0o755); err != nil {
		return nil, err
	}
	owned = append(owned, "etc")
	for _, name := range hostEtc {
		if _, err := os.Stat(filepath.Join("/etc", name)); err == nil {
			mounts = append(mounts, hostMount{Source: filepath.Join("/etc", name), Destination: filepath.Join("/etc", name)})
		}
	}
	files := map[string]string{
		"passwd": fmt.Sprintf("root:x:0:0:root:/root:/bin/sh\nuser:x:%d:%d:sandbox user:%s:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			runAsUID, runAsGID, WorkspaceDir),
		"group":    fmt.Sprintf("root:x:0:\nuser:x:%d:\nnogroup:x:65534:\n", runAsGID),
		"hostname": hostname + "\n",
		"hosts":    "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + hostname + "\n",
	}
	if runAsUID == 0 {
		files["passwd"] = strings.Replace(files["passwd"], "root:x:0:0:root:/root:", "root:x:0:0:root:"+WorkspaceDir+":", 1)
	}
	files["resolv.conf"] = ""
	if egress {
		if b, err := os.ReadFile("/etc/resolv.conf"); err == nil {
			files["resolv.conf"] = string(b)
		}
	}
	for name, content := range files {
		p := "etc/" + name
		_ = root.RemoveAll(p) // a link or directory planted in its place
		if err := root.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, err
		}
		owned = append(owned, p)
	}
	for _, p := range owned {
		if err := root.Lchown(p, int(idBase), int(idBase)); err != nil {
			return nil, err
		}
	}
	return append(mounts, extra...), nil
}

// chownTree gives a work directory made before sandboxes had id ranges of
// their own (owned by the engine's user) to the sandbox's user, once.
func chownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}
