package engine

import (
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// refusedBy evaluates rules as runc adds them: conditions on one argument
// are separate rules, any of which refuses.
func refusedBy(rules []specs.LinuxSyscall, name string, arg0 uint64) bool {
	for _, r := range rules {
		for _, n := range r.Names {
			if n != name {
				continue
			}
			for _, a := range r.Args {
				if (a.Op == specs.OpEqualTo && arg0 == a.Value) || (a.Op == specs.OpGreaterEqual && arg0 >= a.Value) {
					return true
				}
			}
		}
	}
	return false
}

func TestSocketRulesRefuseWhatIsNotNamespaced(t *testing.T) {
	rules := socketRules()
	for family, want := range map[uint64]bool{
		afUnix: false, afInet: false, afInet6: false, afNetlink: false,
		0: true, 15: true, 17: true, 21: true, 30: true, 31: true, 38: true, 40: true, 44: true, 45: true,
		afMax: true, 255: true, 1<<32 | 40: true, 1<<32 | afInet: true,
	} {
		for _, call := range []string{"socket", "socketpair"} {
			if got := refusedBy(rules, call, family); got != want {
				t.Errorf("%s(%d): refused %v, want %v", call, family, got, want)
			}
		}
	}
	for f := uint64(0); f < afMax; f++ {
		allowed := f == afUnix || f == afInet || f == afInet6 || f == afNetlink
		if _, ok := deniedFamilies[f]; ok == allowed {
			t.Errorf("family %d: in deniedFamilies %v, allowed %v: every family is one or the other", f, ok, allowed)
		}
	}
	for call, want := range map[uint64]bool{1: true, 8: true, 2: false, 3: false} {
		if got := refusedBy(rules, "socketcall", call); got != want {
			t.Errorf("socketcall(%d): refused %v, want %v", call, got, want)
		}
	}
}
