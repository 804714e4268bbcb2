package purge

import (
	"context"
	"fmt"
	"strings"

	"github.com/eventlogging/eventlogging/internal/objstore"
	"github.com/eventlogging/eventlogging/internal/sink/filesink"
)

// purgeRemote is PurgeFiles on a distributed target (s3://, hdfs://): each
// old hour partition is purged exactly as a local one, on a local copy
// that the file sink's layout mirrors back (filesink.EditRemoteHours: the
// sanitised rewrites uploaded first, the SanitisedMarker last, then the
// files the purge removed deleted, _SUCCESS last). Every step is
// idempotent, so an interrupted run is finished by running again.
func purgeRemote(ctx context.Context, target string, fp *filePurge) error {
	store, err := objstore.Open(ctx, target)
	if err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	defer func() { _ = store.Close() }()
	return purgeStore(ctx, store, fp)
}

// purgeStore purges the hour partitions of an open store.
func purgeStore(ctx context.Context, store objstore.Store, fp *filePurge) error {
	err := filesink.EditRemoteHours(ctx, store, fp.cutoff, SanitisedMarker, func(dir, local string) (bool, error) {
		fp.rep.Partitions++
		if local == "" {
			return false, nil // sanitised by an earlier run
		}
		actions := len(fp.rep.Actions)
		if err := fp.partition(local); err != nil {
			return false, err
		}
		// Messages name the partition in the store, not the local copy.
		for i := actions; i < len(fp.rep.Actions); i++ {
			fp.rep.Actions[i] = strings.ReplaceAll(fp.rep.Actions[i], local, store.String()+"/"+dir)
		}
		return !fp.p.DryRun, nil
	})
	if err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	return nil
}
