package schemarepo

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Pretty renders a schema document as indented JSON with sorted keys, so
// that two versions diff line by line whatever their source format.
func Pretty(doc any) string {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return ""
	}
	return string(b) + "\n"
}

// maxDiffCells bounds the LCS table (lines(a) × lines(b)).
const maxDiffCells = 4 << 20

// Diff returns a unified-style line diff of a and b ("-" removed, "+"
// added, " " kept), or "" when they are equal. Inputs too large for the
// LCS table are shown as a whole replacement.
func Diff(a, b string) string {
	if a == b {
		return ""
	}
	la, lb := lines(a), lines(b)
	var out strings.Builder
	if len(la)*len(lb) > maxDiffCells {
		for _, l := range la {
			out.WriteString("-" + l)
		}
		for _, l := range lb {
			out.WriteString("+" + l)
		}
		return out.String()
	}
	// lcs[i][j] = length of the LCS of la[i:] and lb[j:].
	lcs := make([][]int32, len(la)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(lb)+1)
	}
	for i := len(la) - 1; i >= 0; i-- {
		for j := len(lb) - 1; j >= 0; j-- {
			if la[i] == lb[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(la) || j < len(lb) {
		switch {
		case i < len(la) && j < len(lb) && la[i] == lb[j]:
			out.WriteString(" " + la[i])
			i++
			j++
		case i < len(la) && (j == len(lb) || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("-" + la[i])
			i++
		default:
			out.WriteString("+" + lb[j])
			j++
		}
	}
	return out.String()
}

// lines splits s after each newline, dropping the empty tail.
func lines(s string) []string {
	l := strings.SplitAfter(s, "\n")
	if len(l) > 0 && l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

// DiffContext is Diff with only the changed lines and n unchanged lines
// around each run of changes; a run of unchanged lines left out is one
// line "  … (K lines unchanged)".
func DiffContext(a, b string, n int) string {
	full := lines(Diff(a, b))
	keep := make([]bool, len(full))
	for i, l := range full {
		if l[0] == ' ' {
			continue
		}
		for j := max(0, i-n); j <= min(len(full)-1, i+n); j++ {
			keep[j] = true
		}
	}
	var out strings.Builder
	for i := 0; i < len(full); {
		if keep[i] {
			out.WriteString(full[i])
			i++
			continue
		}
		j := i
		for j < len(full) && !keep[j] {
			j++
		}
		if j-i == 1 {
			out.WriteString("  … (1 line unchanged)\n")
		} else {
			out.WriteString("  … (" + strconv.Itoa(j-i) + " lines unchanged)\n")
		}
		i = j
	}
	return out.String()
}
