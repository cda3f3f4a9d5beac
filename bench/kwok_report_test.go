package main

import "testing"

func TestControllerPeaks(t *testing.T) {
	pts := func(hwm ...float64) []rssPoint {
		var out []rssPoint
		for i, h := range hwm {
			out = append(out, rssPoint{Sandboxes: 1000 * (i + 2), HWMMiB: h})
		}
		return out
	}
	cases := map[string]struct {
		points       []rssPoint
		reset        bool
		suite, scale float64
		hasScale     bool
	}{
		"no points":                         {nil, true, 0, 0, false},
		"no reset: the last peak is all":    {pts(115, 115, 116), false, 116, 0, false},
		"reset: the bursts set the suite's": {pts(115, 80, 90), true, 115, 90, true},
		"reset: the scale-up set both":      {pts(85, 88, 97), true, 97, 97, true},
		"reset but no step after it":        {pts(115), true, 115, 115, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			suite, scale, has := controllerPeaks(tc.points, tc.reset)
			if suite != tc.suite || scale != tc.scale || has != tc.hasScale {
				t.Errorf("got %v %v %v, want %v %v %v", suite, scale, has, tc.suite, tc.scale, tc.hasScale)
			}
		})
	}
}
