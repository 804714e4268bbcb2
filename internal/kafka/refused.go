package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// IsPermanent reports whether err, a produce error, is the record's own
// for good: Kafka refuses this record and would refuse it again, while it
// takes others (too large, invalid, a topic whose name it refuses).
// Anything else (Kafka unreachable, a timeout, a leader moving, missing
// rights an operator can grant) is worth retrying.
func IsPermanent(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) ||
		errors.Is(err, kerr.RecordListTooLarge) ||
		errors.Is(err, kerr.InvalidRecord) ||
		errors.Is(err, kerr.InvalidTopicException) ||
		errors.Is(err, errTopicRefused)
}

// errTopicRefused marks the records of a topic Kafka refused to create.
var errTopicRefused = errors.New("kafka refused to create the topic")

// TopicsRefusedError is Topics.Ensure's error when Kafka refuses to create
// some of the topics for good (their names); the others were created.
type TopicsRefusedError struct {
	// Topics maps each refused topic to Kafka's answer.
	Topics map[string]error
}

func (e *TopicsRefusedError) Error() string {
	for t, err := range e.Topics {
		if len(e.Topics) == 1 {
			return fmt.Sprintf("create topic %s: %v", t, err)
		}
		return fmt.Sprintf("create %d topics, among them %s: %v", len(e.Topics), t, err)
	}
	return "create topics: refused"
}

// refusedTopic returns the error of a record to topic when refused holds
// that topic, or nil.
func refusedTopic(refused *TopicsRefusedError, topic string) error {
	if refused == nil {
		return nil
	}
	if err, ok := refused.Topics[topic]; ok {
		return fmt.Errorf("%w %s: %w", errTopicRefused, topic, err)
	}
	return nil
}

// Outcome is the result of producing several records: nil entries were
// acknowledged. A nil Outcome means every record was.
type Outcome []error

// Err returns the first error that is not permanent (the batch should be
// produced again later), or nil when every record was acknowledged or
// refused for good.
func (o Outcome) Err() error {
	for _, err := range o {
		if err != nil && !IsPermanent(err) {
			return err
		}
	}
	return nil
}

// Refused returns the indexes of the records Kafka refused for good.
func (o Outcome) Refused() []int {
	var idx []int
	for i, err := range o {
		if err != nil && IsPermanent(err) {
			idx = append(idx, i)
		}
	}
	return idx
}

// produceEach produces every message of batches (numbered in order across
// them) and waits for every acknowledgement. Kafka refuses a whole batch
// for one record of it (MESSAGE_TOO_LARGE of a batch, INVALID_RECORD):
// records refused for good are produced once more, one at a time, so that
// only the records refused for themselves keep a permanent error, and
// their neighbours are acknowledged. (An isolated record can still share
// a batch with another call's records, and be refused with them, if that
// call's bad record is in flight at the same moment: rare, since the
// client refuses a record over its batch limit before batching it.) ensureErr is
// the error of creating the records' topics: records to a topic it
// refused are not produced.
func produceEach(ctx context.Context, cl *kgo.Client, batches [][]Message, ensureErr error) Outcome {
	n := 0
	for _, b := range batches {
		n += len(b)
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		out    Outcome
		failed int // records refused for good
	)
	// The records are allocated together, and one callback serves them
	// all: two allocations a call where there were two a message.
	recs := make([]kgo.Record, n)
	var index map[*kgo.Record]int // built at the first failure
	set := func(i int, r *kgo.Record, err error) {
		mu.Lock()
		if out == nil {
			out = make(Outcome, n)
		}
		if r != nil {
			if index == nil {
				index = make(map[*kgo.Record]int, n)
				for j := range recs {
					index[&recs[j]] = j
				}
			}
			i = index[r]
		}
		out[i] = err
		if IsPermanent(err) {
			failed++
		}
		mu.Unlock()
	}
	done := func(r *kgo.Record, err error) {
		if err != nil {
			set(0, r, fmt.Errorf("produce to %s: %w", r.Topic, err))
		}
		wg.Done()
	}
	var refusedTopics *TopicsRefusedError
	if ensureErr != nil {
		errors.As(ensureErr, &refusedTopics)
	}
	i := 0
	for _, b := range batches {
		for _, m := range b {
			r := &recs[i]
			setRecord(r, m)
			i++
			if err := refusedTopic(refusedTopics, m.Topic); err != nil {
				set(i-1, nil, err)
				continue
			}
			wg.Add(1)
			cl.Produce(ctx, r, done)
		}
	}
	wg.Wait()
	if out == nil {
		return nil
	}
	if failed > 0 {
		// Isolate: Kafka refuses a whole batch for one record of it,
		// and the producer fails every record of that batch — records
		// of another call on the same client too. So each record
		// refused, alone, once more: only the record at fault is
		// refused again (immediately, when the client itself finds it
		// too large). One attempt each: no loop retries a permanent
		// error.
		for i, err := range out {
			if err == nil || !IsPermanent(err) || errors.Is(err, errTopicRefused) {
				continue
			}
			r := kgo.Record{Topic: recs[i].Topic, Key: recs[i].Key, Value: recs[i].Value, Headers: recs[i].Headers}
			out[i] = cl.ProduceSync(ctx, &r).FirstErr()
			if out[i] != nil {
				out[i] = fmt.Errorf("produce to %s: %w", r.Topic, out[i])
			}
		}
	}
	for _, err := range out {
		if err != nil {
			return out
		}
	}
	return nil
}

// First returns the first error of o, nil when every record was
// acknowledged.
func (o Outcome) First() error {
	for _, err := range o {
		if err != nil {
			return err
		}
	}
	return nil
}

// OnlyRefused returns o with only the permanent errors kept (nil when
// there are none).
func (o Outcome) OnlyRefused() Outcome {
	var out Outcome
	for i, err := range o {
		if err != nil && IsPermanent(err) {
			if out == nil {
				out = make(Outcome, len(o))
			}
			out[i] = err
		}
	}
	return out
}
