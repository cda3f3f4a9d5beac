package engine

import "testing"

func TestNextIDBase(t *testing.T) {
	full := map[uint32]bool{}
	for i := uint32(0); i < idRanges; i++ {
		full[firstIDBase+i*idRangeSize] = true
	}
	cases := map[string]struct {
		used    map[uint32]bool
		want    uint32
		wantErr bool
	}{
		"none used":        {map[uint32]bool{}, firstIDBase, false},
		"first used":       {map[uint32]bool{firstIDBase: true}, firstIDBase + idRangeSize, false},
		"a gap is reused":  {map[uint32]bool{firstIDBase: true, firstIDBase + 2*idRangeSize: true}, firstIDBase + idRangeSize, false},
		"all taken":        {full, 0, true},
		"unrelated values": {map[uint32]bool{5: true}, firstIDBase, false},
	}
	for name, c := range cases {
		got, err := nextIDBase(c.used)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("%s: got %d, %v; want %d (error %v)", name, got, err, c.want, c.wantErr)
		}
		if err == nil && (got < firstIDBase || uint64(got)+idRangeSize > 1<<31) {
			t.Errorf("%s: range %d is outside [2^30, 2^31)", name, got)
		}
	}
}
