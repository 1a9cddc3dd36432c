//go:build race

package note

// raceEnabled: the race detector drops sync.Pool items at random, so
// goldmark's regexps allocate afresh on every parse and allocation
// figures mean nothing.
const raceEnabled = true
