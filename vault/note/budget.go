package note

import "fmt"

// A note must not stall indexing or take the memory of the whole vault, and
// some markdown takes goldmark far more than linear time or memory: a
// blockquote nested 300,000 deep on one line costs minutes, 5 MB of `[`
// 1.6 GB. A goroutine cannot be stopped nor its memory taken back, so
// budget looks at the text before goldmark does, in one linear pass, and
// estimates its cost from the shapes that make goldmark expensive. A body
// over the budget is indexed as plain text (Note.Plain says why).
//
// The figures come from measuring goldmark v1.8 on the pathological notes
// of vaulttest.Hostile (BenchmarkParseHostile); FuzzParseBudget checks that
// the memory estimate stays an upper bound.
const (
	// maxNesting is how many containers (blockquote '>' and list markers)
	// may open on one line. Goldmark's cost grows with the square of it;
	// real notes nest a handful deep.
	maxNesting = 32

	// maxInlineWork bounds the sum, over the note's text blocks, of a
	// block's length times its inline openers ('[', '*', '_', '<', '`').
	// Unclosed links and emphasis make goldmark rescan the rest of the
	// block from each opener; 5·10⁸ is ~0.3 s at worst on one core, and a
	// real note is far below (a 10 KB paragraph with 100 links: 10⁶).
	maxInlineWork = 5e8

	// maxParseBytes bounds the estimated allocation of one parse: goldmark's
	// nodes for each line and inline opener, and the note's own lists.
	// Several notes parse at once, so this stays well under the 200 MB a
	// whole vault may use.
	maxParseBytes = 48 << 20

	// maxAliases bounds the YAML aliases of a header: each may expand all
	// the aliases before it, so 8 give at most 2⁸ copies.
	maxAliases = 8

	// maxBracketDepth bounds how deep '[' nest in a block: goldmark's
	// memory grows with the square of it. Real notes nest two or three.
	maxBracketDepth = 64

	// Estimated allocation per line, per block-starting line (list item,
	// heading), per '[' and per emphasis or code delimiter: upper bounds of
	// what goldmark allocates for each, measured on runs of each shape
	// (a paragraph line ~500 bytes, a list item line ~1.1 KB, an unmatched
	// '[' ~0.5 KB and a '[' with its link ~1 KB, an emphasis
	// delimiter ~0.4 KB). Other characters cost goldmark little.
	lineCost     = 600
	blockCost    = 600
	bracketCost  = 1100
	emphasisCost = 450
	byteCost     = 4
	// A lone '\r' ends a line for margin's line index but not for
	// goldmark: it costs only its entry in the index (~40 bytes measured,
	// the slice grown by doubling).
	crCost = 48
)

// budget estimates the bytes parsing body allocates and says why it is over
// the budget, or "" when goldmark may parse it. The estimate is only
// complete when why is "".
func budget(body []byte) (cost int, why string) {
	var (
		lines, blocks, brackets, delims int
		loneCRs                         int // line ends to margin, not to goldmark
		work                            int // block length × openers, summed
		blockLen, openers, depth        int // the text block being read
	)
	for i := 0; i < len(body); {
		lines++
		// A line's leading containers; a blank line or a list item or
		// heading starts a new text block.
		nesting, j, item, blank := lineContainers(body, i)
		if nesting > maxNesting {
			return 0, fmt.Sprintf("%d blocks nested on line %d (more than %d)", nesting, lines, maxNesting)
		}
		if blank || item || j < len(body) && body[j] == '#' {
			work += blockLen * openers
			blockLen, openers, depth = 0, 0, 0
			if !blank {
				blocks++
			}
		}
		start := i
		for i = j; i < len(body); i++ {
			c := body[i]
			if !markup[c] {
				continue
			}
			if c == '\n' {
				break
			}
			switch c {
			case '[':
				brackets++
				openers++
				if depth++; depth > maxBracketDepth {
					return 0, fmt.Sprintf("brackets nested more than %d deep on line %d", maxBracketDepth, lines)
				}
			case ']':
				depth = max(depth-1, 0)
			case '<':
				openers++
			case '\r':
				if i+1 == len(body) || body[i+1] != '\n' {
					loneCRs++
				}
			default: // '*', '_', '`'
				delims++
				openers++
			}
		}
		i++ // the '\n'
		blockLen += min(i, len(body)) - start
		if work+blockLen*openers > maxInlineWork {
			return 0, fmt.Sprintf("%d markup characters in a block of %d bytes around line %d", openers, blockLen, lines)
		}
	}
	cost = lines*lineCost + loneCRs*crCost + blocks*blockCost + brackets*bracketCost + delims*emphasisCost + len(body)*byteCost
	if cost > maxParseBytes {
		return cost, fmt.Sprintf("parsing would take about %d MB (%d lines, %d blocks, %d brackets, %d emphasis and code delimiters)", cost>>20, lines, blocks, brackets, delims)
	}
	return cost, ""
}

