package engine

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// forbiddenHostPaths may never be mounted into a local sandbox, nor any
// path above them: they hold other users' files, credentials, and the
// engine's own state (which lives under /var/lib or a user's home by
// default) and sockets (under /tmp).
var forbiddenHostPaths = []string{"/", "/root", "/home", "/tmp", "/var", "/run", "/proc", "/sys", "/dev", "/etc", "/boot"}

// resolveSecurity reads the parts of a template's pod that decide how a
// local sandbox is contained: the user its commands run as
// (securityContext.runAsUser/runAsGroup, container over pod) and the
// hostPath volumes its container mounts, which become read-only host trees.
func resolveSecurity(t *v1alpha1.SandboxTemplate, c *corev1.Container, rs *runSpec) error {
	pod := t.Spec.PodTemplate.Spec
	if sc := pod.SecurityContext; sc != nil {
		rs.RunAsUser, rs.RunAsGroup = sc.RunAsUser, sc.RunAsGroup
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			rs.RunAsUser = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			rs.RunAsGroup = sc.RunAsGroup
		}
	}
	for _, id := range []*int64{rs.RunAsUser, rs.RunAsGroup} {
		if id != nil && (*id < 0 || *id >= idRangeSize) {
			return fmt.Errorf("config: SandboxTemplate %s: runAsUser/runAsGroup %d is outside 0..%d, the ids a local sandbox maps", t.Name, *id, idRangeSize-1)
		}
	}
	volumes := map[string]*corev1.HostPathVolumeSource{}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			volumes[v.Name] = v.HostPath
		}
	}
	for _, m := range c.VolumeMounts {
		hp := volumes[m.Name]
		if hp == nil {
			continue // other volume kinds mean nothing to the local engine
		}
		src, dst := path.Clean(hp.Path), path.Clean(m.MountPath)
		if !path.IsAbs(src) || !path.IsAbs(dst) {
			return fmt.Errorf("config: SandboxTemplate %s: hostPath %q and mountPath %q must be absolute", t.Name, hp.Path, m.MountPath)
		}
		for _, f := range forbiddenHostPaths {
			if (f != "/" && within(src, f)) || within(f, src) {
				return fmt.Errorf("config: SandboxTemplate %s: hostPath %s may not be mounted into a local sandbox (%s holds the host's or the engine's private files)", t.Name, src, f)
			}
		}
		if dst == "/" || within(dst, WorkspaceDir) || within(dst, "/proc") || within(dst, "/dev") || within(dst, "/tmp") || within(dst, path.Dir(agentPath)) {
			return fmt.Errorf("config: SandboxTemplate %s: mountPath %s is reserved in a local sandbox", t.Name, dst)
		}
		rs.HostPaths = append(rs.HostPaths, hostMount{Source: src, Destination: dst})
	}
	return nil
}

// within reports whether p is dir or lies below it.
func within(p, dir string) bool {
	return dir == "/" || p == dir || strings.HasPrefix(p, dir+"/")
}
