package v1alpha1

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseExposedPorts(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     string // ports in order, "-" separated
	}{
		{"empty", "", ""},
		{"not json", "{", ""},
		{"sorted by port", `[{"id":"bbbb","port":9000,"protocol":"tcp"},{"id":"aaaa","port":8000,"protocol":"http"}]`, "8000-9000"},
		{"bad id", `[{"id":"AB!","port":8000,"protocol":"http"},{"id":"a1","port":8001,"protocol":"http"},{"id":"ok","port":8002,"protocol":"http"}]`, "8002"},
		{"agent ports", `[{"id":"aa","port":7070,"protocol":"http"},{"id":"ab","port":7071,"protocol":"http"},{"id":"ac","port":0,"protocol":"http"},{"id":"ad","port":70000,"protocol":"http"}]`, ""},
		{"protocol", `[{"id":"aa","port":80,"protocol":"udp"},{"id":"ab","port":81,"protocol":""}]`, ""},
		{"duplicates: first wins", `[{"id":"aa","port":80,"protocol":"http"},{"id":"aa","port":81,"protocol":"http"},{"id":"ab","port":80,"protocol":"http"}]`, "80"},
		{"id too long", `[{"id":"` + strings.Repeat("a", 33) + `","port":80,"protocol":"http"}]`, ""},
	} {
		var got []string
		for _, p := range ParseExposedPorts(tc.in) {
			got = append(got, strconv.Itoa(int(p.Port)))
		}
		if strings.Join(got, "-") != tc.want {
			t.Errorf("%s: ports %v, want %s", tc.name, got, tc.want)
		}
	}
	var many []ExposedPort
	for i := range 40 {
		many = append(many, ExposedPort{ID: "a" + strings.Repeat("b", i%30) + string(rune('a'+i/30)), Port: int32(1000 + i), Protocol: "http"})
	}
	if got := ParseExposedPorts(FormatExposedPorts(many)); len(got) != MaxExposedPorts {
		t.Errorf("kept %d of 40, want %d", len(got), MaxExposedPorts)
	}
	if FormatExposedPorts(nil) != "" {
		t.Error("an empty list must remove the annotation")
	}
}
