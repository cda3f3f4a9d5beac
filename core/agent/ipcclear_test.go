//go:build linux

package agent

import (
	"reflect"
	"testing"
)

func TestSysvObjects(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []sysvObject
	}{
		{"none", "       key      shmid perms  size  cpid  lpid nattch   uid   gid  cuid  cgid\n", nil},
		{"shm", "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid\n" +
			"     24301          3   600                  4096    36     0      0  1000  1000  1000  1000\n", []sysvObject{{3, 1000}}},
		{"sem: uid comes earlier", "       key      semid perms      nsems   uid   gid  cuid  cgid\n" +
			"     24301          7   600          1     0     0     0     0\n" +
			"         0         9   600          1  1000  1000  1000  1000\n", []sysvObject{{7, 0}, {9, 1000}}},
		{"no uid column", "key id perms\n1 2 3\n", nil},
		{"short or bad lines", "key id perms uid\n1 2\n1 x 600 5\n1 4 600 -1\n", nil},
		{"empty", "", nil},
	} {
		if got := sysvObjects(tc.text); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
