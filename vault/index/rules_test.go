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
