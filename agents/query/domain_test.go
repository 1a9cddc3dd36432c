package query

import (
	"strings"
	"testing"
)

// TestParseDomain reads a domain module through vault/note: the header
// decoded into its types, the sections as the index sees them, so a `## `
// line in a code block stays in its section.
func TestParseDomain(t *testing.T) {
	src := "---\r\nmargin: domain\r\nname: Training\r\nbase: true\r\nvocabulary:\r\n  bp: bench press\r\nevaluation_rules: [one, two]\r\n---\r\n" +
		"# Training\r\n\r\n## Expertise\r\n\r\nLog sets like this:\r\n\r\n```\r\n## Context Guidance\r\nbench 3x5 100kg\r\n```\r\n\r\n### Units\r\n\r\nkg unless said.\r\n\r\n" +
		"## Context Guidance\r\n\r\nLook at the last four weeks.\r\n"
	d, err := parseDomain("Margin/Domains/training.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "Training" || !d.Base || d.Vocabulary["bp"] != "bench press" || len(d.EvaluationRules) != 2 {
		t.Errorf("header read as %+v", d)
	}
	wantExpertise := "Log sets like this:\n\n```\n## Context Guidance\nbench 3x5 100kg\n```\n\n### Units\n\nkg unless said."
	if d.Expertise != wantExpertise {
		t.Errorf("expertise %q, want %q", d.Expertise, wantExpertise)
	}
	if d.ContextGuidance != "Look at the last four weeks." {
		t.Errorf("context guidance %q", d.ContextGuidance)
	}
	for _, tc := range []struct{ src, want string }{
		{"# no header\n", "no frontmatter"},
		{"---\nmargin: domain\nbase: maybe\n---\n", "frontmatter: yaml: line 3: cannot unmarshal"},
		{"---\nmargin: context\n---\n", `margin is "context"`},
	} {
		if _, err := parseDomain("d.md", []byte(tc.src)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.src, err, tc.want)
		}
	}
}
