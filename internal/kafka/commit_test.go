package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// scriptedCommit fails with errs in turn, then succeeds.
func scriptedCommit(errs ...error) (func(context.Context) error, *int) {
	calls := 0
	return func(context.Context) error {
		calls++
		if calls <= len(errs) {
			return errs[calls-1]
		}
		return nil
	}, &calls
}

func TestCommitWithRetry(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	dial := fmt.Errorf("unable to dial: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errors.New("connection refused"))})
	cases := []struct {
		name      string
		errs      []error
		wantCalls int
		want      error // nil: success
	}{
		{"first try", nil, 1, nil},
		{"coordinator unreachable, then back", []error{dial, dial, kerr.NotCoordinator, kerr.CoordinatorNotAvailable}, 5, nil},
		{"session expired during the outage", []error{dial, kerr.UnknownMemberID}, 2, errGenerationLost},
		{"fenced by a rebalance", []error{kerr.IllegalGeneration}, 1, errGenerationLost},
		{"rebalance in progress", []error{kerr.RebalanceInProgress}, 1, errGenerationLost},
		{"not authorised", []error{kerr.GroupAuthorizationFailed}, 1, kerr.GroupAuthorizationFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			commit, calls := scriptedCommit(c.errs...)
			err := commitWithRetry(t.Context(), t.Context(), log, 10, commit)
			if *calls != c.wantCalls {
				t.Errorf("%d commit attempts, want %d", *calls, c.wantCalls)
			}
			switch {
			case c.want == nil && err != nil:
				t.Errorf("err = %v, want success", err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
}

// A commit that keeps failing ends when the work context does, with the
// last error, instead of spinning.
func TestCommitWithRetryStopsWithWork(t *testing.T) {
	work, cancel := context.WithCancel(t.Context())
	calls := 0
	commit := func(context.Context) error {
		calls++
		if calls == 3 {
			cancel()
		}
		return kerr.CoordinatorNotAvailable
	}
	err := commitWithRetry(work, t.Context(), slog.New(slog.DiscardHandler), 1, commit)
	if !errors.Is(err, kerr.CoordinatorNotAvailable) || calls != 3 {
		t.Fatalf("err = %v after %d calls, want COORDINATOR_NOT_AVAILABLE after 3", err, calls)
	}
}