// markup marks the bytes budget counts, and the line end.
var markup = [256]bool{'\n': true, '\r': true, '[': true, ']': true, '<': true, '*': true, '_': true, '`': true}

// lineContainers reads the blockquote and list markers that open a line at
// i: how deep they nest, where the rest of the line starts, whether a list
// item starts on it and whether the line is blank after them. A list marker
// indented by n columns counts n/2 levels more: that is how deep goldmark
// may nest it.
func lineContainers(b []byte, i int) (depth, rest int, item, blank bool) {
	for {
		j, cols := i, 0
		for j < len(b) && (b[j] == ' ' || b[j] == '\t') {
			cols++
			j++
		}
		if j >= len(b) || b[j] == '\n' || b[j] == '\r' {
			return depth, j, item, true
		}
		switch c := b[j]; {
		case c == '>':
			depth, i = depth+1+cols/2, j+1
			continue
		case c == '-' || c == '*' || c == '+':
			if j+1 < len(b) && (b[j+1] == ' ' || b[j+1] == '\t') {
				depth, i, item = depth+1+cols/2, j+2, true
				continue
			}
		case c >= '0' && c <= '9':
			k := j
			for k < len(b) && k-j < 9 && b[k] >= '0' && b[k] <= '9' {
				k++
			}
			if k+1 < len(b) && (b[k] == '.' || b[k] == ')') && (b[k+1] == ' ' || b[k+1] == '\t') {
				depth, i, item = depth+1+cols/2, k+2, true
				continue
			}
		}
		return depth, j, item, false
	}
}

// headerBudget is budget for the YAML header. yaml.v3 also allocates for
// each flow collection ('[', '{') and expands each alias in place, so a
// header of a few lines could decode to megabytes: flow collections are
// counted and may nest no deeper than brackets in the body, and a header
// may hold a few aliases only (Obsidian's properties never use them).
func headerBudget(yaml []byte) (cost int, why string) {
	if cost, why = budget(yaml); why != "" {
		return cost, why
	}
	depth, aliases := 0, 0
	for i, c := range yaml {
		switch c {
		case '[', '{':
			cost += bracketCost
			if depth++; depth > maxBracketDepth {
				return cost, fmt.Sprintf("YAML collections nested more than %d deep", maxBracketDepth)
			}
		case ']', '}':
			depth = max(depth-1, 0)
		case '*':
			if i > 0 && i+1 < len(yaml) && isAliasStart(yaml[i-1]) && yaml[i+1] > ' ' {
				if aliases++; aliases > maxAliases {
					return cost, fmt.Sprintf("more than %d YAML aliases", maxAliases)
				}
			}
		}
	}
	if cost > maxParseBytes {
		return cost, fmt.Sprintf("decoding would take about %d MB", cost>>20)
	}
	return cost, ""
}

// isAliasStart reports whether an alias may follow c: it stands where a
// YAML value starts.
func isAliasStart(c byte) bool {
	return c == ' ' || c == '\t' || c == '[' || c == '{' || c == ',' || c == '\n'
}
