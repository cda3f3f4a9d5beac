package engine

import "errors"

// Host id ranges of sandboxes: each sandbox's user namespace maps its ids
// 0..65535 onto a range of its own, from firstIDBase up, so no sandbox id is
// the engine's or another sandbox's, and root inside owns nothing outside.
const (
	firstIDBase = 1 << 30
	idRanges    = (1<<31 - firstIDBase) / idRangeSize // ranges below 2^31
)

var errNoIDRange = errors.New("no free host id range: every one of the 16,384 ranges is taken by a sandbox")

// nextIDBase picks the lowest free range given those in use.
func nextIDBase(used map[uint32]bool) (uint32, error) {
	for i := uint32(0); i < idRanges; i++ {
		base := firstIDBase + i*idRangeSize
		if !used[base] {
			return base, nil
		}
	}
	return 0, errNoIDRange
}
