// Command vaultgen writes a synthetic Obsidian-style vault for benchmarks and
// soak tests. The same flags always give a byte-identical vault.
//
//	vaultgen -n 10000 -seed 1 -out bench-vaults/10k
//
// It prints what it wrote and how long it took on stderr. Exit status is 0 on
// success, 1 when the vault could not be written and 2 on bad flags.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/margin-md/margin/vault/vaultgen"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("vaultgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 10000, "number of markdown notes")
	seed := fs.Int64("seed", 1, "random seed; the same seed gives the same vault")
	out := fs.String("out", "", "directory to write the vault into (must be empty or absent)")
	start := fs.String("start", "", "date of the first daily note, YYYY-MM-DD (default: the log ends on "+
		vaultgen.DefaultEnd.Format("2006-01-02")+")")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: vaultgen [-n N] [-seed S] [-start YYYY-MM-DD] -out DIR")
		return 2
	}
	opts := vaultgen.Options{Notes: *n, Seed: *seed}
	if *start != "" {
		t, err := time.Parse("2006-01-02", *start)
		if err != nil {
			fmt.Fprintf(stderr, "vaultgen: -start: %v\n", err)
			return 2
		}
		opts.Start = t
	}

	began := time.Now()
	st, err := vaultgen.Generate(*out, opts)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	elapsed := time.Since(began)
	fmt.Fprintf(stderr, "wrote %d notes (%d daily %s..%s, %d tasks, %d other, %d with broken frontmatter) and %d other files, %.1f MB, to %s in %v (%.0f notes/s)\n",
		st.Notes, st.Daily, st.FirstDay, st.LastDay, st.Tasks, st.Other, len(st.Broken), st.NonNotes,
		float64(st.Bytes)/1e6, *out, elapsed.Round(time.Millisecond), float64(st.Notes)/elapsed.Seconds())
	fmt.Fprintf(stderr, "%d entries (%d corrections), %d linking a task; %d links\n",
		st.Entries, st.Corrections, st.Linked, st.Links)
	return 0
}
