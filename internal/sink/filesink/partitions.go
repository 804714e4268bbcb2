package filesink

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The hour partitions of a root, as the sink writes them and as purge
// finds and removes them.

// hourDir returns the directory of an hour of a topic, relative to the
// root: <topic>/year=YYYY/month=MM/day=DD/hour=HH.
func hourDir(topic string, hour int64) string {
	t := time.Unix(hour, 0).UTC()
	return fmt.Sprintf("%s/year=%04d/month=%02d/day=%02d/hour=%02d", topic, t.Year(), int(t.Month()), t.Day(), t.Hour())
}

// hourLevels are the directory levels of hourDir under a topic, with the
// range of each value.
var hourLevels = []struct {
	key      string
	min, max int
}{{"year", 0, 9999}, {"month", 1, 12}, {"day", 1, 31}, {"hour", 0, 23}}

// removingSuffix ends the hidden name RemoveHour gives an hour directory
// before removing it (".hour=HH" + removingSuffix). The name is the one
// purge has always used, so directories an older purge left are found.
const removingSuffix = ".purge-deleting"

// Hour is an hour partition of a root.
type Hour struct {
	// Dir is the partition's directory: the root joined with
	// <topic>/year=YYYY/month=MM/day=DD/hour=HH.
	Dir string
	// Start is the first instant of the hour, UTC.
	Start time.Time
}

// Hours lists the hour partitions under root, in path order: the
// directories <topic>/year=YYYY/month=MM/day=DD/hour=HH whose values name
// a real hour, under every topic directory whose name starts with neither
// "_" (the sink's state) nor ".". Other entries are ignored.
//
// It also returns the hour directories RemoveHour left hidden when it was
// interrupted, for the caller to remove (os.RemoveAll), and the errors of
// the directories it could not read, going on with the others.
func Hours(root string) (hours []Hour, removing []string, errs []error) {
	topics, err := os.ReadDir(root)
	if err != nil {
		return nil, nil, []error{err}
	}
	var walk func(dir string, level int, vals []int)
	walk = func(dir string, level int, vals []int) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, err)
			return
		}
		lv := hourLevels[level]
		last := level == len(hourLevels)-1
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			if last && strings.HasPrefix(e.Name(), ".") && strings.HasSuffix(e.Name(), removingSuffix) {
				removing = append(removing, filepath.Join(dir, e.Name()))
				continue
			}
			v, ok := strings.CutPrefix(e.Name(), lv.key+"=")
			if !ok {
				continue
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < lv.min || n > lv.max {
				continue
			}
			vs := append(vals[:level:level], n)
			if !last {
				walk(filepath.Join(dir, e.Name()), level+1, vs)
				continue
			}
			start := time.Date(vs[0], time.Month(vs[1]), vs[2], vs[3], 0, 0, 0, time.UTC)
			if start.Day() != vs[2] {
				continue // no such date
			}
			hours = append(hours, Hour{Dir: filepath.Join(dir, e.Name()), Start: start})
		}
	}
	for _, t := range topics {
		if !t.IsDir() || strings.HasPrefix(t.Name(), "_") || strings.HasPrefix(t.Name(), ".") {
			continue
		}
		walk(filepath.Join(root, t.Name()), 0, nil)
	}
	return hours, removing, errs
}

// RemoveHour removes an hour partition directory (an Hour's Dir) so that
// readers never see part of it: it is renamed to a hidden name first (which
// Hours reports until it is gone), the rename made durable, and then
// removed. The day, month and year directories it leaves empty are removed
// too, best effort.
func RemoveHour(dir string) error {
	parent := filepath.Dir(dir)
	hidden := filepath.Join(parent, "."+filepath.Base(dir)+removingSuffix)
	if err := os.Rename(dir, hidden); err != nil {
		return err
	}
	if err := SyncDir(parent); err != nil {
		return err
	}
	if err := os.RemoveAll(hidden); err != nil {
		return err
	}
	// A directory still holding something is not removed.
	for d, i := parent, 0; i < 3; d, i = filepath.Dir(d), i+1 {
		if os.Remove(d) != nil {
			break
		}
	}
	return nil
}

// HourOfKey parses the hour partition of a key of a distributed target
// (slash-separated, relative to the root), as the sink names its objects:
// <topic>/year=YYYY/month=MM/day=DD/hour=HH/<name>. It returns the hour's
// key prefix (without the name) and its start; ok is false for any other
// key, such as the sink's state under _filesink/.
func HourOfKey(key string) (dir string, start time.Time, ok bool) {
	parts := strings.Split(key, "/")
	if len(parts) != 6 || parts[0] == "" || strings.HasPrefix(parts[0], "_") || strings.HasPrefix(parts[0], ".") || parts[5] == "" {
		return "", time.Time{}, false
	}
	var vs [4]int
	for i, lv := range hourLevels {
		v, found := strings.CutPrefix(parts[i+1], lv.key+"=")
		if !found {
			return "", time.Time{}, false
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lv.min || n > lv.max {
			return "", time.Time{}, false
		}
		vs[i] = n
	}
	start = time.Date(vs[0], time.Month(vs[1]), vs[2], vs[3], 0, 0, 0, time.UTC)
	if start.Day() != vs[2] {
		return "", time.Time{}, false
	}
	return strings.Join(parts[:5], "/"), start, true
}
