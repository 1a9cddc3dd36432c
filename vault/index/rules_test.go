package index

import (
	"context"
	"testing"
)

func TestRulesFingerprintSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	ix, path := openIndex(t)
	if fp, err := ix.Rules(ctx); err != nil || fp != "" {
		t.Fatalf("a new index: Rules = %q, %v; want none", fp, err)
	}
	if err := ix.SetRules(ctx, "abc"); err != nil {
		t.Fatal(err)
	}
	if err := ix.SetRules(ctx, "def"); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	ix, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if fp, err := ix.Rules(ctx); err != nil || fp != "def" {
		t.Errorf("after reopening: Rules = %q, %v; want the last one set", fp, err)
	}
}

func TestResetEmptiesTheIndexButNotItsRules(t *testing.T) {
	ctx := context.Background()
	ix, _ := openIndex(t)
	if err := ix.Apply(ctx, []Update{vault[0].update(), vault[1].update()}); err != nil {
		t.Fatal(err)
	}
	if err := ix.SetRules(ctx, "abc"); err != nil {
		t.Fatal(err)
	}
	if c, _ := ix.Counts(ctx); c.Notes == 0 {
		t.Fatal("nothing indexed")
	}
	if err := ix.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := ix.Counts(ctx); err != nil || c != (Counts{}) {
		t.Errorf("Counts after Reset = %+v, %v; want zero", c, err)
	}
	if hits, err := ix.Search(ctx, Query{Text: "the"}); err != nil || len(hits) != 0 {
		t.Errorf("Search after Reset = %d hits, %v", len(hits), err)
	}
	if err := ix.Check(ctx); err != nil {
		t.Errorf("Check after Reset: %v", err)
	}
	if fp, _ := ix.Rules(ctx); fp != "abc" {
		t.Errorf("Rules after Reset = %q", fp)
	}
	// A cold build fits in the emptied index.
	b, err := ix.BeginBulk(ctx)
	if err != nil || b == nil {
		t.Fatalf("BeginBulk after Reset = %v, %v; want a cold build", b, err)
	}
	if err := ix.Apply(ctx, []Update{vault[0].update()}); err != nil {
		t.Fatal(err)
	}
	if err := b.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ix.Check(ctx); err != nil {
		t.Errorf("Check after the rebuild: %v", err)
	}
}
