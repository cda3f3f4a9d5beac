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

// The controller's memory target is judged on the whole run's peak: the
// bursts' peak before the scale-up counts; the scale-up's own peak is
// shown without a target. Without readings the judged rows stay, missing.
func TestControllerRSSRowsJudgeTheWholeRun(t *testing.T) {
	k := &kwokSuite{RSS: []rssPoint{{Sandboxes: 2000, HWMMiB: 115}, {Sandboxes: 3000, HWMMiB: 80}, {Sandboxes: 5000, HWMMiB: 90}},
		ScalePeakReset: true, Restart: &rssPoint{Sandboxes: 5000, HWMMiB: 70}}
	judged := map[string]float64{}
	for _, r := range settleRows(k.rssRows()) {
		if r.Met != nil {
			judged[r.Figure] = r.P50
			if *r.Met != (r.P50*(1<<20) <= 100e6) {
				t.Errorf("%s: %v MiB judged met=%v", r.Figure, r.P50, *r.Met)
			}
		} else if r.P50 != 90 {
			t.Errorf("unjudged row %s: %v MiB, want the scale-up's 90", r.Figure, r.P50)
		}
	}
	if judged["controller peak RSS, whole run up to 5000 sandboxes"] != 115 || judged["controller peak RSS, fresh start with 5000 sandboxes"] != 70 || len(judged) != 2 {
		t.Errorf("judged rows: %v", judged)
	}

	none := settleRows((&kwokSuite{}).rssRows())
	if len(none) != 2 {
		t.Fatalf("rows without readings: %d, want the 2 judged ones", len(none))
	}
	for _, r := range none {
		if !r.Missing || r.Met == nil || *r.Met {
			t.Errorf("%s: missing %v met %v, want missing and not met", r.Figure, r.Missing, ptrBool(r.Met))
		}
	}
}
