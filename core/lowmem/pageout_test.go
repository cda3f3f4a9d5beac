package lowmem

import (
	"reflect"
	"testing"
)

func TestReadOnlyMappingsOf(t *testing.T) {
	maps := `00400000-01de4000 r-xp 00000000 fe:00 10010911                           /usr/bin/sandpod
01de4000-03b66000 r--p 019e4000 fe:00 10010911                           /usr/bin/sandpod
03b66000-03c56000 rw-p 03766000 fe:00 10010911                           /usr/bin/sandpod
03c56000-05ca0000 rw-p 00000000 00:00 0
7f1024439000-7f10247db000 r--p 00000000 fe:00 42                         /usr/bin/sandpod-other
7ffd1000-7ffd2000 r-xp 00000000 00:00 0                                  [vdso]
garbage line
zz-01 r--p 0 fe:00 1 /usr/bin/sandpod
`
	got := readOnlyMappingsOf(maps, "/usr/bin/sandpod")
	want := []mapping{{0x00400000, 0x01de4000}, {0x01de4000, 0x03b66000}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %x, want %x", got, want)
	}
}

func TestPageOutBinary(t *testing.T) {
	// The test binary's own pages: the call must succeed (or be refused by
	// an old kernel) and leave the process running.
	n, err := PageOutBinary()
	if err != nil {
		t.Skipf("kernel refused MADV_PAGEOUT: %v", err)
	}
	if n == 0 {
		t.Errorf("no read-only mapping of the test binary found")
	}
}
