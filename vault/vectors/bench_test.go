package vectors

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite/vec" // the alternative measured: sqlite-vec's vec0
)

// The benchmarks run over synthetic vaults of 10,000 and 100,000 notes of
// five chunks each (500,000 chunks at 100k), 384 dimensions, in clusters
// as real embeddings are (a query near a cluster, chunks near their
// cluster's centre). Each vault's database is built once and kept in the
// temp dir (some 250 MB at 100k), keyed by its shape and the schema.
//
//	go test -run '^$' -bench Nearest -benchtime 200x ./vault/vectors/
//	go test -run '^$' -bench PeakRSS -benchtime 1x ./vault/vectors/
//
// (PeakRSS starts a child process an iteration.) The first run builds the
// databases: some two minutes at 100k notes.
//
// BenchmarkNearest reports p50-ms and p99-ms a query (filter applied
// before ranking included), recall@10 against exact int8 ranking, and,
// at 10k notes, the same query through vec0 (float[384] and bit[384]
// tables, brute force: vec0 has no index) as vec0-p50-ms and the ratio
// vec0-p50/p50. BenchmarkPeakRSS opens the store in a child process,
// loads its codes and answers queries, and reports the child's peak RSS.

const (
	benchDims     = 384
	benchChunks   = 5 // a note
	benchClusters = 2000
)

var benchSizes = []int{10_000, 100_000}

// benchVault is a synthetic vault's database and what the benchmarks
// query it with.
type benchVault struct {
	path    string
	notes   int
	queries [][]float32
	allow   []string // a tenth of the notes, at random
}

