package query

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/golden"
	"github.com/margin-md/margin/vault/retrieve"
	"github.com/margin-md/margin/vault/vectors"
)

// embeddedVault is an indexed vault of notes with their vectors, made by
// the fake embedder, in which llmtest.Meanings' words are near each other.
func embeddedVault(t *testing.T, notes map[string]string) (*vault.Vault, *vectors.Store, golden.Embedder) {
	t.Helper()
	dir := t.TempDir()
	for p, text := range notes {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v := querytest.IndexedVault(t, dir)
	emb := golden.Embedder{E: llmtest.NewEmbedder(64, llmtest.Meanings)}
	s, err := golden.Embed(context.Background(), v.Index(), filepath.Join(t.TempDir(), vectors.FileName), emb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return v, s, emb
}

// TestQuestionSearchesByMeaning: with the notes' vectors, the question's
// retrieval finds the note that answers it in another language, which
// its words alone miss; without vectors it retrieves by words as before.
func TestQuestionSearchesByMeaning(t *testing.T) {
	v, s, emb := embeddedVault(t, map[string]string{
		"Schlaf.md":   "# Schlaf\n\nDiese Woche schlecht geschlafen; nach dem Mittag ein kurzer schlafen hilft.\n",
		"Garden.md":   "# Garden\n\nThe tomato plants need seeds sown in March.\n",
		"Running.md":  "# Running\n\nJogging five kilometres on Sunday, then a long nap.\n",
		"Expenses.md": "# Expenses\n\nThe budget for the month.\n",
	})
	ctx := context.Background()

	question := "how did I sleep this week"
	words := &Retriever{Index: v.Index(), MaxEntries: 200}
	got, err := words.Question(ctx, question, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got.Entries {
		if e.Path == "Schlaf.md" {
			t.Fatalf("the words alone found Schlaf.md: the test no longer needs meaning (%v)", linksOf(got.Entries))
		}
	}

	withoutVectors := &Retriever{Index: v.Index(), MaxEntries: 200, Meaning: retrieve.New(v.Index(), nil, emb, retrieve.Options{})}
	if again, err := withoutVectors.Question(ctx, question, nil, 1); err != nil || !slices.Equal(linksOf(again.Entries), linksOf(got.Entries)) || again.Attempts[0].Strategy != "keyword" {
		t.Errorf("without vectors: %v, %v (%s); want the words' %v", err, linksOf(again.Entries), again.Attempts[0].Strategy, linksOf(got.Entries))
	}
	if again, _ := withoutVectors.Question(ctx, question, nil, 1); again.KeywordOnly != retrieve.FallbackNoVectors {
		t.Errorf("without vectors the retrieval says %q of searching by keyword only, want %q", again.KeywordOnly, retrieve.FallbackNoVectors)
	}

	meaning := &Retriever{Index: v.Index(), MaxEntries: 200, Meaning: retrieve.New(v.Index(), s, emb, retrieve.Options{})}
	got, err = meaning.Question(ctx, question, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range got.Entries {
		found = found || e.Path == "Schlaf.md"
	}
	if !found || got.Attempts[0].Strategy != "hybrid+keyword" {
		t.Errorf("by meaning: %v (%s), want Schlaf.md among them, by hybrid+keyword", linksOf(got.Entries), got.Attempts[0].Strategy)
	}
	if got.KeywordOnly != "" {
		t.Errorf("by meaning, the retrieval says it searched by keyword only: %q", got.KeywordOnly)
	}
}

// TestQuestionOfShortWordsSearchesByMeaning: a question none of whose
// words the keyword searches take ("did I run?": all short or stop words)
// still finds its note by meaning; without vectors it says it searched by
// keyword and found no word to search for.
func TestQuestionOfShortWordsSearchesByMeaning(t *testing.T) {
	v, s, emb := embeddedVault(t, map[string]string{
		"Running.md": "# Running\n\nDid a run by the river: ran 5k.\n",
		"Garden.md":  "# Garden\n\nThe tomato plants need seeds sown in March.\n",
	})
	ctx := context.Background()
	question := "did I run?"
	if words := keywordsOf(question); len(words) != 0 {
		t.Fatalf("the keyword searches take %q of %q: the test no longer needs meaning", words, question)
	}

	without := &Retriever{Index: v.Index(), MaxEntries: 20, Meaning: retrieve.New(v.Index(), nil, emb, retrieve.Options{})}
	got, err := without.Question(ctx, question, nil, 1)
	if err != nil || len(got.Entries) != 0 || got.Attempts[0].Err == "" || got.KeywordOnly != retrieve.FallbackNoVectors {
		t.Errorf("without vectors: %v, %v, %+v (keyword only: %q); want nothing, the reason and why by keyword", err, linksOf(got.Entries), got.Attempts, got.KeywordOnly)
	}
	with := &Retriever{Index: v.Index(), MaxEntries: 20, Meaning: retrieve.New(v.Index(), s, emb, retrieve.Options{})}
	got, err = with.Question(ctx, question, nil, 1)
	best := slices.MaxFunc(append(got.Entries, Entry{}), func(a, b Entry) int { return cmp.Compare(a.Rank, b.Rank) })
	if err != nil || best.Path != "Running.md" || got.KeywordOnly != "" {
		t.Errorf("by meaning: %v, %v, best %q (keyword only %q); want Running.md best", err, linksOf(got.Entries), best.Path, got.KeywordOnly)
	}
}
