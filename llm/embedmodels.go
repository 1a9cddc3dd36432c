package llm

import "strings"

// DefaultEmbedModel is the embed role's model on Ollama.
//
// embeddinggemma over qwen3-embedding:0.6b, from their public figures: on
// MTEB multilingual (mean of tasks) qwen3-embedding:0.6b scores 64.33 and
// embeddinggemma 61.15, a gap of about 5 %; but embeddinggemma has 308M
// parameters against 596M, so on the 2-core reference machine it embeds
// about twice the tokens a second in half the memory, and its vectors are
// 768 wide against 1024 (a quarter less to store and compare at 500k
// chunks). Both cover 100+ languages and both are Matryoshka-trained, so
// llm.embed.dims may cut either. qwen3-embedding's 32k context is no gain
// here: notes are embedded by section, and sections fit embeddinggemma's
// 2048 tokens or are split to fit. A person who wants the last points of
// recall sets llm.tiers.embed.ollama: qwen3-embedding:0.6b.
const DefaultEmbedModel = "embeddinggemma"

// embedFamily is what margin knows of one family of embedding models: the
// prefixes it was trained with, its native width and its context window.
// A model matches the family whose name its own starts with, once its
// namespace and tag are dropped and it is lower-cased ("google/
// embeddinggemma-300m", "embeddinggemma:latest" and "Qwen/Qwen3-Embedding-
// 0.6B" all match).
type embedFamily struct {
	name string
	// dims is the native width by size tag ("" for every size), 0 when
	// margin does not know it (the first call tells).
	dims map[string]int
	// context is the model's window in tokens.
	context int
	// document and query prefix a text; title may be "". A family with no
	// title slot gets the title as the text's first line.
	document func(title, text string) string
	query    func(text string) string
}

// embedFamilies is the one table of per-model rules. Each family's
// prefixes are the ones its model card asks for; a model outside the table
// gets its texts as they are and [unknownEmbedContext].
var embedFamilies = []embedFamily{
	{
		name: "embeddinggemma", dims: map[string]int{"": 768}, context: 2048,
		document: func(title, text string) string {
			if title == "" {
				title = "none"
			}
			return "title: " + title + " | text: " + text
		},
		query: func(text string) string { return "task: search result | query: " + text },
	},
	{
		// Qwen3-Embedding instructs queries only; documents go bare.
		name: "qwen3-embedding", dims: map[string]int{"0.6b": 1024, "4b": 2560, "8b": 4096}, context: 32768,
		query: func(text string) string {
			return "Instruct: Given a question, retrieve the notes that answer it\nQuery:" + text
		},
	},
	{
		name: "nomic-embed-text", dims: map[string]int{"": 768}, context: 2048,
		document: func(title, text string) string { return "search_document: " + withTitle(title, text) },
		query:    func(text string) string { return "search_query: " + text },
	},
	{
		name: "mxbai-embed-large", dims: map[string]int{"": 1024}, context: 512,
		query: func(text string) string { return "Represent this sentence for searching relevant passages: " + text },
	},
	{name: "bge-m3", dims: map[string]int{"": 1024}, context: 8192},
	{name: "text-embedding-3-small", dims: map[string]int{"": 1536}, context: 8191},
	{name: "text-embedding-3-large", dims: map[string]int{"": 3072}, context: 8191},
}

const (
	// unknownEmbedContext is the window assumed for a model outside the
	// table: 512 tokens is the smallest in common use (BERT-sized models),
	// so sections sized to it fit any model. llm.embed.num_ctx overrides it.
	unknownEmbedContext = 512
	// maxEmbedContext caps the window margin uses of a long-context model:
	// Ollama allocates the whole num_ctx for each sequence, and a section
	// longer than this is better split anyway.
	maxEmbedContext = 8192
	// embedPrefixTokens is kept free of a text for the longest prefix
	// (qwen3-embedding's instruction, about 15 tokens) and the start and
	// end tokens.
	embedPrefixTokens = 20
)

// withTitle puts a title line before text for families with no title slot.
func withTitle(title, text string) string {
	if title == "" {
		return text
	}
	return title + "\n\n" + text
}

// embedFamilyOf finds model's family, and the size tag within it.
func embedFamilyOf(model string) (embedFamily, string, bool) {
	base := strings.ToLower(model[strings.LastIndex(model, "/")+1:])
	for _, f := range embedFamilies {
		if rest, ok := strings.CutPrefix(base, f.name); ok {
			return f, strings.TrimLeft(rest, ":-_"), true
		}
	}
	return embedFamily{}, "", false
}

// nativeDims is the model's width when margin knows it, else 0.
func (f embedFamily) nativeDims(size string) int {
	if d, ok := f.dims[""]; ok {
		return d
	}
	for tag, d := range f.dims {
		if strings.HasPrefix(size, tag) {
			return d
		}
	}
	return 0
}

// prefixed is text as model wants it for kind.
func prefixed(model string, kind EmbedKind, title, text string) string {
	f, _, _ := embedFamilyOf(model)
	switch {
	case kind == EmbedQuery && f.query != nil:
		return f.query(text)
	case kind == EmbedQuery:
		return text
	case f.document != nil:
		return f.document(title, text)
	}
	return withTitle(title, text)
}
