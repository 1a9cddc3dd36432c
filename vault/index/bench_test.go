package index

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/margin-md/margin/vault/note"
	"github.com/margin-md/margin/vault/vaultgen"
)

// Benchmarks for the figures of SPEC §9, over a 10,000-note vault from the
// repo's generator (vault/vaultgen: 60% daily notes with timed entries, 10%
// tasks, 30% reference notes; about 1.8 KB a note). Run them with
//
//	go test -bench . -run '^$' ./vault/index/
//
// Files are generated and read before the timers start: these measure the
// index (and, where the name says so, the parser), not the disk.
// MARGIN_BENCH_NOTES=100000 measures 100,000 notes instead (two minutes
// to build on two cores), as vault/retrieve's BenchmarkHybrid does.

const benchBatch = 250 // what the vault's scan applies at a time

// benchNotes is the size of the benchmarks' vault: MARGIN_BENCH_NOTES,
// 10,000 unless set.
var benchNotes = func() int {
	if n, err := strconv.Atoi(os.Getenv("MARGIN_BENCH_NOTES")); err == nil && n > 0 {
		return n
	}
	return 10_000
}()

var benchOpts = note.Options{Daily: note.DefaultDailyFormat(), TaskFolders: []string{"Tasks"}}

type benchFile struct {
	path    string
	content []byte
}

// benchVault generates the vault once per process and holds its markdown
// files in memory, in walk order.
var benchVault = sync.OnceValues(func() ([]benchFile, error) {
	dir, err := os.MkdirTemp("", "margin-index-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if _, err := vaultgen.Generate(dir, vaultgen.Options{Notes: benchNotes, Seed: 1}); err != nil {
		return nil, err
	}
	var files []benchFile
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") || strings.Contains(p, "/.obsidian/") {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files = append(files, benchFile{filepath.ToSlash(rel), data})
		return err
	})
	return files, err
})

func benchFiles(b *testing.B) []benchFile {
	b.Helper()
	files, err := benchVault()
	if err != nil {
		b.Fatal(err)
	}
	return files
}

func parseAll(files []benchFile) []Update {
	us := make([]Update, len(files))
	for i, f := range files {
		us[i] = Update{Path: f.path, Note: note.Parse(f.path, f.content, benchOpts), Content: f.content,
			Stat: FileStat{Size: int64(len(f.content)), MtimeNS: int64(i), Hash: f.path}}
	}
	return us
}

func openBench(b *testing.B, dbPath string) *Index {
	b.Helper()
	ix, err := Open(context.Background(), dbPath)
	if err != nil {
		b.Fatal(err)
	}
	return ix
}

func applyBatches(b *testing.B, ix *Index, us []Update) {
	b.Helper()
	for len(us) > 0 {
		n := min(benchBatch, len(us))
		if err := ix.Apply(context.Background(), us[:n]); err != nil {
			b.Fatal(err)
		}
		us = us[n:]
	}
}

// buildBench indexes the vault and optimizes it, as the vault's first scan
// does.
func buildBench(b *testing.B) *Index {
	b.Helper()
	ix := openBench(b, filepath.Join(b.TempDir(), "index.db"))
	b.Cleanup(func() { ix.Close() })
	applyBatches(b, ix, parseAll(benchFiles(b)))
	if err := ix.Optimize(context.Background()); err != nil {
		b.Fatal(err)
	}
	return ix
}

// BenchmarkIndexCold applies the parsed vault to an empty index in batches
// and reports notes/s; the Optimize that ends a cold index is reported apart.
func BenchmarkIndexCold(b *testing.B) {
	us := parseAll(benchFiles(b))
	var apply, optimize time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ix := openBench(b, filepath.Join(b.TempDir(), "index.db"))
		b.StartTimer()
		start := time.Now()
		applyBatches(b, ix, us)
		apply += time.Since(start)
		start = time.Now()
		if err := ix.Optimize(context.Background()); err != nil {
			b.Fatal(err)
		}
		optimize += time.Since(start)
		b.StopTimer()
		ix.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(len(us)*b.N)/apply.Seconds(), "notes/s")
	b.ReportMetric(float64(optimize.Milliseconds())/float64(b.N), "optimize-ms")
}

// BenchmarkIndexColdBulk is BenchmarkIndexCold the way the vault's first
// scan does it: inside a Bulk, whose Finish is included.
func BenchmarkIndexColdBulk(b *testing.B) {
	us := parseAll(benchFiles(b))
	var elapsed, finish time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ix := openBench(b, filepath.Join(b.TempDir(), "index.db"))
		b.StartTimer()
		start := time.Now()
		bulk, err := ix.BeginBulk(context.Background())
		if err != nil || bulk == nil {
			b.Fatal(bulk, err)
		}
		applyBatches(b, ix, us)
		f := time.Now()
		if err := bulk.Finish(context.Background()); err != nil {
			b.Fatal(err)
		}
		finish += time.Since(f)
		elapsed += time.Since(start)
		b.StopTimer()
		ix.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(len(us)*b.N)/elapsed.Seconds(), "notes/s")
	b.ReportMetric(float64(finish.Milliseconds())/float64(b.N), "finish-ms")
}

