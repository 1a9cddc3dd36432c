package review

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault/vaulttest"
)

// Each fault of a weak model (llmtest.Weak) over a review run ends in the
// review the vault's structure gives, signed offline and saying why: the
// weak model cites no note the run read, so none of its text, dates or
// links reaches the note, no proposal reaches a change set, nothing
// outside Margin/ is written, and its one call is counted.
func TestReviewOverAWeakModel(t *testing.T) {
	link := regexp.MustCompile(`\[\[([^\]#|]+)`)
	for _, fault := range llmtest.Faults {
		t.Run(string(fault), func(t *testing.T) {
			fake, model := fakeModel(t, llmtest.Weak{Fault: fault}.Ollama)
			r := newRig(t, model)
			p := &proposals{}
			r.opts.Proposer = p
			r.reopen()
			before := vaulttest.UserFiles(t, r.v.Dir())

			run := r.runNow("daily")
			got := r.read(run.Note)
			if run.GeneratedBy != GeneratedOffline || !strings.HasPrefix(run.Detail, "offline: ") || !strings.Contains(got, "generated_by: \"offline\"") {
				t.Errorf("run signed %q (%s), want offline:\n%s", run.GeneratedBy, run.Detail, got)
			}
			if !strings.Contains(got, "\nBuilt offline from the vault's structure: ") || !strings.Contains(got, "## Due\n\n- [[Projects/Kiln repair]]") {
				t.Errorf("the note is not the structure's, saying why:\n%s", got)
			}
			for _, junk := range []string{llmtest.ForeignText, llmtest.HeadingText, llmtest.MissingLink, llmtest.WordDate, "\n- ok\n"} {
				if strings.Contains(got, junk) {
					t.Errorf("the note holds the model's %q:\n%s", junk, got)
				}
			}
			for _, m := range link.FindAllStringSubmatch(got, -1) {
				if _, err := os.Stat(filepath.Join(r.v.Dir(), filepath.FromSlash(m[1])+".md")); err != nil {
					t.Errorf("the note links [[%s]], which is no note: %v", m[1], err)
				}
			}
			if len(p.got) != 0 {
				t.Errorf("proposals %q reached the change sets", p.got)
			}
			if out := vaulttest.Changed(before, vaulttest.UserFiles(t, r.v.Dir())); len(out) > 0 {
				t.Errorf("the run wrote or removed %v, outside Margin/", out)
			}
			if n := len(fake.Requests()); n != 1 || run.PromptTokens == 0 {
				t.Errorf("%d model calls, %d prompt tokens counted; want the one call, counted", n, run.PromptTokens)
			}
		})
	}
}
