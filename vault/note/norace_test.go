//go:build !race

package note

const raceEnabled = false
