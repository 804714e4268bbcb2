package purge

import (
	"time"
)

// TableRules gives what a table-format sink (the Iceberg sink's PurgeOld)
// needs to apply the policy: the cutoff (rows received before it, in whole
// hours, are old), and for a schema — or an Event Platform stream — name
// the function that sanitises an old row with its allow-list rule (the
// rule's fields kept, hashed ones hashed, the bookkeeping fields kept, as
// for files), or nil when it has no rule and its old rows are deleted.
//
// It does not import the sink, so the purge stays light; role.Purge
// adapts it to icebergsink.RetentionRules.
func (p Policy) TableRules() (cutoff time.Time, sanitiser func(name string) func(map[string]any) map[string]any, err error) {
	p, err = p.withDefaults()
	if err != nil {
		return time.Time{}, nil, err
	}
	h := p.hasher()
	return p.cutoff(), func(name string) func(map[string]any) map[string]any {
		rule, ok := p.Rules[name]
		if !ok {
			return nil
		}
		return func(row map[string]any) map[string]any { return sanitiseRecord(row, rule, h.Hash) }
	}, nil
}
