package client

import (
	"encoding/json"
	"errors"
	"fmt"
)

var (
	// ErrQueueFull is returned by Log and Submit when Config.QueueSize events
	// are already waiting: the event is not queued.
	ErrQueueFull = errors.New("eventlogging client: queue full")
	// ErrClosed is returned by Log and Submit after Close, and is the Err
	// of events Close could not deliver before its context ended.
	ErrClosed = errors.New("eventlogging client: closed")
	// ErrNoSchema is returned by Submit for an event without a "$schema"
	// string.
	ErrNoSchema = errors.New("eventlogging client: event has no $schema")
	// ErrDeliveryTimeout is the Err of events still not delivered
	// Config.DeliveryTimeout after their first attempt; it wraps the last
	// error.
	ErrDeliveryTimeout = errors.New("eventlogging client: delivery timeout")
)

// HTTPError is an intake answer that is neither a per-event result nor
// retried: a 4xx such as 400 for a malformed body, 404 for a wrong URL, 413
// for a single event over the intake's size limit, 415.
type HTTPError struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Message is the intake's {"error": ...} text, or the start of the body.
	Message string
}

// Error returns the status and message.
func (e *HTTPError) Error() string {
	return fmt.Sprintf("eventlogging intake answered %d: %s", e.StatusCode, e.Message)
}

// Status is the fate of one event.
type Status string

// The statuses of a Result.
const (
	// StatusAccepted: the intake validated the event and stored it in its
	// topic (acknowledged by Kafka, or in the intake's spool).
	StatusAccepted Status = "accepted"
	// StatusInvalid: the intake refused the event (Code "validation" or
	// "processor") and recorded an EventError; sending it again will not help.
	StatusInvalid Status = "invalid"
	// StatusFailed: the client could not deliver the event; Err says why.
	StatusFailed Status = "failed"
)

// Violation is one reason an event is invalid: where (a JSON pointer into
// the event, e.g. "/responseStart") and why.
type Violation struct {
	Pointer string `json:"pointer"`
	Reason  string `json:"reason"`
}

// Result is the fate of one event, given to Config.OnResult.
type Result struct {
	// Schema and Revision of an event of Log; empty for Submit.
	Schema   string
	Revision int64
	// Stream of an event of Submit; empty for Log.
	Stream string
	// Status is accepted, invalid or failed.
	Status Status
	// UUID is the event's uuid (accepted) or its EventError's (invalid).
	UUID string
	// Topic is where an accepted event was written.
	Topic string
	// Code ("validation" or "processor") and Message describe an invalid event.
	Code    string
	Message string
	// Violations lists the validation errors of an invalid event.
	Violations []Violation
	// Err is why a failed event was not delivered: an *HTTPError,
	// ErrDeliveryTimeout or ErrClosed (wrapping the last network error).
	Err error
	// JSON is the event as sent (for Log, the capsule).
	JSON json.RawMessage
}

// Stats are the client's counters since New.
type Stats struct {
	// Enqueued counts events taken by Log and Submit.
	Enqueued uint64
	// QueueFull counts events refused with ErrQueueFull.
	QueueFull uint64
	// Pending is the number of events queued or being sent now.
	Pending uint64
	// Accepted, Invalid and Failed count events by their Result.
	Accepted, Invalid, Failed uint64
	// Requests counts POSTs sent, Retries those that repeated a failed one.
	Requests, Retries uint64
}
