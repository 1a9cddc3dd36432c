//go:build !race

package vault

const raceEnabled = false
