package export

import (
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// TestTextForecastConfidence: the text report shows a forecast's R²
// where a fit was made (a trend, or a fit too poor for one), and "-"
// where none was (no traffic in the series, a span too short), never an
// R² of 0.00 that no fit gave.
func TestTextForecastConfidence(t *testing.T) {
	trend := 150.0
	at := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		f    report.Forecast
		want string
	}{
		{"trend", report.Forecast{Key: "K", Class: "write", PeakUnitsPerSecond: 475, Headroom: 2.1, TrendPerDay: &trend, Growth: "linear", ReachesCeilingAt: &at, Confidence: 0.97}, "0.97"},
		{"poor fit", report.Forecast{Key: "K", Class: "write", PeakUnitsPerSecond: 10, Headroom: 100, Confidence: 0.31, Note: "no trend: the growth explains R² 0.31 of the series, under 0.70"}, "0.31"},
		{"no fit", report.Forecast{Key: "K", Class: "write", PeakUnitsPerSecond: 10, Headroom: 100, Note: "no traffic in the series"}, "-"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			writeForecasts(&b, report.TableReport{Table: "orders", Forecasts: []report.Forecast{tc.f}})
			var row []string
			for _, line := range strings.Split(b.String(), "\n") {
				if f := strings.Fields(line); len(f) > 0 && f[0] == "write" {
					row = f
				}
			}
			if len(row) < 2 {
				t.Fatalf("no forecast row in:\n%s", b.String())
			}
			// The R² is the column before the key, the last field.
			if got := row[len(row)-2]; got != tc.want {
				t.Errorf("R² column %q, want %q in:\n%s", got, tc.want, b.String())
			}
		})
	}
}
