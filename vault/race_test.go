//go:build race

package vault

// raceEnabled: the race detector's shadow memory adds to the RSS.
const raceEnabled = true
