//go:build unix

package vectors

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkPeakRSS runs a child process that opens the store of 100k
// notes, loads its codes and answers 200 queries, half of them filtered,
// and reports its peak resident memory and load time.
func BenchmarkPeakRSS(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("notes=%dk", n/1000), func(b *testing.B) {
			benchDB(b, n) // built here, not timed in the child
			var rss, load float64
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "-test.run=^TestPeakRSSChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), "MARGIN_VECTORS_RSS_NOTES="+fmt.Sprint(n))
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("child: %v\n%s", err, out)
				}
				var kb, ms float64
				if _, err := fmt.Sscanf(string(out[strings.Index(string(out), "rss "):]), "rss %f load %f", &kb, &ms); err != nil {
					b.Fatalf("child said %q: %v", out, err)
				}
				rss, load = max(rss, kb/1024), ms
			}
			b.ReportMetric(rss, "peak-rss-MB")
			b.ReportMetric(load, "load-ms")
		})
	}
}

func TestPeakRSSChild(t *testing.T) {
	env := os.Getenv("MARGIN_VECTORS_RSS_NOTES")
	if env == "" {
		t.Skip("the child of BenchmarkPeakRSS")
	}
	var n int
	fmt.Sscan(env, &n)
	v := benchDB(t, n)
	ctx := context.Background()
	start := time.Now()
	s, err := Open(ctx, v.path)
	if err != nil {
		t.Fatal(err)
	}
	// The first search reads the codes: load counts it.
	if _, err := s.Nearest(ctx, v.queries[0], 10, nil); err != nil {
		t.Fatal(err)
	}
	load := time.Since(start)
	for i := range 200 {
		var allow []string
		if i%2 == 1 {
			allow = v.allow
		}
		if _, err := s.Nearest(ctx, v.queries[i%len(v.queries)], 10, allow); err != nil {
			t.Fatal(err)
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("rss %d load %d\n", ru.Maxrss, load.Milliseconds())
	s.Close()
}
