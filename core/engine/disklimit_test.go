package engine

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestDiskLimits(t *testing.T) {
	for name, tc := range map[string]struct {
		limits                corev1.ResourceList
		wantBytes, wantInodes int64
		wantErr               string
	}{
		"none: the default": {wantBytes: 10 << 30, wantInodes: 655360},
		"ephemeral-storage": {limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("64Mi")}, wantBytes: 64 << 20, wantInodes: 4096},
		"decimal units":     {limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1G")}, wantBytes: 1e9, wantInodes: 61035},
		"the minimum":       {limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("16Mi")}, wantBytes: 16 << 20, wantInodes: 1024},
		"below the minimum": {limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1Mi")}, wantErr: "below the local engine's minimum of 16 MiB"},
		"memory only":       {limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}, wantBytes: 10 << 30, wantInodes: 655360},
	} {
		t.Run(name, func(t *testing.T) {
			c := corev1.Container{Resources: corev1.ResourceRequirements{Limits: tc.limits}}
			b, i, err := diskLimits(&c)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || b != tc.wantBytes || i != tc.wantInodes {
				t.Fatalf("got %d bytes, %d inodes, %v; want %d, %d", b, i, err, tc.wantBytes, tc.wantInodes)
			}
		})
	}
}

func TestDiskSizes(t *testing.T) {
	for name, tc := range map[string]struct {
		templates map[string]runSpec
		want      [][2]int64
	}{
		"none":             {},
		"made before":      {templates: map[string]runSpec{"a": {}}},
		"distinct, sorted": {templates: map[string]runSpec{"a": {DiskBytes: 2, DiskInodes: 1}, "b": {DiskBytes: 1, DiskInodes: 1}, "c": {DiskBytes: 2, DiskInodes: 1}}, want: [][2]int64{{1, 1}, {2, 1}}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, diskSizes(tc.templates)); diff != "" {
				t.Error(diff)
			}
		})
	}
}
