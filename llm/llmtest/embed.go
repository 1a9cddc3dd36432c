package llmtest

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"unicode"
)

// Meaning groups words that mean one thing: every word of a group gets the
// same direction, so texts sharing a concept in any language or form are
// near each other. Words outside every group get a direction of their own,
// hashed from the word, nearly orthogonal to all others.
type Meaning [][]string

// Meanings is the [Embedder]'s default table: a few concepts, each in
// several forms and languages, for tests of search by meaning.
var Meanings = Meaning{
	{"sleep", "slept", "sleeping", "rest", "nap", "수면", "잠", "schlaf", "schlafen", "sommeil", "dormir"},
	{"garden", "gardening", "plant", "plants", "seeds", "정원", "garten", "jardin", "jardinage"},
	{"money", "budget", "expenses", "spending", "돈", "예산", "geld", "ausgaben", "argent", "dépenses"},
	{"run", "running", "ran", "jog", "jogging", "달리기", "laufen", "joggen", "course", "courir"},
	{"link", "links", "linking", "backlink", "wikilink", "링크", "verknüpfung", "lien", "liens"},
}

// EmbedCall is one embed request as the fake received it.
type EmbedCall struct {
	Model string
	Input []string
	// Truncate is Ollama's truncate field, nil when absent (Ollama then
	// cuts). The OpenAI fake sets it false: OpenAI never cuts.
	Truncate *bool
	// NumCtx is Ollama's options.num_ctx, 0 when absent.
	NumCtx int
}

// Embedder makes the fakes' vectors and keeps count of what it embedded.
// A text's vector is the normalised sum of its words' directions (see
// [Meaning]); words are runs of letters and digits, lower-cased. Its
// tokens are counted as the other fakes count them, characters / 4.
type Embedder struct {
	mu sync.Mutex // guards fields below
	// dims is the vectors' width.
	dims    int
	meaning map[string]int
	// context is the window in tokens; a longer input fails with
	// truncate false and is cut to fit otherwise, as Ollama does.
	context int
	calls   []EmbedCall
	inputs  int
	tokens  int
	// failStatus, when non-zero, fails every request with failMsg.
	failStatus int
	failMsg    string
	// held, when non-nil, holds every request until it is closed.
	held chan struct{}
}

// NewEmbedder makes vectors of dims values with meaning's groups.
func NewEmbedder(dims int, meaning Meaning) *Embedder {
	e := &Embedder{dims: dims, meaning: map[string]int{}}
	for g, words := range meaning {
		for _, w := range words {
			e.meaning[strings.ToLower(w)] = g
		}
	}
	return e
}

// Vector is text's vector, of unit length.
func (e *Embedder) Vector(text string) []float32 {
	e.mu.Lock()
	dims := e.dims
	e.mu.Unlock()
	sum := make([]float64, dims)
	for _, w := range words(text) {
		key := "word:" + w
		if g, ok := e.meaning[w]; ok {
			key = "meaning:" + string(rune('a'+g))
		}
		h := fnv.New64a()
		h.Write([]byte(key))
		r := rand.New(rand.NewPCG(h.Sum64(), 0x6d617267696e))
		for i := range sum {
			sum[i] += r.NormFloat64()
		}
	}
	var norm float64
	for _, x := range sum {
		norm += x * x
	}
	norm = math.Sqrt(norm)
	v := make([]float32, dims)
	for i, x := range sum {
		if norm > 0 {
			v[i] = float32(x / norm)
		}
	}
	return v
}

func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// SetDims changes the vectors' width from the next request on, as a
// change of model would.
func (e *Embedder) SetDims(dims int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dims = dims
}

// SetContext sets the window in tokens; 0 means no limit.
func (e *Embedder) SetContext(tokens int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.context = tokens
}

// Fail makes every request fail with status and msg (in the protocol's
// error body) until Fail(0, "").
func (e *Embedder) Fail(status int, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failStatus, e.failMsg = status, msg
}

// Hold holds every request from now on until release is called (or the
// client goes away), for tests that kill a caller mid-call. Release before
// the test ends: the server's Close waits for held requests.
func (e *Embedder) Hold() (release func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch := make(chan struct{})
	e.held = ch
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Lock()
			if e.held == ch {
				e.held = nil
			}
			e.mu.Unlock()
			close(ch)
		})
	}
}

// Calls are the requests received, in order.
func (e *Embedder) Calls() []EmbedCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]EmbedCall(nil), e.calls...)
}

// Inputs and Tokens are the texts and tokens embedded by requests that
// succeeded.
func (e *Embedder) Inputs() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.inputs
}

func (e *Embedder) Tokens() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.tokens
}

// embedReply is what a fake sends: vectors and tokens, or an error.
type embedReply struct {
	vectors [][]float32
	tokens  int
	status  int
	err     string
}

func (e *Embedder) record(call EmbedCall) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, call)
}

// serve waits while held, and embeds call's input.
func (e *Embedder) serve(r *http.Request, call EmbedCall) (embedReply, bool) {
	e.mu.Lock()
	held, status, msg, context := e.held, e.failStatus, e.failMsg, e.context
	e.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-r.Context().Done():
			return embedReply{}, false
		}
	}
	if status != 0 {
		return embedReply{status: status, err: msg}, true
	}
	var rep embedReply
	for _, text := range call.Input {
		n := estimate(len(text))
		if context > 0 && n > context {
			if call.Truncate != nil && !*call.Truncate {
				// Ollama's runner's words for it.
				return embedReply{status: http.StatusBadRequest, err: "the input length exceeds the context length"}, true
			}
			text, n = text[:context*4], context
		}
		rep.vectors = append(rep.vectors, e.Vector(text))
		rep.tokens += n
	}
	e.mu.Lock()
	e.inputs += len(call.Input)
	e.tokens += rep.tokens
	e.mu.Unlock()
	return rep, true
}