// benchDB returns the database of a synthetic vault of notes notes,
// building it if the temp dir has none.
func benchDB(b testing.TB, notes int) benchVault {
	b.Helper()
	v := benchVault{notes: notes}
	v.path = filepath.Join(os.TempDir(), fmt.Sprintf("margin-vectors-bench-%d-%d-%d-%d.db", notes, benchChunks, benchDims, len(schema)))
	r := rand.New(rand.NewPCG(uint64(notes), 1))
	centres := make([][]float32, benchClusters)
	for i := range centres {
		centres[i] = randomVector(r, nil, 0)
	}
	// Queries and filters are drawn after the vault, from their own seed.
	qr := rand.New(rand.NewPCG(99, uint64(notes)))
	for range 64 {
		v.queries = append(v.queries, randomVector(qr, centres[qr.IntN(benchClusters)], 0.6))
	}
	for i := range notes {
		if qr.IntN(10) == 0 {
			v.allow = append(v.allow, benchPath(i))
		}
	}
	if _, err := os.Stat(v.path); err == nil {
		return v
	}
	tmp := v.path + ".building"
	os.Remove(tmp)
	os.Remove(tmp + "-wal")
	ctx := context.Background()
	s, err := Open(ctx, tmp)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.useModel(ctx, fmt.Sprintf("bench/synthetic/%d", benchDims)); err != nil {
		b.Fatal(err)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`UPDATE models SET dims = ?`, benchDims); err != nil {
			return err
		}
		for i := range notes {
			if _, err := tx.Exec(`INSERT INTO notes (id, path, mtime_ns, version, pending) VALUES (?, ?, ?, 'v', 0)`, i+1, benchPath(i), i); err != nil {
				return err
			}
			for c := range benchChunks {
				u := normalize(randomVector(r, centres[r.IntN(benchClusters)], 0.8))
				h := hashOf(fmt.Sprint(i, c))
				q8, scale := quantize(u)
				if _, err := tx.Exec(`INSERT INTO chunks (note_id, ord, line, heading, hash, tokens) VALUES (?, ?, ?, 'Heading', ?, 100)`, i+1, c, 1+10*c, h[:]); err != nil {
					return err
				}
				if _, err := tx.Exec(`INSERT INTO vectors (model, hash, scale, q8, bits) VALUES (1, ?, ?, ?, ?)`, h[:], scale, q8, codeBytes(signBits(u))); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	s.Close()
	if err := os.Rename(tmp, v.path); err != nil {
		b.Fatal(err)
	}
	os.Remove(tmp + "-wal")
	os.Remove(tmp + "-shm")
	return v
}

func benchPath(i int) string { return fmt.Sprintf("notes/%03d/%06d.md", i%1000, i) }

// randomVector is centre plus gaussian noise of spread sigma a dimension
// (relative to the centre's), or a random direction without a centre.
func randomVector(r *rand.Rand, centre []float32, sigma float64) []float32 {
	v := make([]float32, benchDims)
	for i := range v {
		x := r.NormFloat64()
		if centre != nil {
			x = float64(centre[i]) + sigma*x
		}
		v[i] = float32(x)
	}
	return v
}

// timings collects query durations and reports their percentiles.
type timings []time.Duration

func (ts timings) report(b *testing.B, prefix string) float64 {
	slices.Sort(ts)
	p := func(q float64) float64 { return float64(ts[int(q*float64(len(ts)-1))].Microseconds()) / 1000 }
	b.ReportMetric(p(0.5), prefix+"p50-ms")
	b.ReportMetric(p(0.99), prefix+"p99-ms")
	return p(0.5)
}

func BenchmarkNearest(b *testing.B) {
	ctx := context.Background()
	for _, n := range benchSizes {
		v := benchDB(b, n)
		s, err := Open(ctx, v.path)
		if err != nil {
			b.Fatal(err)
		}
		// The first search reads the codes, which no timing should hold.
		if _, err := s.Nearest(ctx, v.queries[0], 10, nil); err != nil {
			b.Fatal(err)
		}
		for _, filter := range []string{"none", "tenth"} {
			b.Run(fmt.Sprintf("notes=%dk/filter=%s", n/1000, filter), func(b *testing.B) {
				var allow []string
				if filter == "tenth" {
					allow = v.allow
				}
				var ts timings
				i := 0
				for b.Loop() {
					t := time.Now()
					ms, err := s.Nearest(ctx, v.queries[i%len(v.queries)], 10, allow)
					ts = append(ts, time.Since(t))
					if err != nil || len(ms) != 10 {
						b.Fatalf("Nearest = %d matches, %v", len(ms), err)
					}
					i++
				}
				ours := ts.report(b, "")
				b.ReportMetric(recall(b, s, v, allow), "recall@10")
				if n == benchSizes[0] && filter == "none" {
					for _, kind := range []string{"float", "bit"} {
						vt := vec0Timings(b, s, v, kind)
						theirs := vt.report(b, "vec0-"+kind+"-")
						b.ReportMetric(theirs/ours, "vec0-"+kind+"/ours")
					}
				}
			})
		}
		s.Close()
	}
}

// recall is the share of the exact 10 nearest notes (by cosine to the
// int8 vectors, every allowed chunk scored) that Nearest finds, over 8
// queries scored in one pass over the database.
func recall(b *testing.B, s *Store, v benchVault, allow []string) float64 {
	ctx := context.Background()
	allowed := map[string]bool{}
	for _, p := range allow {
		allowed[p] = true
	}
	qs := v.queries[:8]
	units := make([][]float32, len(qs))
	best := make([]map[string]float32, len(qs))
	for i, q := range qs {
		units[i], best[i] = normalize(q), map[string]float32{}
	}
	err := collect(ctx, s.db, `SELECT n.path, v.q8 FROM chunks c JOIN notes n ON n.id = c.note_id JOIN vectors v ON v.hash = c.hash`, nil, func(r *sql.Rows) error {
		var p string
		var q8 sql.RawBytes
		if err := r.Scan(&p, &q8); err != nil {
			return err
		}
		if allow != nil && !allowed[p] {
			return nil
		}
		for i, u := range units {
			if sc, ok := best[i][p]; !ok || cosineInt8(u, q8) > sc {
				best[i][p] = cosineInt8(u, q8)
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	var found, total int
	for i, q := range qs {
		paths := make([]string, 0, len(best[i]))
		for p := range best[i] {
			paths = append(paths, p)
		}
		slices.SortFunc(paths, func(a, c string) int {
			if d := cmp.Compare(best[i][c], best[i][a]); d != 0 {
				return d
			}
			return strings.Compare(a, c)
		})
		ms, err := s.Nearest(ctx, q, 10, allow)
		if err != nil {
			b.Fatal(err)
		}
		got := map[string]bool{}
		for _, m := range ms {
			got[m.Path] = true
		}
		for _, p := range paths[:10] {
			total++
			if got[p] {
				found++
			}
		}
	}
	return float64(found) / float64(total)
}

// vec0Timings times the 10 nearest chunks through a vec0 table of kind
// float or bit holding the same vectors, built beside the vault's
// database on first use.
func vec0Timings(b *testing.B, s *Store, v benchVault, kind string) timings {
	b.Helper()
	path := strings.TrimSuffix(v.path, ".db") + "-vec0.db"
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var exists int
	db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'vf'`).Scan(&exists)
	if exists == 0 {
		stmts := []string{
			`CREATE VIRTUAL TABLE vf USING vec0(embedding float[384])`,
			`CREATE VIRTUAL TABLE vb USING vec0(embedding bit[384])`,
			`ATTACH '` + v.path + `' AS src`,
			`BEGIN`,
		}
		for _, st := range stmts {
			if _, err := db.Exec(st); err != nil {
				b.Fatal(err)
			}
		}
		rows, err := db.Query(`SELECT id, scale, q8 FROM src.vectors`)
		if err != nil {
			b.Fatal(err)
		}
		type row struct {
			id int64
			v  []float32
		}
		var all []row
		for rows.Next() {
			var id int64
			var scale float32
			var q8 []byte
			if err := rows.Scan(&id, &scale, &q8); err != nil {
				b.Fatal(err)
			}
			all = append(all, row{id, dequantize(q8, scale)})
		}
		rows.Close()
		for _, r := range all {
			if _, err := db.Exec(`INSERT INTO vf (rowid, embedding) VALUES (?, ?)`, r.id, floatBlob(r.v)); err != nil {
				b.Fatal(err)
			}
			if _, err := db.Exec(`INSERT INTO vb (rowid, embedding) VALUES (?, vec_quantize_binary(?))`, r.id, floatBlob(r.v)); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := db.Exec(`COMMIT`); err != nil {
			b.Fatal(err)
		}
		db.Exec(`DETACH src`)
	}
	q := `SELECT rowid, distance FROM vf WHERE embedding MATCH ? AND k = 10`
	if kind == "bit" {
		// Candidates for rescoring, as ours: the 100 nearest codes.
		q = `SELECT rowid, distance FROM vb WHERE embedding MATCH vec_quantize_binary(?) AND k = 100`
	}
	var ts timings
	for i := range 32 {
		t := time.Now()
		rows, err := db.Query(q, floatBlob(normalize(v.queries[i%len(v.queries)])))
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		if err := rows.Err(); err != nil || n == 0 {
			b.Fatalf("vec0 %s: %d rows, %v", kind, n, err)
		}
		rows.Close()
		ts = append(ts, time.Since(t))
	}
	return ts
}

func floatBlob(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}
