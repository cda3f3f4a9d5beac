package engine

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Disk limits of local sandboxes: what one sandbox may write to the host's
// disk (its workspace, its own root file system, the layer over a snapshot
// it was made from, its agent log) is bounded by its template's
// ephemeral-storage limit, the resource Kubernetes bounds the same writes
// with, or DefaultDiskBytes. disk_linux.go enforces it.

// DefaultDiskBytes is a sandbox's disk limit when its template sets no
// ephemeral-storage limit: the default size bound of one snapshot
// (LocalEngineConfig snapshots.maxBytes), so a workspace that fits the
// default limit can also be snapshotted.
const DefaultDiskBytes = defaultMaxSnapshotBytes

// MinDiskBytes is the smallest limit a template may set: below it the file
// system's own journal and tables leave too little room to start.
const MinDiskBytes = 16 << 20

// diskBytesPerInode sets the inode limit from the byte limit: one file,
// directory or link per 16 KiB, ext4's own default ratio (a default limit
// of 10 GiB allows 655,360). Kubernetes has no inode resource; this keeps
// a sandbox from spending the host file system's inodes without asking
// for more bytes.
const diskBytesPerInode = 16 << 10

// diskLimits resolves a container's disk and inode limits.
func diskLimits(c *corev1.Container) (bytes, inodes int64, err error) {
	bytes = DefaultDiskBytes
	if q, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]; ok {
		bytes = q.Value()
		if bytes < MinDiskBytes {
			return 0, 0, fmt.Errorf("resources.limits.ephemeral-storage %s is below the local engine's minimum of %d MiB (the file system's own journal and tables need room)", q.String(), MinDiskBytes>>20)
		}
	}
	return bytes, bytes / diskBytesPerInode, nil
}

// diskSizes are the distinct disk limits (bytes, inodes) of the templates,
// in order: the images to format ahead of the first sandbox of each.
func diskSizes(templates map[string]runSpec) [][2]int64 {
	seen := map[[2]int64]bool{}
	var out [][2]int64
	for _, rs := range templates {
		k := [2]int64{rs.DiskBytes, rs.DiskInodes}
		if rs.DiskBytes > 0 && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] || out[i][0] == out[j][0] && out[i][1] < out[j][1] })
	return out
}