// BenchmarkIndexColdParsed is BenchmarkIndexCold with parsing included, done
// the way the vault's scan does it: parsers on every core feed batches to
// Apply, so parsing overlaps with writing.
func BenchmarkIndexColdParsed(b *testing.B) {
	files := benchFiles(b)
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ix := openBench(b, filepath.Join(b.TempDir(), "index.db"))
		b.StartTimer()
		start := time.Now()
		jobs := make(chan int)
		parsed := make(chan Update, 256)
		var wg sync.WaitGroup
		for range runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				for i := range jobs {
					f := files[i]
					parsed <- Update{Path: f.path, Note: note.Parse(f.path, f.content, benchOpts), Content: f.content,
						Stat: FileStat{Size: int64(len(f.content)), MtimeNS: int64(i), Hash: f.path}}
				}
			})
		}
		go func() {
			for i := range files {
				jobs <- i
			}
			close(jobs)
			wg.Wait()
			close(parsed)
		}()
		batch := make([]Update, 0, benchBatch)
		for u := range parsed {
			if batch = append(batch, u); len(batch) == benchBatch {
				applyBatches(b, ix, batch)
				batch = batch[:0]
			}
		}
		applyBatches(b, ix, batch)
		elapsed += time.Since(start)
		b.StopTimer()
		ix.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(len(files)*b.N)/elapsed.Seconds(), "notes/s")
}

// BenchmarkReopen measures a warm restart with nothing changed: open the
// state database, check the schema, and read every file's stat for the walk
// to compare against.
func BenchmarkReopen(b *testing.B) {
	dbPath := filepath.Join(b.TempDir(), "index.db")
	ix := openBench(b, dbPath)
	applyBatches(b, ix, parseAll(benchFiles(b)))
	ix.Close()
	ctx := context.Background()
	for b.Loop() {
		ix := openBench(b, dbPath)
		st, err := ix.Stat(ctx)
		if err != nil || len(st) != benchNotes {
			b.Fatalf("Stat: %d files, %v", len(st), err)
		}
		ix.Close()
	}
}

var benchQueries = []struct {
	name string
	q    Query
}{
	{"common-word", Query{Text: "sleep"}},
	{"two-words", Query{Text: "deploy latency"}},
	{"medium-word", Query{Text: "kubernetes"}},
	{"rare-word", Query{Text: "fjord"}},
	{"diacritics", Query{Text: "tomas"}},
	{"any", Query{Text: "invoice refund", Mode: ModeAny}},
	{"phrase", Query{Text: "bench press", Mode: ModePhrase}},
	{"prefix", Query{Text: "kube*"}},
	{"expanded", Query{Text: "k8s rollout", Mode: ModeAny, Expand: map[string][]string{"k8s": {"kubernetes"}, "rollout": {"deploy", "release"}}}},
	{"word+month", Query{Text: "deploy", From: "2026-03-01", To: "2026-03-31"}},
	{"word+glob", Query{Text: "latency", Glob: "Daily/2025-*.md"}},
	{"word+tag", Query{Text: "budget", Tags: []string{"work"}}},
	{"word+task-fields", Query{Text: "release", Fields: TaskFilter{Status: []string{"open"}}}},
	{"list-week", Query{From: "2026-11-01", To: "2026-11-07"}},
	{"list-tasks", Query{Fields: TaskFilter{Status: []string{"open", "in-progress"}, Priority: []string{"P0", "high"}}}},
}

