package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/margin-md/margin/vault/note"
)

// Domain is a domain module (seed 003 §8): knowledge the agents are given,
// not behaviour. It is read from Margin/Domains/<name>.md.
type Domain struct {
	Name        string
	Description string
	Base        bool
	// Vocabulary maps a term the user writes to its normal form
	// ("bench" → "bench press").
	Vocabulary      map[string]string
	EvaluationRules []string
	// LogSchema is the JSON schema of the data the Parser extracts for this
	// domain; nil when the domain logs nothing structured.
	LogSchema       json.RawMessage
	Expertise       string
	ContextGuidance string
	Path            string
}

// loadDomains reads every domain module in dir (vault-relative). A module
// that does not parse is skipped and reported, so one broken file cannot
// stop the flow.
func loadDomains(files Files, dir string) ([]Domain, []error) {
	entries, err := files.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []error{fmt.Errorf("reading domain modules: %w", err)}
	}
	var (
		out  []Domain
		errs []error
	)
	for _, f := range entries {
		if f.IsDir() || !strings.EqualFold(path.Ext(f.Name()), ".md") {
			continue
		}
		p := path.Join(dir, f.Name())
		data, err := files.ReadFile(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading domain %s: %w", p, err))
			continue
		}
		d, err := parseDomain(p, data)
		if err != nil {
			errs = append(errs, fmt.Errorf("domain %s: %w", p, err))
			continue
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errs
}

// parseDomain reads a domain note: frontmatter fields of SPEC §3.3 and the
// body sections `## Expertise` and `## Context Guidance`.
func parseDomain(p string, data []byte) (Domain, error) {
	var meta struct {
		Margin          string            `yaml:"margin"`
		Name            string            `yaml:"name"`
		Description     string            `yaml:"description"`
		Base            bool              `yaml:"base"`
		Vocabulary      map[string]string `yaml:"vocabulary"`
		EvaluationRules []string          `yaml:"evaluation_rules"`
		LogSchema       any               `yaml:"log_schema"`
	}
	if _, err := note.DecodeFrontmatter(data, &meta); errors.Is(err, note.ErrNoFrontmatter) {
		return Domain{}, err
	} else if err != nil {
		return Domain{}, fmt.Errorf("frontmatter: %w", err)
	}
	if meta.Margin != "domain" {
		return Domain{}, fmt.Errorf("frontmatter margin is %q, want domain", meta.Margin)
	}
	d := Domain{
		Name:            strings.TrimSpace(meta.Name),
		Description:     strings.TrimSpace(meta.Description),
		Base:            meta.Base,
		Vocabulary:      meta.Vocabulary,
		EvaluationRules: meta.EvaluationRules,
		Path:            p,
	}
	if d.Name == "" {
		d.Name = strings.TrimSuffix(path.Base(p), path.Ext(p))
	}
	if meta.LogSchema != nil {
		schema, err := logSchemaJSON(meta.LogSchema)
		if err != nil {
			return Domain{}, fmt.Errorf("log_schema: %w", err)
		}
		d.LogSchema = schema
	}
	sections, err := bodySections(data)
	if err != nil {
		return Domain{}, err
	}
	d.Expertise = sections["expertise"]
	d.ContextGuidance = sections["context guidance"]
	return d, nil
}

// logSchemaJSON accepts the schema as YAML (a map) or as a JSON string, and
// checks that it is a schema the Parser's output can be validated against.
func logSchemaJSON(v any) (json.RawMessage, error) {
	var raw []byte
	if s, ok := v.(string); ok {
		raw = []byte(s)
	} else {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if _, err := s.Resolve(nil); err != nil {
		return nil, err
	}
	return raw, nil
}

// bodySections maps the text of each `## Heading` (lower-cased) to its
// trimmed section, deeper headings included, as the index reads the note:
// a `## ` line in a code block starts no section.
func bodySections(data []byte) (map[string]string, error) {
	o := note.ParseOutline(data)
	if o.Plain != "" {
		return nil, fmt.Errorf("body not read: %s", o.Plain)
	}
	out := map[string]string{}
	for _, s := range o.Sections {
		if s.Level == 2 {
			out[strings.ToLower(s.Text)] = strings.ReplaceAll(s.BodyText(data), "\r\n", "\n")
		}
	}
	return out, nil
}

// Active is the combination of the base domains and the selected ones that
// the agents of one session see (seed 003 §8.5).
type Active struct {
	Loaded          []string
	Vocabulary      map[string]string
	Expertise       string
	EvaluationRules []string
	ContextGuidance string
	Schemas         map[string]json.RawMessage
	// Available are the domains not loaded, for expansion.
	Available []Domain
}

// combine builds the active context: every base domain, then the selected
// ones that exist, in the order given; unknown names are ignored.
func combine(all []Domain, selected []string) Active {
	a := Active{Vocabulary: map[string]string{}, Schemas: map[string]json.RawMessage{}}
	var use []Domain
	for _, d := range all {
		if d.Base {
			use = append(use, d)
		}
	}
	for _, name := range selected {
		for _, d := range all {
			if strings.EqualFold(d.Name, strings.TrimSpace(name)) && !d.Base && !slices.ContainsFunc(use, func(u Domain) bool { return u.Name == d.Name }) {
				use = append(use, d)
			}
		}
	}
	var expertise, guidance []string
	for _, d := range use {
		a.Loaded = append(a.Loaded, d.Name)
		for k, v := range d.Vocabulary {
			a.Vocabulary[k] = v
		}
		if d.Expertise != "" {
			expertise = append(expertise, "### "+d.Name+"\n"+d.Expertise)
		}
		if d.ContextGuidance != "" {
			guidance = append(guidance, "### "+d.Name+"\n"+d.ContextGuidance)
		}
		a.EvaluationRules = append(a.EvaluationRules, d.EvaluationRules...)
		if d.LogSchema != nil {
			a.Schemas[d.Name] = d.LogSchema
		}
	}
	for _, d := range all {
		if !slices.Contains(a.Loaded, d.Name) {
			a.Available = append(a.Available, d)
		}
	}
	a.Expertise = strings.Join(expertise, "\n\n")
	a.ContextGuidance = strings.Join(guidance, "\n\n")
	return a
}

// findDomain returns the canonical name of a domain by a model's spelling.
func findDomain(all []Domain, name string) (string, bool) {
	for _, d := range all {
		if strings.EqualFold(d.Name, strings.TrimSpace(name)) {
			return d.Name, true
		}
	}
	return "", false
}

// expansion maps every vocabulary term and normal form to the others of
// its group, so a search for either finds both (index.Query.Expand).
func expansion(vocab map[string]string) map[string][]string {
	groups := map[string][]string{}
	for term, normal := range vocab {
		n := strings.ToLower(strings.TrimSpace(normal))
		t := strings.ToLower(strings.TrimSpace(term))
		if n == "" || t == "" {
			continue
		}
		if !slices.Contains(groups[n], t) {
			groups[n] = append(groups[n], t)
		}
	}
	out := map[string][]string{}
	for normal, terms := range groups {
		all := append([]string{normal}, terms...)
		for _, w := range all {
			for _, other := range all {
				if other != w && !slices.Contains(out[w], other) {
					out[w] = append(out[w], other)
				}
			}
		}
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}
