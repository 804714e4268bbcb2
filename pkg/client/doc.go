// Package client sends analytics events to an EventLogging intake from Go
// servers, in batches, with retries, without slowing the caller.
//
// Three lines:
//
//	c, err := client.New("http://intake.example.org:8080", client.Config{Wiki: "enwiki"})
//	defer c.Close(ctx)
//	err = c.Log(ctx, "SearchQuery", 5, map[string]any{"query": "kafka", "results": 42, "source": "fulltext"})
//
// [Client.Log] queues a legacy EventLogging event (the capsule {schema,
// revision, event, wiki, webHost}); [Client.Submit] queues an Event
// Platform event for a stream (it fills meta.stream and dt; the event names
// its schema in $schema). Both return at once: the event is encoded and put
// in a bounded queue, or refused with [ErrQueueFull] when the queue is full.
//
// One goroutine owned by the client sends the queue in batches to the
// intake's synchronous POST /v1/events, which validates every event before
// it answers. It starts with the first queued event (the constructor starts
// nothing) and ends in [Client.Close], which sends what is queued first.
// Network errors, 5xx answers, 429 and 503 (honouring Retry-After) are
// retried with capped exponential backoff until Config.DeliveryTimeout; a
// 413 splits the batch. The fate of every event — accepted with its uuid and
// topic, invalid with the intake's code, message and violations (JSON
// pointer + reason), or failed with an error — goes to Config.OnResult and
// is counted in [Client.Stats].
//
// Delivery is at least once: when an answer is lost after the intake stored
// a batch, the batch is sent again, and the copies get different uuids.
package client
