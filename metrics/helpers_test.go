package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func write(t *testing.T, m any) *dto.Metric {
	t.Helper()
	var pb dto.Metric
	if err := m.(prometheus.Metric).Write(&pb); err != nil {
		t.Fatal(err)
	}
	return &pb
}

func histogramCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	return write(t, o).GetHistogram().GetSampleCount()
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	return write(t, c).GetCounter().GetValue()
}

func seriesCount(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	n := 0
	for range ch {
		n++
	}
	return n
}
