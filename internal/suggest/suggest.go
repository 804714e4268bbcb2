// Package suggest finds the names nearest to a mistyped one, for "did you
// mean …?" in error messages (flags, configuration keys).
package suggest

// Nearest returns the candidates nearest to name by edit distance, within
// one edit for a name of up to 5 letters, two for a longer one; none when
// nothing is that near. Ties are all returned, in the candidates' order.
func Nearest(name string, candidates []string) []string {
	limit := 1
	if len(name) > 5 {
		limit = 2
	}
	var alike []string
	best := limit + 1
	for _, c := range candidates {
		d := Distance(name, c)
		switch {
		case d < best:
			best, alike = d, []string{c}
		case d == best:
			alike = append(alike, c)
		}
	}
	return alike
}

// Distance is the optimal string alignment distance of a and b: the
// insertions, deletions, substitutions and transpositions of adjacent
// bytes that make one the other.
func Distance(a, b string) int {
	// d[i][j] is the distance of a[:i] and b[:j].
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
