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

// CleanPath checks a client path and cleans it. An absolute path names
// that path in the sandbox, as its commands see it; a relative one is
// relative to the workspace ("" and "." are the workspace itself). ".." is
// refused: a path says where it goes without climbing.
func CleanPath(p string) (string, error) {
	if len(p) > MaxPathLen {
		return "", fmt.Errorf("path is %d bytes long, the limit is %d", len(p), MaxPathLen)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("path %q contains \"..\"; name the place without climbing (absolute paths are allowed)", p)
		}
		if len(part) > MaxNameLen {
			return "", fmt.Errorf("a name in the path is %d bytes long, the limit is %d", len(part), MaxNameLen)
		}
	}
	if p == "" {
		return ".", nil
	}
	return path.Clean(p), nil
}
