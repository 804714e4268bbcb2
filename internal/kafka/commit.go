package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// errGenerationLost means a batch's offsets could not be committed because
// this member no longer owns its partitions (its session expired while the
// coordinator was unreachable, or a rebalance fenced it). The batch is
// consumed again by the partitions' next owner, so the caller drops it and
// goes on polling.
var errGenerationLost = errors.New("group generation lost")

// Commit retry backoff: short at first (a coordinator moving to another
// broker answers again within seconds), capped so a broker that returns
// is noticed quickly.
const (
	commitBackoffMin = 250 * time.Millisecond
	commitBackoffMax = 5 * time.Second
)

// commitWithRetry commits the offsets of the records polled so far. A
// failure that a later attempt can cure (coordinator unreachable or
// moving, request timed out: anything but refused credentials) is retried with capped backoff, forever while
// run lives and for at most shutdownTimeout once it has ended. A lost
// generation returns errGenerationLost at once: retrying cannot succeed.
// Any other error is returned as it is.
func commitWithRetry(work, run context.Context, log *slog.Logger, records int, commit func(context.Context) error) error {
	backoff := commitBackoffMin
	var giveUp <-chan time.Time
	for attempt := 1; ; attempt++ {
		err := commit(work)
		if err == nil {
			if attempt > 1 {
				log.Info("offsets committed after retrying", "attempts", attempt)
			}
			return nil
		}
		if generationLost(err) {
			log.Warn("offsets not committed: this member lost its partitions; their next owner consumes the batch again (duplicates are dropped downstream by uuid)",
				"records", records, "err", err)
			return fmt.Errorf("%w: %w", errGenerationLost, err)
		}
		if refused(err) || work.Err() != nil {
			return fmt.Errorf("commit offsets: %w", err)
		}
		if run.Err() != nil && giveUp == nil {
			giveUp = time.After(shutdownTimeout)
		}
		log.Warn("commit offsets failed; retrying", "records", records, "attempt", attempt, "backoff", backoff, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-giveUp:
			t.Stop()
			return fmt.Errorf("commit offsets at shutdown (the batch will be consumed again): %w", err)
		case <-work.Done():
			t.Stop()
			return fmt.Errorf("commit offsets: %w", err)
		}
		backoff = min(backoff*2, commitBackoffMax)
	}
}

// generationLost reports whether err says this member's group generation is
// gone, so the commit can never succeed.
func generationLost(err error) bool {
	return errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) ||
		errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.FencedInstanceID) ||
		errors.Is(err, kerr.StaleMemberEpoch)
}

// refused reports whether err is an authorization or authentication
// failure, which waiting does not cure. Every other commit error (dial
// refused, connection reset, coordinator moving or not available, timeout)
// is worth retrying: the broker may come back.
func refused(err error) bool {
	return errors.Is(err, kerr.GroupAuthorizationFailed) || errors.Is(err, kerr.TopicAuthorizationFailed) ||
		errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed)
}
