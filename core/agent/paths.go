package agent

import (
	"fmt"
	"path"
	"strings"
)

// MaxPathLen bounds a sandbox path, as PATH_MAX does on Linux.
const MaxPathLen = 4096

// MaxNameLen bounds one name in a path, as NAME_MAX does on Linux.
const MaxNameLen = 255

// CleanPath turns a client path into a clean path relative to the sandbox's
// root, or explains why it is refused. "" and "/" mean the root itself (".").
// A leading "/" is the sandbox's root, not the host's. Any ".." that would
// climb above the root is refused here; symbolic links that point out are
// refused later by os.Root when the path is used.
func CleanPath(p string) (string, error) {
	if len(p) > MaxPathLen {
		return "", fmt.Errorf("path is %d bytes long, the limit is %d", len(p), MaxPathLen)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("path %q contains \"..\"; paths must stay inside the sandbox", p)
		}
		if len(part) > MaxNameLen {
			return "", fmt.Errorf("a name in the path is %d bytes long, the limit is %d", len(part), MaxNameLen)
		}
	}
	clean := path.Clean("/" + p)
	if clean == "/" {
		return ".", nil
	}
	return strings.TrimPrefix(clean, "/"), nil
}
