package lineformat

import "fmt"

// isNCSA reports whether b starts with the shape of a %t timestamp,
// DDDD-DD-DDTDD:DD:DD with D an ASCII digit.
func isNCSA(b []byte) bool {
	if len(b) < ncsaLen {
		return false
	}
	for i, c := range b[:ncsaLen] {
		switch i {
		case 4, 7:
			if c != '-' {
				return false
			}
		case 10:
			if c != 'T' {
				return false
			}
		case 13, 16:
			if c != ':' {
				return false
			}
		default:
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}

// parseNCSA converts a %t timestamp, YYYY-MM-DDTHH:MM:SS in UTC, whose
// shape the matcher has checked, to epoch seconds, as the original's calendar.timegm(time.strptime(s,
// "%Y-%m-%dT%H:%M:%S")) does: the year must be 1 to 9999, the day must
// exist in its month, and the second may be 60 or 61 (strptime allows leap
// seconds; they count on into the next minute).
func parseNCSA(b []byte) (int64, error) {
	if len(b) != ncsaLen {
		return 0, fmt.Errorf("%w: want YYYY-MM-DDTHH:MM:SS", ErrBadTimestamp)
	}
	num := func(i, n int) int64 {
		var v int64
		for _, c := range b[i : i+n] {
			v = v*10 + int64(c-'0')
		}
		return v
	}
	year, month, day := num(0, 4), num(5, 2), num(8, 2)
	hour, minute, sec := num(11, 2), num(14, 2), num(17, 2)
	switch {
	case year < 1:
		return 0, fmt.Errorf("%w: year 0", ErrBadTimestamp)
	case month < 1 || month > 12:
		return 0, fmt.Errorf("%w: month %d", ErrBadTimestamp, month)
	case day < 1 || day > daysIn(year, month):
		return 0, fmt.Errorf("%w: day %d of %04d-%02d", ErrBadTimestamp, day, year, month)
	case hour > 23:
		return 0, fmt.Errorf("%w: hour %d", ErrBadTimestamp, hour)
	case minute > 59:
		return 0, fmt.Errorf("%w: minute %d", ErrBadTimestamp, minute)
	case sec > 61:
		return 0, fmt.Errorf("%w: second %d", ErrBadTimestamp, sec)
	}
	return daysFromCivil(year, month, day)*86400 + hour*3600 + minute*60 + sec, nil
}

func daysIn(year, month int64) int64 {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	default:
		return 31
	}
}

// daysFromCivil returns the number of days from 1970-01-01 to the given
// proleptic Gregorian date, for years 1 to 9999 (H. Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400 // y >= 0 here
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
