package store

import "time"

// Stamp is a time as the state database stores it; "" for the zero time.
// Every part that writes a time there writes it so, and so reads it back
// with Unstamp and compares stamps as text.
func Stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// Unstamp reads what Stamp wrote.
func Unstamp(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s) // only Stamp's output is stored; "" is the zero time
	return t
}
