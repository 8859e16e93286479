package analyze

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/internal/app/config"
)

// BenchmarkAnalyzeDistinctThrottledKeys is the million distinct throttled
// keys of issue 40 at a tenth of the scale: 100 000 calls of one table,
// each of its own key, throttled or not. Throttled keys past the store's
// 1 024 a class used to cost a scan of all of them for every new key.
func BenchmarkAnalyzeDistinctThrottledKeys(b *testing.B) {
	const keys = 100_000
	for _, throttled := range []bool{false, true} {
		path := filepath.Join(b.TempDir(), "keys.jsonl")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		for i := range keys {
			at := burstStart.Add(time.Duration(i%600) * time.Second)
			fmt.Fprintf(w, `{"ts":%q,"table":"users","pk":"USER#%07d","op":"PutItem","throttled":%t}`+"\n", at.Format(time.RFC3339), i, throttled)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		cfg := config.Default()
		b.Run(fmt.Sprintf("throttled=%t", throttled), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				err := Run(context.Background(), Config{Files: []string{path}, Pipeline: cfg.Pipeline(), Format: "json", Workers: 1, Stdout: io.Discard, Stderr: io.Discard})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/event")
		})
	}
}
