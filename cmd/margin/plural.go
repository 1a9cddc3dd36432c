package main

import "strconv"

// plural is n and noun, the noun in its plural form unless n is 1: the
// command line says "1 task", never "1 tasks".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
