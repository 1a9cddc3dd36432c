package templates

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// A directive a model proposes is made to fit its template file where the
// fix is mechanical (a heading of level 1 or 2 becomes ###), and then
// reads back from the file as fitted; what is not mechanical is left to
// the author with the reason.
func TestFitDirective(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		demoted        []string
		problem        bool
	}{
		{"report headings", "Finish with update_report.\n\n## ✅ Achieved\n- done work\n\n## 📋 Left\n- [ ] open work\n",
			"Finish with update_report.\n\n### ✅ Achieved\n- done work\n\n### 📋 Left\n- [ ] open work\n", []string{"## ✅ Achieved", "## 📋 Left"}, false},
		{"level 1 first line", "# Rules\nBe terse.", "### Rules\nBe terse.", []string{"# Rules"}, false},
		{"closing hashes", "## Tone ##\nPlain.", "### Tone\nPlain.", []string{"## Tone ##"}, false},
		{"setext", "Rules\n---\nNo tables.", "### Rules\nNo tables.", []string{"Rules\n---"}, false},
		{"deeper headings stay", "### Tone\nPlain.\n#### More\nx", "### Tone\nPlain.\n#### More\nx", nil, false},
		{"a heading in code stays", "```md\n## Example\n```\nDone.", "```md\n## Example\n```\nDone.", nil, false},
		{"an open fence is the author's", "## Steps\n```\ncode", "### Steps\n```\ncode", []string{"## Steps"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, demoted, problem := FitDirective(tc.in)
			if got != tc.want || !slices.Equal(demoted, tc.demoted) || (problem != "") != tc.problem {
				t.Fatalf("FitDirective(%q) = %q, %q, %q\nwant %q, %q, problem %v", tc.in, got, demoted, problem, tc.want, tc.demoted, tc.problem)
			}
			if problem != "" {
				return
			}
			tmpl := Template{Name: TaskAgent, Kind: KindTask, Version: 2, Status: StatusActive, AuthoredBy: ByEvolution,
				Created: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), General: "Be terse.", Report: got}
			back, err := Parse("x.md", Render(tmpl))
			if err != nil || back.Report != strings.TrimSpace(got) {
				t.Errorf("the fitted directive read back as %q, %v", back.Report, err)
			}
		})
	}
}