// BenchmarkSearch runs each query of benchQueries (ns/op per query); "mix"
// runs them in turn and reports p50 and p99 latency over all of them.
func BenchmarkSearch(b *testing.B) {
	ix := buildBench(b)
	ctx := context.Background()
	for _, bq := range benchQueries {
		if hits, err := ix.Search(ctx, bq.q); err != nil || len(hits) == 0 {
			b.Fatalf("%s: %d hits, %v", bq.name, len(hits), err)
		}
	}
	for _, bq := range benchQueries {
		b.Run(bq.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := ix.Search(ctx, bq.q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("mix", func(b *testing.B) {
		var lat []time.Duration
		for i := 0; b.Loop(); i++ {
			start := time.Now()
			if _, err := ix.Search(ctx, benchQueries[i%len(benchQueries)].q); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	})
}

// benchWords are cmd/marginbench's queries (frequent, medium and rare words
// of the generated vault), run as it runs them: text only, 20 hits.
var benchWords = []string{"bench", "sleep", "deadlift", "invoice", "meeting notes", "tired", "protein", "release", "physio", "chezmoi"}

// BenchmarkSearchWords runs each of benchWords (ns/op per query); "mix"
// runs them in turn and reports p50 and p99 latency, the figure of SPEC §9.
func BenchmarkSearchWords(b *testing.B) {
	ix := buildBench(b)
	ctx := context.Background()
	for _, w := range benchWords {
		b.Run(strings.ReplaceAll(w, " ", "-"), func(b *testing.B) {
			for b.Loop() {
				if _, err := ix.Find(ctx, Query{Text: w, Limit: 20}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("mix", func(b *testing.B) {
		var lat []time.Duration
		for i := 0; b.Loop(); i++ {
			start := time.Now()
			if _, err := ix.Find(ctx, Query{Text: benchWords[i%len(benchWords)], Limit: 20}); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	})
}

// realWords are cmd/marginbench's searches of the Obsidian help vault: a
// word of each of its scripts and common English ones.
var realWords = []string{"canvas", "sync", "daily notes", "link", "노트", "プラグイン", "笔记", "σημείωση", "เลือก",
	"ឯកសារ", "করুন", "ملاحظة", "заметка", "Notiz", "הערה"}

// BenchmarkSearchReal is BenchmarkSearchWords over the index of a real
// vault, MARGIN_BENCH_INDEX: the .margin/index.db of a copy of the help
// vault (github.com/obsidianmd/obsidian-help) after `margin status`; it is
// skipped without one. It reports each search's total, to tell a faster
// search from one that finds less.
func BenchmarkSearchReal(b *testing.B) {
	path := os.Getenv("MARGIN_BENCH_INDEX")
	if path == "" {
		b.Skip("MARGIN_BENCH_INDEX names no index")
	}
	ix := openBench(b, path)
	b.Cleanup(func() { ix.Close() })
	ctx := context.Background()
	for _, w := range realWords {
		b.Run(w, func(b *testing.B) {
			var r Result
			for b.Loop() {
				var err error
				if r, err = ix.Find(ctx, Query{Text: w, Limit: 20}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(r.Total), "total")
		})
	}
	b.Run("mix", func(b *testing.B) {
		var lat []time.Duration
		for i := 0; b.Loop(); i++ {
			start := time.Now()
			if _, err := ix.Find(ctx, Query{Text: realWords[i%len(realWords)], Limit: 20}); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	})
}

// benchQuestions are questions a person types into search, which the
// default mode ranks by how many of their words a note holds: common
// words of the generated vault among them.
var benchQuestions = []string{
	"why did my bench press feel so heavy this week",
	"how much protein did I eat before the deadlift",
	"what did we decide about the release in the meeting",
	"when was the physio appointment for my shoulder",
}

// BenchmarkSearchQuestions runs each of benchQuestions in the default
// mode, 20 hits (ns/op per query); "mix" reports p50 and p99 latency.
func BenchmarkSearchQuestions(b *testing.B) {
	ix := buildBench(b)
	ctx := context.Background()
	for i, q := range benchQuestions {
		if r, err := ix.Find(ctx, Query{Text: q, Limit: 20}); err != nil || len(r.Hits) == 0 {
			b.Fatalf("%q: %d hits, %v", q, len(r.Hits), err)
		}
		b.Run(fmt.Sprint(i), func(b *testing.B) {
			for b.Loop() {
				if _, err := ix.Find(ctx, Query{Text: q, Limit: 20}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("mix", func(b *testing.B) {
		var lat []time.Duration
		for i := 0; b.Loop(); i++ {
			start := time.Now()
			if _, err := ix.Find(ctx, Query{Text: benchQuestions[i%len(benchQuestions)], Limit: 20}); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	})
}

// hybridQuestions are the questions of vault/retrieve's BenchmarkHybrid,
// whose keyword query runs them as below: the tail of its latencies. In
// the first, "badly" is in no note and "sleep" in nearly all, so every
// note holding it is in the lowest tier the page reaches.
var hybridQuestions = []string{
	"why did I sleep badly",
	"how heavy was the bench press last week",
	"what did the physio say about my knee",
}

// BenchmarkHybridQuestions runs each of hybridQuestions in the default
// mode, 20 hits, and reports its p50 and p99 latency; "mix" runs them in
// turn.
func BenchmarkHybridQuestions(b *testing.B) {
	ix := buildBench(b)
	ctx := context.Background()
	find := func(b *testing.B, text string) {
		if _, err := ix.Find(ctx, Query{Text: text, Limit: 20}); err != nil {
			b.Fatal(err)
		}
	}
	for _, q := range hybridQuestions {
		if r, err := ix.Find(ctx, Query{Text: q, Limit: 20}); err != nil || len(r.Hits) == 0 {
			b.Fatalf("%q: %d hits, %v", q, len(r.Hits), err)
		}
		b.Run(strings.ReplaceAll(q, " ", "-"), func(b *testing.B) {
			reportLatency(b, func(int) { find(b, q) })
		})
	}
	b.Run("mix", func(b *testing.B) {
		reportLatency(b, func(i int) { find(b, hybridQuestions[i%len(hybridQuestions)]) })
	})
}

// reportLatency runs run b.N times, the loop's count its argument, and
// reports the p50 and p99 of its latency, and the process's CPU time per
// run, which a shared machine's load moves far less than the latency.
func reportLatency(b *testing.B, run func(i int)) {
	var lat []time.Duration
	cpu := cpuTime()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		run(i)
		lat = append(lat, time.Since(start))
	}
	cpu = cpuTime() - cpu
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(lat)), "cpu-ms/op")
	}
}
