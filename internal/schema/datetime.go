package schema

import "time"

// dateTime judges the common form of a date-time string,
// YYYY-MM-DDTHH:MM:SS[.fraction]Z (T and Z in either case), exactly as
// the jsonschema library's "date-time" format does (a calendar date
// time.Parse accepts; hour ≤ 23, minute ≤ 59, second ≤ 60 and 60 only at
// 23:59). sure is false for any other form (a numeric offset, a
// malformed string): the library's check then decides. It reads bytes
// without copying them, where the library's check allocates.
func dateTime(b []byte) (valid, sure bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' && b[10] != 't' || b[13] != ':' || b[16] != ':' {
		return false, false
	}
	num := func(i, n int) (int, bool) {
		v := 0
		for _, c := range b[i : i+n] {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 2)
	day, ok3 := num(8, 2)
	hour, ok4 := num(11, 2)
	minute, ok5 := num(14, 2)
	sec, ok6 := num(17, 2)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 {
		return false, false
	}
	rest := b[19:]
	if rest[0] == '.' {
		d := 1
		for d < len(rest) && '0' <= rest[d] && rest[d] <= '9' {
			d++
		}
		if d == 1 {
			return false, false
		}
		rest = rest[d:]
	}
	if len(rest) != 1 || rest[0] != 'Z' && rest[0] != 'z' {
		return false, false
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(month, year) {
		return false, true
	}
	if hour > 23 || minute > 59 || sec > 60 || sec == 60 && (hour != 23 || minute != 59) {
		return false, true
	}
	return true, true
}

// daysIn is the number of days of month in year (proleptic Gregorian):
// day 0 of the next month is its last.
func daysIn(month, year int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
