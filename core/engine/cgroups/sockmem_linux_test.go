package cgroups

import "testing"

func TestSocketMemoryLimit(t *testing.T) {
	const mi = 1 << 20
	for name, tc := range map[string]struct {
		mem, hostMax, want int64
	}{
		"the memory limit":                {mem: 128 * mi, hostMax: 2048 * mi, want: 128 * mi},
		"an eighth of the host's ceiling": {mem: 4096 * mi, hostMax: 2048 * mi, want: 256 * mi},
		"no memory limit: the default":    {mem: 0, hostMax: 4096 * mi, want: defaultSocketMemory},
		"no memory limit, small host":     {mem: 0, hostMax: 1024 * mi, want: 128 * mi},
		"no memory limit, host unknown":   {mem: 0, hostMax: 0, want: defaultSocketMemory},
		"memory limit, host unknown":      {mem: 8192 * mi, hostMax: 0, want: 8192 * mi},
		"negative values are no limit":    {mem: -1, hostMax: -1, want: defaultSocketMemory},
		"a tiny host ceiling still caps":  {mem: 128 * mi, hostMax: 8 * mi, want: 1 * mi},
	} {
		if got := SocketMemoryLimit(tc.mem, tc.hostMax); got != tc.want {
			t.Errorf("%s: SocketMemoryLimit(%d, %d) = %d, want %d", name, tc.mem, tc.hostMax, got, tc.want)
		}
	}
}

func TestParseTCPMem(t *testing.T) {
	for in, want := range map[string]int64{
		"287889\t383855\t575778\n": 575778 * 4096,
		"1 2 3":                    3 * 4096,
		"":                         0,
		"1 2":                      0,
		"1 2 x":                    0,
		"1 2 -5":                   0,
		"1 2 0":                    0,
		"1 2 9223372036854775807":  0, // overflows in bytes
	} {
		if got := parseTCPMem(in, 4096); got != want {
			t.Errorf("parseTCPMem(%q) = %d, want %d", in, got, want)
		}
	}
}
